"""Refunds of charges (SPEC §3.6): created against the balance, sent to the rail, resolved when the rail answers, and
reconciled when it did not."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from accounts.models import Merchant
from config import readcache
from config.errors import DomainError, InvalidState, ValidationFailed
from payments import rails
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
from payments.payins.transitions import BATCH, TRANSITIONS, payin_locked, payin_transition
from payments.rails.base import OperationStatus, RailError, RailTimeout, RailUnavailable
from webhooks.services import event_record

logger = logging.getLogger(__name__)


class RefundNotSupported(DomainError):
    status_code = 409
    type = "conflict"
    code = "refund_not_supported"
    message = "Boleto charges cannot be refunded"


# --- Refunds ---------------------------------------------------------------------------------------------------------
def refund_create(*, merchant: Merchant, livemode: bool, payin_id, amount: int | None, reason: str) -> Refund:
    """Refund part or the rest of a paid charge from the merchant's available balance. Card refunds succeed at once;
    Pix refunds hold the money in flight until the rail confirms."""
    with transaction.atomic():
        payin = payin_locked(payin_id, merchant=merchant, livemode=livemode)
        if payin.payment_method == PaymentMethod.BOLETO:
            raise RefundNotSupported()
        if payin.status not in (PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED):
            raise InvalidState(f"A {payin.status} charge cannot be refunded")
        left = payin.amount - payin.refunded_amount
        if amount is None:
            amount = left
        if amount < 1 or amount > left:
            raise ValidationFailed(param="amount", details=[{
                "param": "amount", "code": "refund_exceeds_remaining",
                "message": f"At most {left} cents of this charge can still be refunded."}])
        accounts = ledger.lock(merchant=payin.merchant, livemode=livemode)
        if accounts[AccountKind.AVAILABLE].balance < amount:
            raise InsufficientBalance()
        now = timezone.now()
        refund = Refund.objects.create(payin=payin, merchant=payin.merchant, livemode=livemode, amount=amount,
                                       reason=reason, created_at=now, updated_at=now)
        Payin.objects.filter(pk=payin.pk).update(refunded_amount=F("refunded_amount") + amount, updated_at=now)
        readcache.changed(readcache.key("payin", payin.pk))
        payin.refunded_amount += amount
        payin.updated_at = now
        try:
            answer = rails.for_mode(livemode).refund_create(
                key=str(refund.id), livemode=livemode, payin_key=str(payin.id),
                payment_method=payin.payment_method, amount=amount)
        except RailTimeout:
            # The rail may have refunded under this refund's id: keep it PENDING, its money held in flight, and let
            # the reconciliation job ask. Rolling back would lose it, and a retry would refund twice.
            logger.warning("payments.refund_rail_timeout", extra={"refund_id": str(refund.id)})
            answer = OperationStatus(status="PENDING")
        except RailError as exc:
            raise RailUnavailable() from exc
        held = AccountKind.RAIL_OUT if answer.status == "SUCCEEDED" else AccountKind.PAYOUTS_IN_FLIGHT
        ledger.post(merchant=payin.merchant, livemode=livemode, object_type="refund", object_id=str(refund.id),
                    reference_id=payin.reference_id, description=f"Refund of charge {payin.id}", accounts=accounts,
                    legs=[Leg(AccountKind.AVAILABLE, -amount, LineType.REFUND), Leg(held, amount, LineType.REFUND)])
        if answer.status == "SUCCEEDED":
            _refund_succeeded(refund, payin, moved=True)
        elif answer.status == "FAILED":
            _refund_failed(refund, payin, failure_code=answer.failure_code)
        return refund


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
        if status == RefundStatus.SUCCEEDED:
            _refund_succeeded(refund, payin, moved=False)
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


def _refund_succeeded(refund: Refund, payin: Payin, *, moved: bool) -> None:
    _refund_set(refund, RefundStatus.SUCCEEDED)
    if not moved:
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
    Payin.objects.filter(pk=payin.pk).update(refunded_amount=F("refunded_amount") - refund.amount, updated_at=now)
    readcache.changed(readcache.key("payin", payin.pk))
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
    queryset = Refund.objects.filter(status=RefundStatus.PENDING, created_at__lte=timezone.now() - older_than)
    if refund_ids is not None:
        queryset = queryset.filter(pk__in=refund_ids)
    resolved = 0
    for refund_id, livemode in queryset.values_list("pk", "livemode")[:BATCH]:
        try:
            answer = rails.for_mode(livemode).refund_status(key=str(refund_id))
        except RailError:
            logger.warning("payments.refund_reconcile_rail_error", extra={"refund_id": str(refund_id)})
            continue
        if refund_resolve(refund_id=refund_id, status=answer.status, failure_code=answer.failure_code):
            resolved += 1
    return resolved
