"""Charges a rail numbers itself (Efí's Charges API, issue 38): live cards paid with the payer's browser token, the
rail's answers and notifications applied to them, and their reconciliation.

A live card is never charged twice and never lost (ADR 0085). The rail's charge is created (`card_charge_open`)
and its id committed on ours before anything can be paid; ours is PROCESSING, committed, before `/pay` is asked,
so a second request, a second form post or a retried task finds it PROCESSING and never asks again. No transaction
is open during either call. An answer lost to a timeout or a 5xx leaves it PROCESSING: reading the rail's charge
(`charge_get`, by reconciliation) or its notification history decides it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from core.errors import InvalidState, NotFound
from integrations.idempotency import effect_record
from payments import rails
from payments.disputes import services as disputes
from payments.models import (
    Dispute,
    DisputeKind,
    Payin,
    PayinStatus,
    PaymentMethod,
    RailNotification,
    Refund,
    RefundStatus,
)
from payments.payins import refunds as payin_refunds
from payments.payins.errors import RailUnavailable
from payments.payins.transitions import (
    FAILURE_MESSAGES,
    payin_event_record,
    payin_locked,
    payin_mark_paid,
    payin_transition,
)
from payments.rails.base import CardResult, ChargeEvent, ChargeState, RailError, RailRefused

logger = logging.getLogger(__name__)

OPEN = (PayinStatus.PENDING, PayinStatus.PROCESSING)


def notification_url(rail: rails.Rail) -> str:
    """Where the rail POSTs its notification tokens: our public route, guarded by the secret in its path."""
    return f"{settings.PUBLIC_BASE_URL}/rails/{rail.name}/charges/notify/{settings.EFI_WEBHOOK_SECRET}"


def live_card_card(*, installments: int, result: CardResult | None = None) -> dict:
    """`card` of a live card charge: the rail saw the number, we never did. Brand and last four come from the rail's
    mask once it paid; installments and their value as the rail answered them."""
    mask = result.card_mask if result is not None else ""
    last4 = mask[-4:] if len(mask) >= 4 and mask[-4:].isdigit() else None
    return {"brand": None, "bin": None, "last4": last4, "holderName": None, "expirationMonth": None,
            "expirationYear": None, "installments": (result.installments if result and result.installments
                                                     else installments),
            "installmentValue": result.installment_value if result and result.installment_value else None,
            "retryable": result.retryable if result is not None and result.status == "FAILED" else None,
            "token": None}


# --- Cards -----------------------------------------------------------------------------------------------------------
def live_card_create(payin: Payin, *, card: dict | None, rail: rails.Rail) -> Payin:
    """A live card charge on a rail that takes only its browser token. Without a token it is PENDING: the payer pays
    on the hosted page (`paymentUrl`). With one, the rail's charge is created first (a failure there writes nothing:
    502), then ours is committed PROCESSING with the rail's id, then paid (`_card_pay`)."""
    installments = card["installments"] if card else 1
    payin.card = live_card_card(installments=installments)
    if card is None:
        with transaction.atomic():
            payin.save(force_insert=True)
            effect_record()
            payin_event_record(payin, "payin.created", previous_status=None)
        return payin
    payin.rail_charge_id = _charge_open(payin, rail)
    payin.status = PayinStatus.PROCESSING
    with transaction.atomic():
        payin.save(force_insert=True)
        effect_record()  # from here on a retry of the request is answered, never run again
    return _card_pay(payin, rail=rail, payment_token=card["token"], installments=installments,
                     billing_address=payin.customer["address"], previous_status=None)


def live_card_pay(*, payin_id, payment_token: str, installments: int, billing_address: dict) -> Payin:
    """The hosted page's card form: a PENDING live card charge paid with the token the payer's browser made. A charge
    already being paid (a second submit, another tab) is refused with 409, never paid twice."""
    payin = Payin.objects.select_related("merchant").filter(
        pk=payin_id, payment_method=PaymentMethod.CREDIT_CARD, livemode=True).first()
    if payin is None:
        raise NotFound("No such charge")
    if payin.status != PayinStatus.PENDING:
        raise InvalidState(gettext("This charge is already being paid"))
    rail = rails.for_mode(True)
    if payin.rail_charge_id is None:
        charge_ref = _charge_open(payin, rail)
        # Two submits racing may both open one: the first stored wins; the other is a charge at the rail that
        # nothing will ever pay (Efí's `new` charges carry no money).
        Payin.objects.filter(pk=payin.pk, rail_charge_id__isnull=True).update(rail_charge_id=charge_ref)
    with transaction.atomic():
        payin = payin_locked(payin_id)
        if payin.status != PayinStatus.PENDING:
            raise InvalidState(gettext("This charge is already being paid"))
        customer = {**payin.customer, "address": billing_address}
        payin_transition(payin, to=PayinStatus.PROCESSING, customer=customer,
                         card=live_card_card(installments=installments))
    return _card_pay(payin, rail=rail, payment_token=payment_token, installments=installments,
                     billing_address=billing_address, previous_status=PayinStatus.PROCESSING)


def _charge_open(payin: Payin, rail: rails.Rail) -> int:
    try:
        return int(rail.card_charge_open(key=str(payin.id), amount=payin.amount, items=payin.items,
                                         description=payin.description, notification_url=notification_url(rail)))
    except RailError as exc:  # nothing can have been paid: nothing is written, the request may be sent again
        raise RailUnavailable() from exc


def _card_pay(payin: Payin, *, rail: rails.Rail, payment_token: str, installments: int, billing_address: dict,
              previous_status: str | None) -> Payin:
    """Ask the rail to pay a PROCESSING charge (committed as such: this is the only call for it) and apply its
    answer. No answer leaves it PROCESSING, announced, for reconciliation."""
    try:
        result = rail.card_charge_pay(charge_ref=str(payin.rail_charge_id), payment_token=payment_token,
                                      installments=installments, customer=payin.customer,
                                      billing_address=billing_address)
    except RailRefused as refusal:
        # Efí refused the request itself (a token it does not know or already used, data it will not take): the
        # card was not charged.
        problem = refusal.problem.get("error_description")
        result = CardResult(status="FAILED", failure_code="processing_error",
                            failure_message=(problem if isinstance(problem, str) else "")[:255])
    except RailError:
        logger.warning("payments.card_rail_no_answer", extra={"payin_id": str(payin.id), "rail": rail.name})
        result = CardResult(status="PENDING")
    with transaction.atomic():
        locked = payin_locked(payin.pk)
        applied = card_result_apply(locked, result, previous_status=previous_status, installments=installments)
        if applied is None and previous_status is None and locked.status == PayinStatus.PROCESSING:
            payin_event_record(locked, "payin.created", previous_status=None)  # PROCESSING, announced
        return applied or locked


def card_result_apply(payin: Payin, result: CardResult, *, previous_status: str | None = "",
                      installments: int | None = None) -> Payin | None:
    """The rail's word on a locked live card charge still open: PAID or FAILED; None when it is not final (or the
    charge is no longer open: a repeated answer)."""
    if payin.status not in OPEN or result.status not in ("PAID", "FAILED"):
        return None
    card = live_card_card(installments=installments or (payin.card or {}).get("installments") or 1, result=result)
    if result.status == "PAID":
        return payin_mark_paid(payin, previous_status=previous_status, card=card)
    code = result.failure_code or "processing_error"
    message = result.failure_message or FAILURE_MESSAGES.get(code, FAILURE_MESSAGES["processing_error"])
    return payin_transition(payin, to=PayinStatus.FAILED, previous_status=previous_status, failure_code=code,
                            failure_message=message[:255], card=card)


# --- What the rail tells: notification histories and reads of a charge ------------------------------------------------
def payment_id(charge_ref: str, entry_id: int | None = None) -> str:
    """Our name for a payment of a rail charge: its first payment is the charge's, whoever tells it (a notification
    entry or a read of the charge); a later one is named by its history entry."""
    return f"efi-{charge_ref}-paid" if entry_id is None else f"efi-{charge_ref}-paid-{entry_id}"


def charge_events_apply(*, rail: rails.Rail, token: str, events: list[ChargeEvent]) -> int:
    """Apply every entry of a notification token's history not applied before (each entry once, by its id, oldest
    first), to the charge it names. Rail calls (the reason of a refusal) are made before any transaction."""
    applied = 0
    by_charge: dict[str, list[ChargeEvent]] = {}
    for event in events:
        by_charge.setdefault(event.charge_ref, []).append(event)
    for charge_ref, charge_events in by_charge.items():
        payin = Payin.objects.filter(rail_charge_id=int(charge_ref), livemode=True).only(
            "pk", "payment_method", "rail_notification_token").first()
        if payin is None:
            logger.warning("payments.rail_charge_unknown", extra={"rail": rail.name, "charge_ref": charge_ref})
            continue
        if token and payin.rail_notification_token != token:
            Payin.objects.filter(pk=payin.pk).update(rail_notification_token=token[:64])
        new = [event for event in charge_events if not RailNotification.objects.filter(
            rail=rail.name, dedupe_key=_dedupe_key(event)).exclude(processed_at=None).exists()]
        read = None  # a card decided: the rail's charge says how (installments, mask, a refusal's reason)
        if payin.payment_method == PaymentMethod.CREDIT_CARD and any(e.status in ("PAID", "FAILED") for e in new):
            state = _charge_read(rail, charge_ref)
            read = state.card if state is not None else None
        paid_entries = [event.entry_id for event in charge_events if event.status == "PAID"]
        for event in new:
            applied += _event_record(rail, payin, event, paid_entries=paid_entries, read=read)
    return applied


def _dedupe_key(event: ChargeEvent) -> str:
    return f"charge-{event.charge_ref}-{event.entry_id}"


def _charge_read(rail: rails.Rail, charge_ref: str) -> ChargeState | None:
    try:
        return rail.charge_get(charge_ref=charge_ref)
    except RailError:
        return None


def _event_record(rail: rails.Rail, payin: Payin, event: ChargeEvent, *, paid_entries: list[int],
                  read: CardResult | None) -> int:
    """One history entry, stored (raw, as we read it) and applied in one transaction; 1 when it was new."""
    body = json.dumps(asdict(event), separators=(",", ":"))
    with transaction.atomic():
        row, _ = RailNotification.objects.get_or_create(rail=rail.name, dedupe_key=_dedupe_key(event),
                                                        defaults={"body": body})
        row = RailNotification.objects.select_for_update().get(pk=row.pk)
        if row.processed_at is not None:
            return 0
        if payin.payment_method == PaymentMethod.CREDIT_CARD:
            outcome = _card_event_apply(payin.pk, event, read=read)
        else:
            outcome = _boleto_event_apply(payin.pk, event, first_payment=bool(paid_entries)
                                          and event.entry_id == paid_entries[0])
        row.outcome = outcome[:255]
        row.processed_at = timezone.now()
        row.save(update_fields=["outcome", "processed_at"])
    logger.info("payments.rail_charge_event", extra={"payin_id": str(payin.pk), "entry": event.entry_id,
                                                      "status": event.rail_status, "outcome": outcome[:100]})
    return 1


def _card_event_apply(payin_id, event: ChargeEvent, *, read: CardResult | None) -> str:
    payin = payin_locked(payin_id)
    if event.status == "PAID":
        if payin.status in OPEN:
            card = payin.card or {}
            result = read if read is not None and read.status == "PAID" else CardResult(
                status="PAID", installments=card.get("installments") or 0,
                installment_value=card.get("installmentValue") or 0)
            card_result_apply(payin, result)
            return "paid"
        if event.previous == "contested":
            return _chargeback_decided(payin, won=True)
        return f"ignored: {payin.status}"
    if event.status == "FAILED":
        result = read if read is not None and read.status == "FAILED" else CardResult(
            status="FAILED", failure_code="card_declined")
        return "failed" if card_result_apply(payin, result) is not None else f"ignored: {payin.status}"
    if event.status == "REFUNDED":
        if event.previous == "contested":
            return _chargeback_decided(payin, won=False)
        return _card_refund_confirmed(payin, amount=event.value)
    if event.status == "CONTESTED":
        try:
            dispute, created = disputes.dispute_open(payin_id=payin.pk, kind=DisputeKind.CHARGEBACK,
                                                     rail_reference=f"efi-charge-{event.charge_ref}")
        except InvalidState as exc:
            return f"ignored: {exc.message}"
        return f"dispute opened {dispute.pk}" if created else f"ignored: already disputed ({dispute.pk})"
    if event.status == "SETTLED":
        return "settled by hand at the rail: no money moved"
    return f"noted: {event.rail_status}"


def _card_refund_confirmed(payin: Payin, *, amount: int | None) -> str:
    """The rail refunded money of this card: the oldest PENDING refund of that amount (any, when it names none)."""
    pending = Refund.objects.filter(payin=payin, status=RefundStatus.PENDING).order_by("created_at")
    if amount is not None:
        pending = pending.filter(amount=amount)
    refund = pending.first()
    if refund is None:
        logger.error("payments.rail_refund_not_ours", extra={"payin_id": str(payin.pk), "amount": amount})
        return "refunded at the rail with no refund asked here: staff must look"
    payin_refunds.refund_resolve(refund_id=refund.pk, status=RefundStatus.SUCCEEDED)
    return f"refund {refund.pk} succeeded"


def _chargeback_decided(payin: Payin, *, won: bool) -> str:
    dispute = Dispute.objects.filter(payin=payin, kind=DisputeKind.CHARGEBACK).first()
    if dispute is None or dispute.status not in disputes.OPEN:
        return "ignored: no open chargeback"
    disputes.dispute_decide(dispute_id=dispute.pk, won=won)
    return f"chargeback {'won' if won else 'lost'}"


def _boleto_event_apply(payin_id, event: ChargeEvent, *, first_payment: bool) -> str:
    payin = payin_locked(payin_id)
    if event.status == "PAID":
        name = payment_id(event.charge_ref) if first_payment else payment_id(event.charge_ref, event.entry_id)
        paid = payin_services().payin_pay(payin_id=payin.pk, amount=event.value or payin.amount,
                                          end_to_end_id=name, registered=True)
        return "paid" if paid is not None else "unmatched or repeated"
    if event.status in ("EXPIRED", "CANCELED") and payin.status == PayinStatus.PENDING:
        payin_transition(payin, to=event.status)
        return event.status.lower()
    if event.status == "SETTLED":
        # Marked paid by hand at the bank: no money reached us through it; the charge stays as it is.
        logger.warning("payments.boleto_settled_by_hand", extra={"payin_id": str(payin.pk)})
        return "settled by hand at the rail: no money moved"
    return f"noted: {event.rail_status}"


def payin_services():
    """payments.payins.services, which imports this module."""
    from payments.payins import services

    return services


# --- Reconciliation --------------------------------------------------------------------------------------------------
def rail_charges_reconcile(rail: rails.Rail, *, older_than, limit: int = 100) -> int:
    """Live cards still PROCESSING and bolix still PENDING at the rail, oldest first: the charge read from the rail
    (its history, when a notification gave us its token; else `GET /charge/:id`) and applied. How many changed."""
    open_charges = (Payin.objects.filter(livemode=True, status__in=OPEN, rail_charge_id__isnull=False,
                                         created_at__lte=timezone.now() - older_than)
                    .order_by("created_at").only("pk", "rail_charge_id", "rail_notification_token",
                                                 "payment_method")[:limit])
    refunding = (Payin.objects.filter(livemode=True, rail_charge_id__isnull=False,
                                      refunds__status=RefundStatus.PENDING,
                                      refunds__created_at__lte=timezone.now() - older_than)
                 .distinct().only("pk", "rail_charge_id", "rail_notification_token", "payment_method")[:limit])
    changed = 0
    for payin in [*open_charges, *refunding]:
        try:
            changed += rail_charge_reconcile(rail, payin)
        except RailError:
            logger.warning("payments.rail_charge_reconcile_rail_error", extra={"payin_id": str(payin.pk)})
    return changed


def rail_charge_reconcile(rail: rails.Rail, payin: Payin) -> int:
    charge_ref = str(payin.rail_charge_id)
    if payin.rail_notification_token:
        return charge_events_apply(rail=rail, token=payin.rail_notification_token,
                                   events=rail.charge_history(token=payin.rail_notification_token))
    state = rail.charge_get(charge_ref=charge_ref)
    if state is None:
        logger.error("payments.rail_charge_missing", extra={"payin_id": str(payin.pk), "charge_ref": charge_ref})
        return 0
    with transaction.atomic():
        locked = payin_locked(payin.pk)
        if payin.payment_method == PaymentMethod.CREDIT_CARD:
            if state.status == "REFUNDED":
                pending = list(Refund.objects.filter(payin=locked, status=RefundStatus.PENDING)
                               .values_list("pk", flat=True))
                for refund_id in pending:
                    payin_refunds.refund_resolve(refund_id=refund_id, status=RefundStatus.SUCCEEDED)
                return len(pending)
            return int(state.card is not None and card_result_apply(locked, state.card) is not None)
    if state.status == "PAID":
        # No history read: the charge's total is what we know it was paid (the notification, when it comes, is the
        # same first payment and changes nothing).
        return int(payin_services().payin_pay(payin_id=payin.pk, amount=state.total,
                                              end_to_end_id=payment_id(charge_ref), registered=True) is not None)
    if state.status in ("EXPIRED", "CANCELED"):
        with transaction.atomic():
            locked = payin_locked(payin.pk)
            if locked.status == PayinStatus.PENDING:
                payin_transition(locked, to=state.status)
                return 1
    return 0
