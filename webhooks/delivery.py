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

from webhooks import http, signing
from webhooks.models import Delivery, DeliveryAttempt, Event
from webhooks.services import signing_secrets_active

logger = logging.getLogger(__name__)
USER_AGENT = f"Pagamentos-Webhooks/{settings.API_VERSION}"


@dataclass(frozen=True)
class Claim:
    delivery: Delivery
    lease_until: datetime


def _not_leased(now: datetime) -> Q:
    return Q(locked_until__isnull=True) | Q(locked_until__lt=now)


# One statement, one round trip: the hot path of every delivery. On PostgreSQL the row is taken with
# FOR UPDATE SKIP LOCKED, so a claimer never waits behind another; SQLite has one writer at a time anyway.
_CLAIM_SQL = """
    UPDATE webhooks_delivery SET locked_until = %(lease)s, attempts = attempts + 1
    WHERE id = (SELECT id FROM webhooks_delivery
                WHERE id = %(id)s AND status = %(pending)s AND next_attempt_at <= %(now)s
                  AND (locked_until IS NULL OR locked_until < %(now)s)
                {lock})
    RETURNING event_id, merchant_id, livemode, url, failures, attempts
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
    sql = _CLAIM_SQL.format(lock="FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked
                            else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, {
            "lease": ops.adapt_datetimefield_value(lease_until), "now": ops.adapt_datetimefield_value(now),
            "id": pk.get_db_prep_value(delivery_uuid, connection), "pending": Delivery.Status.PENDING,
        })
        row = cursor.fetchone()
    if row is None:
        return None
    event_id, merchant_id, livemode, url, failures, attempts = row
    delivery = Delivery(id=delivery_uuid, event_id=uuid.UUID(str(event_id)), merchant_id=uuid.UUID(str(merchant_id)),
                        livemode=bool(livemode), url=url, failures=failures, attempts=attempts,
                        status=Delivery.Status.PENDING, locked_until=lease_until)
    return Claim(delivery=delivery, lease_until=lease_until)


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
    payload = Event.objects.filter(pk=delivery.event_id).values_list("payload", flat=True).first()
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signing.headers(signing_secrets_active(merchant_id=delivery.merchant_id, livemode=delivery.livemode,
                                                 cached=True),
                          message_id=str(delivery.event_id), timestamp=int(time.time()), body=body),
    }
    result = http.post(delivery.url, body=body, headers=headers)
    delay = _record(claim, result)
    if delay is not None and delay <= settings.WEBHOOK_MAX_ETA_SECONDS:
        # A near retry goes out at its due time; a far one is left to the sweeper (no long ETAs on the broker).
        from webhooks.tasks import delivery_attempt as task

        task.apply_async(kwargs={"delivery_id": delivery_id}, countdown=delay)


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
            fields.update(failures=failures, next_attempt_at=now + timedelta(seconds=delay))
    with transaction.atomic():
        DeliveryAttempt.objects.create(delivery_id=delivery.pk, attempted_at=now, url=delivery.url,
                                       status_code=result.status, error=result.error[:500],
                                       duration_ms=result.duration_ms, response_excerpt=result.body_excerpt)
        # Conditional on our lease: if it expired and another worker took the row over, its outcome stands.
        updated = Delivery.objects.filter(pk=delivery.pk, locked_until=claim.lease_until).update(**fields)
    logger.info("webhooks.delivery_attempt", extra={
        "delivery_id": str(delivery.pk), "event_id": str(delivery.event_id), "status_code": result.status,
        "error": result.error, "duration_ms": result.duration_ms, "outcome": fields.get("status", "RETRY"),
    })
    return delay if updated else None


def deliveries_sweep(*, limit: int = 1000) -> int:
    """Enqueue deliveries that are overdue and not leased: their message was lost (broker flushed, worker killed) or
    their retry was too far out for an ETA. Safe to run anywhere, any number of times: the claim decides."""
    from webhooks.tasks import delivery_attempt as task

    now = timezone.now()
    overdue = now - timedelta(seconds=settings.WEBHOOK_SWEEP_GRACE_SECONDS)
    ids = list(Delivery.objects.filter(_not_leased(now), status=Delivery.Status.PENDING, next_attempt_at__lte=overdue)
               .order_by("next_attempt_at").values_list("id", flat=True)[:limit])
    for delivery_id in ids:
        task.delay(delivery_id=str(delivery_id))
    return len(ids)
