"""Charges a rail numbers itself (Efí's Charges API, issue 38): live cards paid with the payer's browser token, the
rail's answers and notifications applied to them, and their reconciliation.

A live card is never charged twice and never lost (ADR 0085). The rail's charge is created (`card_charge_open`)
and its id committed on ours before anything can be paid; ours is PROCESSING, committed, before `/pay` is asked,
so a second request, a second form post or a retried task finds it PROCESSING and never asks again. No transaction
is open during either call. An answer lost to a timeout or a 5xx leaves it PROCESSING: reading the rail's charge
(`charge_get`, by reconciliation) or its notification history decides it.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext

from core.errors import InvalidState, NotFound
from integrations.idempotency import effect_record
from payments import rails
from payments.models import Payin, PayinStatus, PaymentMethod
from payments.payins.errors import RailUnavailable
from payments.payins.transitions import (
    FAILURE_MESSAGES,
    payin_event_record,
    payin_locked,
    payin_mark_paid,
    payin_transition,
)
from payments.rails.base import CardResult, RailError, RailRefused

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
