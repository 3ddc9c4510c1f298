"""Writes of unattributed payments. A live Pix to the platform's key that names no charge belongs to no merchant: it
is recorded, in the transaction that records its notification, as an unattributed payment (one per end-to-end id),
and staff send it back to the payer from the admin (a Pix devolução through the rail it came in on).

It is the platform's money, in no merchant's ledger: every ledger account belongs to a merchant (`AccountKind`), so
its arrival and its return move no ledger line; the rail's statement and this table are its books (README, Decision
96). Every transition is a conditional update (`UPDATE … WHERE status IN (the allowed sources)`). No rail call runs
inside a transaction: the refund is committed REFUND_PENDING, then sent by a worker under `refund_key` (the payment's
id the first time), and an unknown outcome is asked for under the same key, so it is never sent twice. Only after the
rail said it could not give the money back (NAO_REALIZADO) does a new attempt get a new key.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import User
from core.errors import InvalidState, NotFound
from core.tasks import task_enqueue
from payments import rails
from payments.models import PaymentMethod, RailNotification, UnattributedPayment, UnattributedStatus
from payments.rails.base import OperationStatus, RailError, RailRefused

logger = logging.getLogger(__name__)

SENDABLE = (UnattributedStatus.RECEIVED, UnattributedStatus.REFUND_FAILED)
# The rail's own "could not give it back" (Efí's NAO_REALIZADO): final for that devolução, so another may be tried.
REFUSED_BY_BANK = "rejected_by_bank"
# What `refund_status` answers when the rail has no devolução under the key: the send never reached it.
NEVER_REACHED = "rail_error"
BATCH = 500


# --- Arrival ---------------------------------------------------------------------------------------------------------
def unattributed_record(*, notification: RailNotification, end_to_end_id: str, amount: int, payer_name: str = "",
                        payer_document: str = "") -> UnattributedPayment | None:
    """Record a Pix naming no charge and no merchant, inside the transaction processing its notification. The same
    Pix again (`end_to_end_id`, under any notification) records nothing: None."""
    if UnattributedPayment.objects.filter(end_to_end_id=end_to_end_id).exists():
        return None
    now = timezone.now()
    payment = UnattributedPayment(rail=notification.rail, notification=notification, end_to_end_id=end_to_end_id,
                                  amount=amount, payer_name=payer_name[:200], payer_document=payer_document[:14],
                                  created_at=now, updated_at=now)
    try:
        with transaction.atomic():
            payment.save(force_insert=True)
    except IntegrityError:  # a concurrent notice of the same Pix recorded it first
        return None
    return payment


# --- Staff's decision ------------------------------------------------------------------------------------------------
def unattributed_refund(*, unattributed_id, staff: User,
                        audit: Callable[[UnattributedPayment, str], object] | None = None) -> UnattributedPayment:
    """Staff send the money back to the payer: committed REFUND_PENDING (from RECEIVED or REFUND_FAILED), then a worker
    asks the rail. `audit(payment, previous_status)` records the decision in the same transaction."""
    with transaction.atomic():
        payment = UnattributedPayment.objects.select_for_update().filter(pk=unattributed_id).first()
        if payment is None:
            raise NotFound("No such unattributed payment")
        previous = payment.status
        if previous not in SENDABLE:
            raise InvalidState(gettext("A %(status)s payment cannot be sent back") % {"status": previous})
        if payment.refund_key is None:
            refund_key = payment.pk
        elif payment.failure_code == REFUSED_BY_BANK:
            refund_key = uuid.uuid4()  # the last devolução is final at the bank (not made): a new one may be asked
        else:
            refund_key = payment.refund_key  # the rail never had it: ask again under the same key
        now = timezone.now()
        if not UnattributedPayment.objects.filter(pk=payment.pk, status__in=SENDABLE).update(
                status=UnattributedStatus.REFUND_PENDING, refund_key=refund_key, failure_code="", refunded_by=staff,
                updated_at=now):
            raise InvalidState(gettext("A %(status)s payment cannot be sent back") % {"status": previous})
        payment.status, payment.refund_key, payment.failure_code = UnattributedStatus.REFUND_PENDING, refund_key, ""
        payment.refunded_by, payment.updated_at = staff, now
        if audit is not None:
            audit(payment, previous)
        unattributed_id = str(payment.pk)
        # Sent by the worker once this commits; with the broker down, reconciliation sends it (same key).
        transaction.on_commit(lambda: task_enqueue("payments.unattributed.tasks.unattributed_refund_send",
                                                   unattributed_id=unattributed_id), robust=True)
    logger.info("payments.unattributed_refund_requested", extra={
        "unattributed_id": unattributed_id, "amount": payment.amount, "staff_id": staff.pk})
    return payment


# --- The rail's side of a refund -------------------------------------------------------------------------------------
def unattributed_refund_send(*, unattributed_id) -> UnattributedPayment:
    """Ask the rail to give a REFUND_PENDING payment back (outside any transaction; the same key every time, so a
    repeat finds the first devolução) and record its answer; a PENDING answer is asked about again later."""
    payment = UnattributedPayment.objects.get(pk=unattributed_id)
    if payment.status != UnattributedStatus.REFUND_PENDING:
        return payment
    answer = _create(payment)
    if answer is None:
        return payment
    if answer.status in ("SUCCEEDED", "FAILED"):
        return _record(payment, answer) or payment
    unattributed_id = str(payment.pk)
    transaction.on_commit(lambda: task_enqueue("payments.unattributed.tasks.unattributed_refunds_reconcile",
                                               unattributed_ids=[unattributed_id],
                                               countdown=max(1, settings.SIMULATOR_AUTO_CONFIRM_SECONDS)),
                          robust=True)
    return payment


def unattributed_refund_resolve(*, refund_key, status: str, failure_code: str = "") -> UnattributedPayment | None:
    """The rail's answer about the devolução under `refund_key`, while it is REFUND_PENDING; a repeated answer, or
    one about an earlier attempt's key, is a no-op (None)."""
    if status not in ("SUCCEEDED", "FAILED"):
        return None
    now = timezone.now()
    if status == "SUCCEEDED":
        changes = {"status": UnattributedStatus.REFUNDED, "resolved_at": now}
    else:
        changes = {"status": UnattributedStatus.REFUND_FAILED, "failure_code": failure_code or NEVER_REACHED}
    if not UnattributedPayment.objects.filter(refund_key=refund_key, status=UnattributedStatus.REFUND_PENDING).update(
            updated_at=now, **changes):
        return None
    payment = UnattributedPayment.objects.get(refund_key=refund_key)
    extra = {"unattributed_id": str(payment.pk), "amount": payment.amount, "failure_code": payment.failure_code}
    if status == "SUCCEEDED":
        logger.info("payments.unattributed_refunded", extra=extra)
    else:
        logger.warning("payments.unattributed_refund_failed", extra=extra)
    return payment


def unattributed_refunds_reconcile(*, older_than: timedelta = timedelta(0),
                                   unattributed_ids: list | None = None) -> int:
    """Ask the rail about REFUND_PENDING payments (outside any transaction) under their key and record its answers;
    one the rail never received (its task lost, or the call cut before it) is sent now, under the same key."""
    queryset = UnattributedPayment.objects.filter(status=UnattributedStatus.REFUND_PENDING,
                                                  updated_at__lte=timezone.now() - older_than)
    if unattributed_ids is not None:
        queryset = queryset.filter(pk__in=unattributed_ids)
    resolved = 0
    for payment in queryset.order_by("updated_at")[:BATCH]:
        try:
            answer = rails.by_name(payment.rail).refund_status(key=str(payment.refund_key),
                                                               end_to_end_id=payment.end_to_end_id)
        except RailError:
            logger.warning("payments.unattributed_reconcile_rail_error", extra={"unattributed_id": str(payment.pk)})
            continue
        if answer.status == "FAILED" and answer.failure_code == NEVER_REACHED:
            answer = _create(payment)
        if answer is not None and _record(payment, answer):
            resolved += 1
    return resolved


def _create(payment: UnattributedPayment) -> OperationStatus | None:
    """The devolução under the payment's key, made or found; None when the rail's answer is unknown."""
    rail = rails.by_name(payment.rail)
    try:
        return rail.refund_create(key=str(payment.refund_key), livemode=True, payin_key="",
                                  payment_method=PaymentMethod.PIX, amount=payment.amount,
                                  end_to_end_id=payment.end_to_end_id)
    except RailRefused as refusal:
        # Refused, or refused as a repeat of a key the rail already has: the rail says which. With none under our
        # key, nothing was given back.
        try:
            known = rail.refund_status(key=str(payment.refund_key), end_to_end_id=payment.end_to_end_id)
        except RailError:
            known = None
        logger.warning("payments.unattributed_refund_refused", extra={"unattributed_id": str(payment.pk),
                                                                      "reason": str(refusal)[:200]})
        if known is not None and known.status == "FAILED" and known.failure_code == NEVER_REACHED:
            return OperationStatus(status="FAILED", failure_code="refused_by_rail")
        return known
    except RailError:
        logger.warning("payments.unattributed_refund_rail_no_answer", extra={"unattributed_id": str(payment.pk)})
        return None


def _record(payment: UnattributedPayment, answer: OperationStatus) -> UnattributedPayment | None:
    return unattributed_refund_resolve(refund_key=payment.refund_key, status=answer.status,
                                       failure_code=answer.failure_code)
