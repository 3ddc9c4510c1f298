"""Delivering one webhook: claim the row, POST the signed event, record the attempt, schedule the retry.

The HTTP call happens between two short transactions, never inside one. A claim is a lease (`locked_until`): a
worker killed mid-delivery leaves a lease that expires, and the sweeper enqueues the row again.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone

from config.celery import task_enqueue
from core.modes import live_mode_simulated
from webhooks import http, signing
from webhooks.metrics import delivery_outcome_record
from webhooks.models import Delivery, DeliveryAttempt, Event
from webhooks.services import DELIVERY_TASK, signing_secrets_active

logger = logging.getLogger(__name__)
USER_AGENT = f"Pagamentos-Webhooks/{settings.API_VERSION}"


@dataclass(frozen=True)
class Claim:
    delivery: Delivery
    lease_until: datetime
    payload: dict


def _not_leased(now: datetime) -> Q:
    return Q(locked_until__isnull=True) | Q(locked_until__lt=now)


# The hot path of every delivery is two statements, each one round trip. On PostgreSQL the claim takes the row with
# FOR UPDATE SKIP LOCKED (a claimer never waits behind another) and brings the event's payload along; SQLite, one
# writer at a time anyway, runs the same UPDATE and reads the payload after it.
_CLAIM_UPDATE = """
    UPDATE webhooks_delivery SET locked_until = %(lease)s, attempts = attempts + 1
    WHERE id = (SELECT id FROM webhooks_delivery
                WHERE id = %(id)s AND status = %(pending)s AND next_attempt_at <= %(now)s
                  AND (locked_until IS NULL OR locked_until < %(now)s)
                {lock})
    RETURNING event_id, merchant_id, livemode, url, failures, attempts
"""
_CLAIM_WITH_PAYLOAD = """
    WITH claimed AS ({update})
    SELECT claimed.*, webhooks_event.payload FROM claimed JOIN webhooks_event ON webhooks_event.id = claimed.event_id
"""
# Built once, not per delivery.
_CLAIM_POSTGRESQL = _CLAIM_WITH_PAYLOAD.format(update=_CLAIM_UPDATE.format(lock="FOR UPDATE SKIP LOCKED"))
_CLAIM_OTHER = _CLAIM_UPDATE.format(lock="")
# The attempt and the outcome in one statement, conditional on our lease (PostgreSQL).
_RECORD_SQL = """
    WITH attempt AS (
        INSERT INTO webhooks_deliveryattempt
            (delivery_id, attempted_at, url, status_code, error, duration_ms, response_excerpt)
        VALUES (%(id)s, %(now)s, %(url)s, %(status_code)s, %(error)s, %(duration_ms)s, %(excerpt)s))
    UPDATE webhooks_delivery
    SET locked_until = NULL, last_status_code = %(status_code)s, last_error = %(last_error)s, status = %(status)s,
        completed_at = %(completed_at)s, failures = %(failures)s,
        next_attempt_at = COALESCE(%(next_attempt_at)s, next_attempt_at),
        enqueued_at = COALESCE(%(enqueued_at)s, enqueued_at)
    WHERE id = %(id)s AND locked_until = %(lease)s
"""


def delivery_claim(*, delivery_id: str) -> Claim | None:
    """Take the lease on a due delivery, or None if it is done, not due, or another worker holds it."""
    now = timezone.now()
    lease_until = now + timedelta(seconds=settings.WEBHOOK_DELIVERY_LEASE_SECONDS)
    connection = connections[Delivery.objects.db]
    ops, pk = connection.ops, Delivery._meta.pk
    try:
        delivery_uuid = uuid.UUID(str(delivery_id))
    except ValueError:
        return None
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_POSTGRESQL if postgres else _CLAIM_OTHER, {
            "lease": ops.adapt_datetimefield_value(lease_until), "now": ops.adapt_datetimefield_value(now),
            "id": pk.get_db_prep_value(delivery_uuid, connection), "pending": Delivery.Status.PENDING,
        })
        row = cursor.fetchone()
    if row is None:
        return None
    event_id, merchant_id, livemode, url, failures, attempts = row[:6]
    if postgres:
        payload = json.loads(row[6]) if isinstance(row[6], str) else row[6]
    else:
        payload = Event.objects.filter(pk=event_id).values_list("payload", flat=True).first()
    delivery = Delivery(id=delivery_uuid, event_id=uuid.UUID(str(event_id)), merchant_id=uuid.UUID(str(merchant_id)),
                        livemode=bool(livemode), url=url, failures=failures, attempts=attempts,
                        status=Delivery.Status.PENDING, locked_until=lease_until)
    return Claim(delivery=delivery, lease_until=lease_until, payload=payload)


# Sent with every live delivery while live mode runs on the simulator rail (as live API responses carry it).
SIMULATED_HEADER = "Pagamentos-Simulated"


def retry_delay(failures: int) -> float | None:
    """Seconds until the next attempt after `failures` failed ones (±10% jitter), or None when the schedule is over."""
    schedule = settings.WEBHOOK_RETRY_SCHEDULE
    if failures > len(schedule):
        return None
    return schedule[failures - 1] * random.uniform(0.9, 1.1)


def delivery_attempt(*, delivery_id: str) -> None:
    claim = delivery_claim(delivery_id=delivery_id)
    if claim is None:
        return
    delivery = claim.delivery
    try:
        body = json.dumps(claim.payload, separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            **signing.headers(signing_secrets_active(merchant_id=delivery.merchant_id, livemode=delivery.livemode,
                                                     cached=True),
                              message_id=str(delivery.event_id), timestamp=int(time.time()), body=body),
        }
        if delivery.livemode and live_mode_simulated():
            headers[SIMULATED_HEADER] = "true"  # a live event of the simulator: no money moved
        result = http.post(delivery.url, body=body, headers=headers)
    except Exception as exc:
        # Whatever breaks (an unreadable signing secret, say) is this attempt's failure, recorded and retried on the
        # schedule like any other: never a delivery that stays leased, unrecorded and swept for ever.
        logger.exception("webhooks.delivery_error", extra={"delivery_id": str(delivery.pk)})
        result = http.HttpResult(status=None, body_excerpt="", error=f"internal error: {type(exc).__name__}",
                                 duration_ms=0)
    delay = _record(claim, result)
    if delay is not None and delay <= settings.WEBHOOK_MAX_ETA_SECONDS:
        # A near retry goes out at its due time; a far one is left to the sweeper (no long ETAs on the broker).
        task_enqueue(DELIVERY_TASK, countdown=delay, delivery_id=delivery_id)


def _record(claim: Claim, result: http.HttpResult) -> float | None:
    delivery = claim.delivery
    now = timezone.now()
    fields: dict = {"locked_until": None, "last_status_code": result.status, "last_error": result.error[:500]}
    delay = None
    if result.succeeded:
        fields.update(status=Delivery.Status.SUCCEEDED, completed_at=now)
    elif result.status == 410:
        fields.update(status=Delivery.Status.FAILED, completed_at=now, last_error="410 Gone: retries stopped")
    else:
        failures = delivery.failures + 1
        delay = retry_delay(failures)
        if delay is None:
            fields.update(status=Delivery.Status.FAILED, completed_at=now, failures=failures)
        else:
            next_attempt_at = now + timedelta(seconds=delay)
            fields.update(failures=failures, next_attempt_at=next_attempt_at)
            if delay <= settings.WEBHOOK_MAX_ETA_SECONDS:
                fields["enqueued_at"] = next_attempt_at  # its message is due then
    # Conditional on our lease: if it expired and another worker took the row over, its outcome stands.
    updated = _record_write(claim, result, now, fields)
    delivery_outcome_record(outcome=fields.get("status", "retry").lower() if updated else "superseded")
    logger.info("webhooks.delivery_attempt", extra={
        "delivery_id": str(delivery.pk), "event_id": str(delivery.event_id), "status_code": result.status,
        "error": result.error, "duration_ms": result.duration_ms, "outcome": fields.get("status", "RETRY"),
    })
    return delay if updated else None


def _record_write(claim: Claim, result: http.HttpResult, now: datetime, fields: dict) -> int:
    delivery = claim.delivery
    connection = connections[Delivery.objects.db]
    if connection.vendor != "postgresql":
        with transaction.atomic():
            DeliveryAttempt.objects.create(delivery_id=delivery.pk, attempted_at=now, url=delivery.url,
                                           status_code=result.status, error=result.error[:500],
                                           duration_ms=result.duration_ms, response_excerpt=result.body_excerpt)
            return Delivery.objects.filter(pk=delivery.pk, locked_until=claim.lease_until).update(**fields)
    with connection.cursor() as cursor:
        cursor.execute(_RECORD_SQL, {
            "id": delivery.pk, "now": now, "url": delivery.url, "status_code": result.status,
            "error": result.error[:500], "duration_ms": result.duration_ms, "excerpt": result.body_excerpt,
            "last_error": fields["last_error"], "status": fields.get("status", Delivery.Status.PENDING),
            "completed_at": fields.get("completed_at"), "failures": fields.get("failures", delivery.failures),
            "next_attempt_at": fields.get("next_attempt_at"), "lease": claim.lease_until,
            "enqueued_at": fields.get("enqueued_at"),
        })
        return cursor.rowcount


def deliveries_sweep(*, limit: int = 1000) -> int:
    """Enqueue deliveries that are overdue and not leased: their message was lost (broker flushed, worker killed) or
    their retry was too far out for an ETA. Safe to run anywhere, any number of times: the claim decides."""
    now = timezone.now()
    overdue = now - timedelta(seconds=settings.WEBHOOK_SWEEP_GRACE_SECONDS)
    quiet = now - timedelta(seconds=settings.WEBHOOK_REENQUEUE_SECONDS)
    candidates = (Delivery.objects.filter(_not_leased(now), status=Delivery.Status.PENDING,
                                          next_attempt_at__lte=overdue)
                  .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lte=quiet)))
    ids = list(candidates.order_by("next_attempt_at").values_list("id", flat=True)[:limit])
    # Conditional, so two sweepers at once enqueue each row once.
    ids = [i for i in ids if candidates.filter(pk=i).update(enqueued_at=now)]
    for delivery_id in ids:
        task_enqueue(DELIVERY_TASK, delivery_id=str(delivery_id))
    return len(ids)
