"""Refunds of charges (SPEC §3.6): created against the balance, sent to the rail, resolved when the rail answers, and
reconciled when it did not. No rail call runs inside a database transaction."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from accounts.models import Merchant
from core.errors import DomainError, InvalidState, ValidationFailed
from core.tasks import task_enqueue
from integrations.idempotency import effect_record
from payments import rails
from payments.disputes.selectors import payin_under_dispute
from payments.ledger import services as ledger
from payments.ledger.services import InsufficientBalance, Leg
from payments.models import (
    AccountKind,
    LineType,
    Payin,
    PayinStatus,
    PaymentMethod,
    Refund,
    RefundStatus,
)
from payments.payins.serializers import refund_serialize
from payments.payins.transitions import BATCH, TRANSITIONS, payin_locked, payin_refunded_amount_add, payin_transition
from payments.rails.base import RailError, RailRefused, RailTimeout
from webhooks.services import event_record

logger = logging.getLogger(__name__)


class RefundNotSupported(DomainError):
    status_code = 409
    type = "conflict"
    code = "refund_not_supported"
    message = gettext_lazy("Boleto charges cannot be refunded")


# --- Refunds ---------------------------------------------------------------------------------------------------------
def refund_create(*, merchant: Merchant, livemode: bool, payin_id, amount: int | None, reason: str) -> Refund:
    """Refund part or the rest of a paid charge from the merchant's available balance. Call it outside any
    transaction: the refund is committed PENDING with its money held in flight, the rail is asked under the refund's
    id as its idempotency key, and its answer is recorded by `refund_resolve`. Card refunds succeed at once; Pix
    refunds when the rail confirms (a reconcile task asks it then). A rail that does not answer leaves the refund
    PENDING for `refunds_reconcile`, which asks under the same key."""
    refund, payin = _refund_hold(merchant=merchant, livemode=livemode, payin_id=payin_id, amount=amount,
                                 reason=reason)
    rail = rails.for_mode(livemode)
    if payin.rail_charge_id is not None and rail.card_tokens_only:
        return _rail_card_refund(refund, payin, rail)
    try:
        answer = rails.for_mode(livemode).refund_create(
            key=str(refund.id), livemode=livemode, payin_key=str(payin.id), payment_method=payin.payment_method,
            amount=refund.amount, end_to_end_id=payin.pix_end_to_end_id)
    except RailError as exc:
        # The rail may have refunded under this refund's id: it stays PENDING, its money in flight, and the
        # reconciliation job asks. Refunding again under a new id could refund twice.
        logger.warning("payments.refund_rail_no_answer",
                       extra={"refund_id": str(refund.id), "timeout": isinstance(exc, RailTimeout)})
        return refund
    if answer.status in (RefundStatus.SUCCEEDED, RefundStatus.FAILED):
        resolved = refund_resolve(refund_id=refund.pk, status=answer.status,
                                  failure_code=answer.failure_code or "rail_error")
        return resolved or Refund.objects.get(pk=refund.pk)  # None: a notification recorded the answer first
    refund_id = str(refund.id)
    # Ask again when the rail should have settled it; the periodic rail_reconcile job is the net. robust: with the
    # broker down the refund is committed all the same and must be answered (a client seeing a 500 would refund
    # again). On commit, which outside a transaction is at once.
    transaction.on_commit(lambda: task_enqueue("payments.payins.tasks.refund_reconcile", refund_id=refund_id,
                                               countdown=max(1, settings.SIMULATOR_AUTO_CONFIRM_SECONDS)),
                          robust=True)
    return refund


def _rail_card_refund(refund: Refund, payin: Payin, rail: rails.Rail) -> Refund:
    """A live card's refund at the rail that charged it (Efí's `/charge/card/:id/refund`, partial allowed). Taken by
    the rail, it stays PENDING until the rail confirms it (its notification history, or reconciliation reading the
    charge); refused, the money goes back to the balance at once; no answer, reconciliation reads the charge."""
    try:
        rail.card_refund(charge_ref=str(payin.rail_charge_id), amount=refund.amount)
    except RailRefused:
        logger.warning("payments.refund_refused_by_rail", extra={"refund_id": str(refund.id)})
        return refund_resolve(refund_id=refund.pk, status=RefundStatus.FAILED,
                              failure_code="rejected_by_bank") or Refund.objects.get(pk=refund.pk)
    except RailError as exc:
        logger.warning("payments.refund_rail_no_answer",
                       extra={"refund_id": str(refund.id), "timeout": isinstance(exc, RailTimeout)})
    return Refund.objects.get(pk=refund.pk)  # a notification may have confirmed it meanwhile


def _refund_hold(*, merchant: Merchant, livemode: bool, payin_id, amount: int | None,
                 reason: str) -> tuple[Refund, Payin]:
    """The refund, PENDING, and its money moved from `available` to in flight: one transaction, committed before the
    rail hears of it. Locks the charge, then the merchant's ledger accounts."""
    with transaction.atomic():
        payin = payin_locked(payin_id, merchant=merchant, livemode=livemode)
        if payin.payment_method == PaymentMethod.BOLETO:
            raise RefundNotSupported()
        if payin.status not in (PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED):
            raise InvalidState(gettext("A %(status)s charge cannot be refunded") % {"status": payin.status})
        if payin_under_dispute(payin=payin):  # the disputed amount is held: refunding it too would pay twice
            raise InvalidState(gettext("A charge under dispute cannot be refunded"))
        left = payin.amount - payin.refunded_amount
        if amount is None:
            amount = left
        if amount < 1 or amount > left:
            raise ValidationFailed(param="amount", details=[{
                "param": "amount", "code": "refund_exceeds_remaining",
                "message": gettext("At most %(left)s cents of this charge can still be refunded.") % {"left": left}}])
        accounts = ledger.lock(merchant=payin.merchant, livemode=livemode)
        if accounts[AccountKind.AVAILABLE].balance < amount:
            raise InsufficientBalance()
        now = timezone.now()
        refund = Refund.objects.create(payin=payin, merchant=payin.merchant, livemode=livemode, amount=amount,
                                       reason=reason, created_at=now, updated_at=now)
        effect_record()
        payin_refunded_amount_add(payin, amount, now=now)
        ledger.post(merchant=payin.merchant, livemode=livemode, object_type="refund", object_id=str(refund.id),
                    reference_id=payin.reference_id, description=f"Refund of charge {payin.id}", accounts=accounts,
                    legs=[Leg(AccountKind.AVAILABLE, -amount, LineType.REFUND),
                          Leg(AccountKind.PAYOUTS_IN_FLIGHT, amount, LineType.REFUND)])
    return refund, payin


def refund_resolve(*, refund_id, status: str, failure_code: str = "") -> Refund | None:
    """The rail's answer about a PENDING refund; a repeated answer is a no-op (None)."""
    with transaction.atomic():
        refund = Refund.objects.filter(pk=refund_id).only("payin_id").first()
        if refund is None:
            return None
        payin = payin_locked(refund.payin_id)
        refund = Refund.objects.select_for_update().get(pk=refund_id)
        if refund.status != RefundStatus.PENDING or status not in (RefundStatus.SUCCEEDED, RefundStatus.FAILED):
            return None
        effect_record()
        if status == RefundStatus.SUCCEEDED:
            _refund_succeeded(refund, payin)
        else:
            _refund_failed(refund, payin, failure_code=failure_code or "rail_error")
        return refund


def _refund_set(refund: Refund, status: str, **changes) -> None:
    now = timezone.now()
    Refund.objects.filter(pk=refund.pk, status=RefundStatus.PENDING).update(status=status, updated_at=now, **changes)
    refund.status = status
    refund.updated_at = now
    for name, value in changes.items():
        setattr(refund, name, value)


def _refund_succeeded(refund: Refund, payin: Payin) -> None:
    _refund_set(refund, RefundStatus.SUCCEEDED)
    ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="refund", object_id=str(refund.id),
                reference_id=payin.reference_id, description="Refund confirmed by the rail", legs=[
                    Leg(AccountKind.PAYOUTS_IN_FLIGHT, -refund.amount, LineType.REFUND),
                    Leg(AccountKind.RAIL_OUT, refund.amount, LineType.REFUND),
                ])
    event_record(merchant=payin.merchant, livemode=payin.livemode, type="refund.succeeded",
                 obj=refund_serialize(refund), previous_status=RefundStatus.PENDING,
                 webhook_url=payin.webhook_url or None)
    refunded = Refund.objects.filter(payin=payin, status=RefundStatus.SUCCEEDED).aggregate(t=Sum("amount"))["t"]
    to = PayinStatus.REFUNDED if refunded == payin.amount else PayinStatus.PARTIALLY_REFUNDED
    if payin.status in TRANSITIONS[to]:  # a charge charged back meanwhile keeps that status
        payin_transition(payin, to=to)


def _refund_failed(refund: Refund, payin: Payin, *, failure_code: str) -> None:
    _refund_set(refund, RefundStatus.FAILED, failure_code=failure_code)
    now = timezone.now()
    payin_refunded_amount_add(payin, -refund.amount, now=now)
    payin.refunded_amount -= refund.amount
    payin.updated_at = now
    ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="refund", object_id=str(refund.id),
                reference_id=payin.reference_id, description="Refund failed: money returned to the balance", legs=[
                    Leg(AccountKind.PAYOUTS_IN_FLIGHT, -refund.amount, LineType.REFUND),
                    Leg(AccountKind.AVAILABLE, refund.amount, LineType.REFUND),
                ])
    event_record(merchant=payin.merchant, livemode=payin.livemode, type="refund.failed",
                 obj=refund_serialize(refund), previous_status=RefundStatus.PENDING,
                 webhook_url=payin.webhook_url or None)


def refunds_reconcile(*, older_than: timedelta = timedelta(seconds=0), refund_ids: list | None = None) -> int:
    """Ask the rail about PENDING refunds (outside any transaction) and record its answers."""
    # A refund of a rail's own charge (Efí's cards) is settled by reading the charge (rail_charges_reconcile).
    queryset = Refund.objects.filter(status=RefundStatus.PENDING, created_at__lte=timezone.now() - older_than,
                                     payin__rail_charge_id__isnull=True)
    if refund_ids is not None:
        queryset = queryset.filter(pk__in=refund_ids)
    resolved = 0
    for refund_id, livemode, end_to_end_id in queryset.values_list("pk", "livemode",
                                                                   "payin__pix_end_to_end_id")[:BATCH]:
        try:
            answer = rails.for_mode(livemode).refund_status(key=str(refund_id), end_to_end_id=end_to_end_id)
        except RailError:
            logger.warning("payments.refund_reconcile_rail_error", extra={"refund_id": str(refund_id)})
            continue
        if refund_resolve(refund_id=refund_id, status=answer.status, failure_code=answer.failure_code):
            resolved += 1
    return resolved
