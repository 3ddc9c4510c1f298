"""Incoming rail notifications (SPEC §7): stored raw first, then processed once.

A rail may deliver the same notification twice, or two of our workers may pick it up at once: the unique
(rail, dedupe key) row and the lock taken to process it make the second a no-op, and the status transitions are
conditional anyway, so even a replay under a new key cannot credit a charge twice.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import asdict

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Merchant
from core.errors import InvalidState, NotFound
from integrations.idempotency import effect_record
from payments import rails
from payments.disputes import services as disputes
from payments.models import Payin, RailNotification, UnmatchedKind
from payments.payins import refunds
from payments.payins import services as payins
from payments.payouts import services as payouts
from payments.rails.base import Notification, OperationStatus
from payments.unattributed import services as unattributed
from payments.unmatched import services as unmatched

logger = logging.getLogger(__name__)


def notification_receive(*, rail_name: str, body: bytes) -> RailNotification:
    """Store a notification's raw body, then apply it. Raises `InvalidNotification` for a body the rail could not
    have sent (nothing is stored)."""
    return notification_record(rail_name=rail_name, notification=rails.by_name(rail_name).notification_parse(body),
                               body=body)


def notification_record(*, rail_name: str, notification: Notification, body: bytes | None = None) -> RailNotification:
    """Store a notification (its raw body, or by default the confirmed notification itself), then apply it once."""
    if body is None:
        body = json.dumps(asdict(notification), separators=(",", ":")).encode()
    try:
        with transaction.atomic():
            row = RailNotification.objects.create(rail=rail_name, dedupe_key=notification.dedupe_key,
                                                  body=body.decode("utf-8", "replace"))
            effect_record()  # a sandbox action's notification, stored: whatever follows, the request took effect
    except IntegrityError:
        row = RailNotification.objects.get(rail=rail_name, dedupe_key=notification.dedupe_key)
    notification_process(row_id=row.pk, notification=notification)
    row.refresh_from_db()
    return row


def notification_process(*, row_id: int, notification: Notification | None = None) -> None:
    with transaction.atomic():
        row = RailNotification.objects.select_for_update().get(pk=row_id)
        if row.processed_at is not None:
            return
        if notification is None:
            notification = rails.by_name(row.rail).notification_parse(row.body.encode())
        row.outcome = _apply(notification, row)[:255]
        row.processed_at = timezone.now()
        row.save(update_fields=["outcome", "processed_at"])


def _apply(notification: Notification, row: RailNotification) -> str:
    if notification.kind in ("payin.paid", "payin.chargeback"):
        payin_id = _payin_id(notification)
        if payin_id is None and notification.kind == "payin.paid":
            return _unknown_reference(notification, row)
        if payin_id is None:
            logger.error("payments.notification_unmatched", extra={"dedupe_key": notification.dedupe_key})
            return "no matching charge"
        if notification.kind == "payin.paid":
            paid = payins.payin_pay(payin_id=payin_id, amount=notification.amount,
                                    end_to_end_id=notification.end_to_end_id, payer_name=notification.payer_name,
                                    payer_document=notification.payer_document)
            return "paid" if paid else "unmatched or repeated"
        # A chargeback (card) or a MED return (Pix) opens a dispute: the money is held until it is decided.
        try:
            dispute, created = disputes.dispute_open(payin_id=payin_id)
        except InvalidState as exc:
            return f"ignored: {exc.message}"
        return f"dispute opened {dispute.pk}" if created else f"ignored: already disputed ({dispute.pk})"
    if notification.kind in ("refund.succeeded", "refund.failed"):
        status = "SUCCEEDED" if notification.kind == "refund.succeeded" else "FAILED"
        try:
            refund_id = uuid.UUID(notification.key)
        except ValueError:
            return "no matching refund"
        resolved = (refunds.refund_resolve(refund_id=refund_id, status=status,
                                           failure_code=notification.failure_code)
                    or unmatched.unmatched_refund_resolve(unmatched_id=refund_id, status=status,
                                                          failure_code=notification.failure_code)
                    or unattributed.unattributed_refund_resolve(refund_key=refund_id, status=status,
                                                                failure_code=notification.failure_code))
        return "resolved" if resolved else "ignored"
    if notification.kind in ("payout.succeeded", "payout.failed"):
        try:
            payout_id = uuid.UUID(notification.key)
        except ValueError:
            return "no matching payout"
        answer = OperationStatus(status=notification.kind.partition(".")[2].upper(),
                                 failure_code=notification.failure_code)
        try:
            return "resolved" if payouts.payout_resolve(payout_id=payout_id, answer=answer) else "ignored"
        except NotFound:
            return "no matching payout"
    return f"unknown kind {notification.kind}"


def _unknown_reference(notification: Notification, row: RailNotification) -> str:
    """Money naming no charge we know. The sandbox says whose test-mode money it is; a real rail's Pix to the
    platform's key naming nothing is not any merchant's: it becomes an unattributed payment (once per Pix), in this
    transaction, which staff send back to the payer from the admin."""
    merchant = Merchant.objects.filter(pk=notification.merchant_id).first() if notification.merchant_id else None
    if merchant is None or not notification.end_to_end_id or notification.amount is None:
        logger.error("payments.payment_unattributed", extra={"dedupe_key": notification.dedupe_key,
                                                             "amount": notification.amount})
        if notification.end_to_end_id and notification.amount and notification.amount > 0:
            unattributed.unattributed_record(notification=row, end_to_end_id=notification.end_to_end_id,
                                             amount=notification.amount, payer_name=notification.payer_name,
                                             payer_document=notification.payer_document)
        return "no matching charge: unattributed"
    unmatched.unmatched_record(merchant=merchant, livemode=False, kind=UnmatchedKind.UNKNOWN_REFERENCE,
                               amount=notification.amount, end_to_end_id=notification.end_to_end_id,
                               payer_name=notification.payer_name, payer_document=notification.payer_document)
    return "unmatched"


def _payin_id(notification: Notification):
    queryset = Payin.objects.all()
    if notification.txid:
        queryset = queryset.filter(pix_txid=notification.txid)
    elif notification.nosso_numero is not None:
        queryset = queryset.filter(boleto_nosso_numero=notification.nosso_numero)
    elif notification.key:
        try:
            queryset = queryset.filter(pk=uuid.UUID(notification.key))
        except ValueError:
            return None
    else:
        return None
    return queryset.values_list("pk", flat=True).first()
