"""Writes of unmatched payments (issue 14). Money that reached the rail without settling a PENDING charge exactly is
recorded as an unmatched payment, its amount in the merchant's `held` balance, in the same transaction that looked
at the charge. The merchant's policy for its kind then accepts it (to `available`, less the method's fee), sends it
back to the payer (a Pix devolução through the rail) or holds it for a decision.

Every transition is a conditional update (`UPDATE … WHERE status IN (the allowed sources)`) with its ledger movement
and its event in one transaction. Locks: the charge (when the caller holds it), then the unmatched payment, then the
merchant's ledger accounts. No rail call runs inside a transaction: a refund is committed REFUND_PENDING, then sent
under the unmatched payment's id as the rail's idempotency key, and an unknown outcome is asked for later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from accounts.models import Merchant
from core.errors import DomainError, InvalidState, NotFound
from core.tasks import task_enqueue
from integrations.idempotency import effect_record
from payments import policy, rails
from payments.ledger import services as ledger
from payments.ledger.services import Leg
from payments.models import (
    AccountKind,
    LedgerAccount,
    LineType,
    Payin,
    PaymentMethod,
    UnmatchedAction,
    UnmatchedPayment,
    UnmatchedPolicy,
    UnmatchedStatus,
)
from payments.rails.base import RailError
from payments.unmatched.selectors import unmatched_policy
from payments.unmatched.serializers import unmatched_serialize
from webhooks.services import event_record

logger = logging.getLogger(__name__)

TRANSITIONS: dict[str, set[str]] = {  # target -> the statuses it may come from
    UnmatchedStatus.ACCEPTED: {UnmatchedStatus.HELD, UnmatchedStatus.REFUND_FAILED},
    UnmatchedStatus.REFUND_PENDING: {UnmatchedStatus.HELD, UnmatchedStatus.REFUND_FAILED},
    UnmatchedStatus.REFUNDED: {UnmatchedStatus.REFUND_PENDING},
    UnmatchedStatus.REFUND_FAILED: {UnmatchedStatus.REFUND_PENDING},
}
BATCH = 500


class UnmatchedRefundNotSupported(DomainError):
    status_code = 409
    type = "conflict"
    code = "refund_not_supported"
    message = gettext_lazy("A boleto payment cannot be sent back by Pix; accept it instead")


# --- Arrival ---------------------------------------------------------------------------------------------------------
def unmatched_record(*, merchant: Merchant, livemode: bool, kind: str, amount: int, end_to_end_id: str,
                     payin: Payin | None = None, payer_name: str = "", payer_document: str = "",
                     ) -> UnmatchedPayment | None:
    """Record money that arrived without settling a charge, inside the caller's transaction (the charge locked by
    it, if there is one). The same Pix again (`end_to_end_id`) records nothing: None."""
    if UnmatchedPayment.objects.filter(end_to_end_id=end_to_end_id).exists():
        return None
    now = timezone.now()
    unmatched = UnmatchedPayment(merchant=merchant, livemode=livemode, kind=kind, amount=amount, payin=payin,
                                 end_to_end_id=end_to_end_id, payer_name=payer_name[:200],
                                 payer_document=payer_document[:14], created_at=now, updated_at=now)
    try:
        with transaction.atomic():
            unmatched.save(force_insert=True)
    except IntegrityError:  # a concurrent notice of the same Pix recorded it first
        return None
    accounts = ledger.lock(merchant=merchant, livemode=livemode)
    _post(unmatched, "Payment that matched no charge", [Leg(AccountKind.RAIL_IN, -amount, LineType.UNMATCHED_PAYMENT),
                                                         Leg(AccountKind.HELD, amount, LineType.UNMATCHED_PAYMENT)],
          accounts=accounts)
    _event(unmatched, "unmatched_payment.created", previous_status=None)
    action = unmatched_policy(merchant=merchant)[kind]
    if action == UnmatchedAction.ACCEPT:
        _accept(unmatched, accounts=accounts)
    elif action == UnmatchedAction.REFUND and _refundable(unmatched):
        _refund_hold(unmatched, accounts=accounts)
        unmatched_id = str(unmatched.id)
        # Sent by the worker once this commits; with the broker down, reconciliation sends it (same key).
        transaction.on_commit(lambda: task_enqueue("payments.unmatched.tasks.unmatched_refund_send",
                                                   unmatched_id=unmatched_id), robust=True)
    return unmatched


# --- The merchant's decisions ----------------------------------------------------------------------------------------
def unmatched_accept(*, merchant: Merchant, livemode: bool, unmatched_id) -> UnmatchedPayment:
    """The merchant keeps the money: it moves from `held` to `available`, less the method's fee."""
    with transaction.atomic():
        return _accept(_locked(unmatched_id, merchant=merchant, livemode=livemode))


def unmatched_refund(*, merchant: Merchant, livemode: bool, unmatched_id) -> UnmatchedPayment:
    """Send the money back to the payer. Call it outside any transaction: the refund is committed REFUND_PENDING,
    then the rail is asked under the unmatched payment's id."""
    with transaction.atomic():
        unmatched = _locked(unmatched_id, merchant=merchant, livemode=livemode)
        if not _refundable(unmatched):
            raise UnmatchedRefundNotSupported()
        _refund_hold(unmatched)
    return unmatched_refund_send(unmatched_id=unmatched.pk)


def unmatched_policy_update(*, merchant: Merchant, changes: dict[str, str],
                            audit: Callable[..., object] | None = None) -> dict[str, str]:
    """Set the action of the kinds in `changes` (validated by the caller); the whole policy after. `audit(before=,
    after=)` records the change, in the same transaction, when the policy did change."""
    with transaction.atomic():
        before = unmatched_policy(merchant=merchant)
        for kind, action in changes.items():
            UnmatchedPolicy.objects.update_or_create(merchant=merchant, kind=kind, defaults={"action": action})
        after = unmatched_policy(merchant=merchant)
        if audit is not None and after != before:
            audit(before=before, after=after)
    return after


def _accept(unmatched: UnmatchedPayment, *, accounts: dict[str, LedgerAccount] | None = None) -> UnmatchedPayment:
    method = unmatched.payin.payment_method if unmatched.payin_id else PaymentMethod.PIX
    fee = policy.payin_fee(merchant=unmatched.merchant, payment_method=method, amount=unmatched.amount)
    _transition(unmatched, to=UnmatchedStatus.ACCEPTED, fee=fee, resolved_at=timezone.now())
    _post(unmatched, "Unmatched payment accepted", [
        Leg(AccountKind.HELD, -unmatched.amount, LineType.UNMATCHED_PAYMENT),
        Leg(AccountKind.AVAILABLE, unmatched.amount, LineType.UNMATCHED_PAYMENT),
        Leg(AccountKind.AVAILABLE, -fee, LineType.UNMATCHED_PAYMENT_FEE),
        Leg(AccountKind.FEE_REVENUE, fee, LineType.UNMATCHED_PAYMENT_FEE),
    ], accounts=accounts)
    return unmatched


def _refundable(unmatched: UnmatchedPayment) -> bool:
    """Only a Pix can be given back by a devolução; a boleto paid after its cancel can only be accepted."""
    return not unmatched.payin_id or unmatched.payin.payment_method == PaymentMethod.PIX


def _refund_hold(unmatched: UnmatchedPayment, *, accounts: dict[str, LedgerAccount] | None = None) -> None:
    _transition(unmatched, to=UnmatchedStatus.REFUND_PENDING, failure_code="")
    _post(unmatched, "Unmatched payment sent back to the payer", [
        Leg(AccountKind.HELD, -unmatched.amount, LineType.UNMATCHED_PAYMENT),
        Leg(AccountKind.PAYOUTS_IN_FLIGHT, unmatched.amount, LineType.UNMATCHED_PAYMENT),
    ], accounts=accounts)


# --- The rail's side of a refund -------------------------------------------------------------------------------------
def unmatched_refund_send(*, unmatched_id) -> UnmatchedPayment:
    """Ask the rail to give a REFUND_PENDING payment back (outside any transaction; the same key every time, so a
    repeat finds the first devolução) and record its answer; a PENDING answer is asked about again later."""
    unmatched = UnmatchedPayment.objects.select_related("merchant").get(pk=unmatched_id)
    if unmatched.status != UnmatchedStatus.REFUND_PENDING:
        return unmatched
    try:
        answer = rails.for_mode(unmatched.livemode).refund_create(
            key=str(unmatched.id), livemode=unmatched.livemode, payin_key=str(unmatched.payin_id or ""),
            payment_method=PaymentMethod.PIX, amount=unmatched.amount, end_to_end_id=unmatched.end_to_end_id)
    except RailError:
        logger.warning("payments.unmatched_refund_rail_no_answer", extra={"unmatched_id": str(unmatched.id)})
        return unmatched
    if answer.status in ("SUCCEEDED", "FAILED"):
        return unmatched_refund_resolve(unmatched_id=unmatched.pk, status=answer.status,
                                        failure_code=answer.failure_code or "rail_error") or unmatched
    unmatched_id = str(unmatched.id)
    transaction.on_commit(lambda: task_enqueue("payments.unmatched.tasks.unmatched_refunds_reconcile",
                                               unmatched_ids=[unmatched_id],
                                               countdown=max(1, settings.SIMULATOR_AUTO_CONFIRM_SECONDS)),
                          robust=True)
    return unmatched


def unmatched_refund_resolve(*, unmatched_id, status: str, failure_code: str = "") -> UnmatchedPayment | None:
    """The rail's answer about a REFUND_PENDING payment; a repeated answer is a no-op (None)."""
    with transaction.atomic():
        unmatched = UnmatchedPayment.objects.select_for_update(of=("self",)).select_related("merchant").filter(
            pk=unmatched_id).first()
        if unmatched is None or unmatched.status != UnmatchedStatus.REFUND_PENDING:
            return None
        if status == "SUCCEEDED":
            _transition(unmatched, to=UnmatchedStatus.REFUNDED, resolved_at=timezone.now())
            _post(unmatched, "Unmatched payment returned to the payer", [
                Leg(AccountKind.PAYOUTS_IN_FLIGHT, -unmatched.amount, LineType.UNMATCHED_PAYMENT),
                Leg(AccountKind.RAIL_OUT, unmatched.amount, LineType.UNMATCHED_PAYMENT)])
        elif status == "FAILED":
            _transition(unmatched, to=UnmatchedStatus.REFUND_FAILED, failure_code=failure_code or "rail_error")
            _post(unmatched, "Return to the payer failed: held again", [
                Leg(AccountKind.PAYOUTS_IN_FLIGHT, -unmatched.amount, LineType.UNMATCHED_PAYMENT),
                Leg(AccountKind.HELD, unmatched.amount, LineType.UNMATCHED_PAYMENT)])
        else:
            return None
        return unmatched


def unmatched_refunds_reconcile(*, older_than: timedelta = timedelta(0), unmatched_ids: list | None = None) -> int:
    """Ask the rail about REFUND_PENDING payments (outside any transaction) and record its answers."""
    queryset = UnmatchedPayment.objects.filter(status=UnmatchedStatus.REFUND_PENDING,
                                               updated_at__lte=timezone.now() - older_than)
    if unmatched_ids is not None:
        queryset = queryset.filter(pk__in=unmatched_ids)
    resolved = 0
    for unmatched_id, livemode, end_to_end_id in queryset.values_list("pk", "livemode", "end_to_end_id")[:BATCH]:
        try:
            answer = rails.for_mode(livemode).refund_status(key=str(unmatched_id), end_to_end_id=end_to_end_id)
        except RailError:
            logger.warning("payments.unmatched_reconcile_rail_error", extra={"unmatched_id": str(unmatched_id)})
            continue
        if unmatched_refund_resolve(unmatched_id=unmatched_id, status=answer.status,
                                    failure_code=answer.failure_code):
            resolved += 1
    return resolved


# --- Shared ----------------------------------------------------------------------------------------------------------
def _locked(unmatched_id, *, merchant: Merchant, livemode: bool) -> UnmatchedPayment:
    unmatched = (UnmatchedPayment.objects.select_for_update(of=("self",)).select_related("payin")
                 .filter(pk=unmatched_id, merchant=merchant, livemode=livemode).first())
    if unmatched is None:
        raise NotFound("No such unmatched payment")
    unmatched.merchant = merchant
    return unmatched


def _transition(unmatched: UnmatchedPayment, *, to: str, **changes) -> None:
    now = timezone.now()
    source = unmatched.status
    if not UnmatchedPayment.objects.filter(pk=unmatched.pk, status__in=TRANSITIONS[to]).update(
            status=to, updated_at=now, **changes):
        raise InvalidState(gettext("An unmatched payment in status %(source)s cannot become %(to)s") % {
            "source": source, "to": to})
    unmatched.status, unmatched.updated_at = to, now
    for name, value in changes.items():
        setattr(unmatched, name, value)
    _event(unmatched, "unmatched_payment.updated", previous_status=source)


def _post(unmatched: UnmatchedPayment, description: str, legs: list[Leg], *,
          accounts: dict[str, LedgerAccount] | None = None) -> None:
    ledger.post(merchant=unmatched.merchant, livemode=unmatched.livemode, object_type="unmatched_payment",
                object_id=str(unmatched.id), reference_id=unmatched.payin.reference_id if unmatched.payin_id else "",
                description=description, legs=legs, accounts=accounts)


def _event(unmatched: UnmatchedPayment, type: str, *, previous_status: str | None) -> None:
    """The unmatched payment's event, in the caller's transaction, which is the request's effect (`effect_record`)."""
    effect_record()
    webhook_url = unmatched.payin.webhook_url if unmatched.payin_id else ""
    event_record(merchant=unmatched.merchant, livemode=unmatched.livemode, type=type,
                 obj=unmatched_serialize(unmatched), previous_status=previous_status,
                 webhook_url=webhook_url or None)
