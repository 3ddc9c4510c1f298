"""Writes of the webhooks app: events (the outbox), endpoints, the signing secret, resends and test events."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import Merchant
from accounts.signals import MEMO_ATTRIBUTE, merchant_changed
from core.api import timestamp
from core.errors import InvalidState
from core.ids import uuid7
from core.tasks import task_enqueue
from webhooks import signing, ssrf
from webhooks.models import Delivery, Event, EventType, WebhookEndpoint, WebhookSecret

logger = logging.getLogger(__name__)
DELIVERY_TASK = "webhooks.tasks.delivery_attempt"  # queued by name: the tasks module imports this one
SECRET_ROTATION_GRACE = timedelta(hours=24)


def event_record(*, merchant: Merchant, livemode: bool, type: str, obj: dict, previous_status: str | None = None,
                 webhook_url: str | None = None, endpoints: list[WebhookEndpoint] | None = None) -> Event:
    """Record an event and its deliveries inside the caller's transaction: they exist if and only if the change
    commits. Deliveries are enqueued after the commit; the sweeper catches any enqueue that is lost."""
    if not connection.in_atomic_block:
        raise RuntimeError("event_record needs the caller's transaction")
    event, deliveries = event_build(merchant=merchant, livemode=livemode, type=type, obj=obj,
                                    previous_status=previous_status, webhook_url=webhook_url, endpoints=endpoints)
    event.save(force_insert=True)
    if deliveries:
        Delivery.objects.bulk_create(deliveries)
    deliveries_enqueue_on_commit(deliveries)
    return event


def events_record(events: list[dict]) -> list[Event]:
    """Several events, each given as `event_build`'s keyword arguments, and their deliveries, recorded as
    `event_record` records one, with one INSERT for the events and one for their deliveries (the worker moving a
    batch of payouts)."""
    if not events:
        return []
    if not connection.in_atomic_block:
        raise RuntimeError("events_record needs the caller's transaction")
    built = [event_build(**fields) for fields in events]
    deliveries = [delivery for _, event_deliveries in built for delivery in event_deliveries]
    written = Event.objects.bulk_create([event for event, _ in built])
    if deliveries:
        Delivery.objects.bulk_create(deliveries)
    deliveries_enqueue_on_commit(deliveries)
    return written


def event_build(*, merchant: Merchant, livemode: bool, type: str, obj: dict, previous_status: str | None = None,
                webhook_url: str | None = None,
                endpoints: list[WebhookEndpoint] | None = None) -> tuple[Event, list[Delivery]]:
    """An event and its deliveries, not yet saved: what `event_record` writes, and what
    `payments.payins.charge_insert` writes with a new charge in one statement."""
    now = timezone.now()
    event_id = uuid7()
    payload = {
        "id": str(event_id), "type": type, "createdAt": timestamp(now), "livemode": livemode,
        "apiVersion": settings.API_VERSION, "data": {"object": obj, "previousStatus": previous_status},
    }
    event = Event(id=event_id, merchant=merchant, livemode=livemode, type=type, object_id=str(obj.get("id", "")),
                  payload=payload, created_at=now)
    if endpoints is None:
        endpoints = [e for e in enabled_endpoints(merchant, livemode) if e.wants(type)]
    targets: dict[str, WebhookEndpoint | None] = {}
    if webhook_url:
        targets[webhook_url] = None
    for endpoint in endpoints:
        targets.setdefault(endpoint.url, endpoint)
    deliveries = [Delivery(event=event, merchant=merchant, livemode=livemode, endpoint=endpoint, url=url,
                           next_attempt_at=now, created_at=now, enqueued_at=now)
                  for url, endpoint in targets.items()]
    return event, deliveries


def deliveries_enqueue_on_commit(deliveries: list[Delivery]) -> None:
    """Enqueue the deliveries once the transaction that writes them commits (at once outside a transaction: the
    statement that wrote them has committed)."""
    if deliveries:
        ids = [str(d.id) for d in deliveries]
        transaction.on_commit(lambda: _enqueue(ids))


def enabled_endpoints(merchant: Merchant, livemode: bool) -> list[WebhookEndpoint]:
    """The merchant's enabled endpoints of a mode. A merchant held by the API's key cache keeps them (under
    `accounts.signals.MEMO_ATTRIBUTE`) for as long as that cache keeps it: a change to an endpoint sends
    `merchant_changed`, which invalidates the merchant there (in every process), exactly as a revoked key does, so
    no request sees a stale list after the change commits, and an API request that records an event saves a query."""
    cached = merchant.__dict__.get(MEMO_ATTRIBUTE)
    if cached is not None and livemode in cached:
        return cached[livemode]
    endpoints = list(WebhookEndpoint.objects.filter(merchant=merchant, livemode=livemode, enabled=True))
    if cached is not None:
        cached[livemode] = endpoints
    return endpoints


def _enqueue(delivery_ids: list[str]) -> None:
    for delivery_id in delivery_ids:
        try:
            task_enqueue(DELIVERY_TASK, delivery_id=delivery_id)
        except Exception:  # the broker is down: the row is due, and the sweeper will enqueue it again
            logger.warning("webhooks.enqueue_failed", extra={"delivery_id": delivery_id})
            return


# --- Endpoints -------------------------------------------------------------------------------------------------------
def _clean_event_types(event_types: list[str]) -> list[str]:
    valid = {t for t in EventType.values}
    return sorted({t for t in event_types if t in valid})


def endpoint_create(*, merchant: Merchant, livemode: bool, url: str, event_types: list[str],
                    description: str = "") -> WebhookEndpoint:
    ssrf.webhook_url_validate(url, param="url")
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.create(merchant=merchant, livemode=livemode, url=url,
                                                  description=description, event_types=_clean_event_types(event_types))
        merchant_changed.send(sender=WebhookEndpoint, merchant_id=merchant.pk)  # see enabled_endpoints
    return endpoint


def endpoint_update(*, endpoint: WebhookEndpoint, url: str, event_types: list[str], description: str,
                    enabled: bool) -> WebhookEndpoint:
    ssrf.webhook_url_validate(url, param="url")
    with transaction.atomic():
        endpoint.url, endpoint.description, endpoint.enabled = url, description, enabled
        endpoint.event_types = _clean_event_types(event_types)
        endpoint.save(update_fields=["url", "description", "enabled", "event_types"])
        merchant_changed.send(sender=WebhookEndpoint, merchant_id=endpoint.merchant_id)  # see enabled_endpoints
        # Retries still pending follow the endpoint: to its new URL, or nowhere once it is disabled. A retry whose
        # event already has a delivery to the new URL is dropped (one delivery per event and URL).
        pending = Delivery.objects.filter(endpoint=endpoint, status=Delivery.Status.PENDING)
        if enabled:
            pending.exclude(url=url).exclude(event__deliveries__url=url).update(url=url)
        stopped = "endpoint disabled" if not enabled else "endpoint moved to another URL"
        (pending.exclude(url=url) if enabled else pending).update(
            status=Delivery.Status.FAILED, completed_at=timezone.now(), last_error=stopped)
    return endpoint


def event_send_test(*, endpoint: WebhookEndpoint) -> Event:
    """A `webhook.test` event delivered to this endpoint only, whatever types it subscribed to."""
    obj = {"id": str(endpoint.id), "object": "webhook_endpoint", "url": endpoint.url,
           "message": "This is a test event sent from the dashboard."}
    with transaction.atomic():
        return event_record(merchant=endpoint.merchant, livemode=endpoint.livemode, type=EventType.WEBHOOK_TEST,
                            obj=obj, endpoints=[endpoint])


# --- Signing secret --------------------------------------------------------------------------------------------------
def signing_secret_get_or_create(*, merchant: Merchant, livemode: bool) -> WebhookSecret:
    secret, _ = WebhookSecret.objects.get_or_create(
        merchant=merchant, livemode=livemode,
        defaults={"secret_encrypted": signing.secret_encrypt(signing.secret_generate())})
    return secret


def signing_secret_reveal(*, merchant: Merchant, livemode: bool) -> str:
    return signing.secret_decrypt(signing_secret_get_or_create(merchant=merchant, livemode=livemode).secret_encrypted)


def signing_secret_rotate(*, merchant: Merchant, livemode: bool) -> str:
    """A new secret signs from now on; the old one also signs for 24 hours so receivers can switch without loss."""
    with transaction.atomic():
        current = signing_secret_get_or_create(merchant=merchant, livemode=livemode)
        current = WebhookSecret.objects.select_for_update().get(pk=current.pk)
        new_secret = signing.secret_generate()
        current.previous_secret_encrypted = current.secret_encrypted
        current.secret_encrypted = signing.secret_encrypt(new_secret)
        current.rotated_at = timezone.now()
        current.save(update_fields=["previous_secret_encrypted", "secret_encrypted", "rotated_at"])
    return new_secret


# Per worker process, for SECRETS_CACHE_SECONDS: a busy worker signs hundreds of deliveries a second for a handful of
# merchants, and a rotation reaches every worker within that time (both secrets sign for 24 h after it anyway).
SECRETS_CACHE_SECONDS = 2.0
_secrets_cache: dict[tuple[str, bool], tuple[float, list[str]]] = {}


def signing_secrets_active(*, merchant_id, livemode: bool, cached: bool = False) -> list[str]:
    """The secrets that sign a delivery now: the current one, and the previous one within the grace period."""
    key = (str(merchant_id), livemode)
    if cached:
        hit = _secrets_cache.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
    secrets_ = _signing_secrets_load(merchant_id=merchant_id, livemode=livemode)
    _secrets_cache[key] = (time.monotonic() + SECRETS_CACHE_SECONDS, secrets_)
    return secrets_


def _signing_secrets_load(*, merchant_id, livemode: bool) -> list[str]:
    row = WebhookSecret.objects.filter(merchant_id=merchant_id, livemode=livemode).first()
    if row is None:
        row = signing_secret_get_or_create(merchant=Merchant.objects.get(pk=merchant_id), livemode=livemode)
    secrets_ = [signing.secret_decrypt(row.secret_encrypted)]
    if row.previous_secret_encrypted and row.rotated_at and timezone.now() - row.rotated_at < SECRET_ROTATION_GRACE:
        secrets_.append(signing.secret_decrypt(row.previous_secret_encrypted))
    return secrets_


# --- Deliveries ------------------------------------------------------------------------------------------------------
def delivery_resend(*, delivery: Delivery) -> Delivery:
    """Send a delivery again now, with a fresh retry schedule; its attempt history is kept."""
    now = timezone.now()
    with transaction.atomic():
        updated = Delivery.objects.filter(pk=delivery.pk).exclude(
            status=Delivery.Status.PENDING, locked_until__gt=now).update(
            status=Delivery.Status.PENDING, failures=0, next_attempt_at=now, completed_at=None, enqueued_at=now)
        if not updated:
            raise InvalidState("This delivery is being sent right now")
        transaction.on_commit(lambda: _enqueue([str(delivery.pk)]))
    delivery.refresh_from_db()
    return delivery


def events_purge(*, older_than: timedelta | None = None) -> int:
    cutoff = timezone.now() - (older_than or timedelta(days=settings.EVENT_RETENTION_DAYS))
    _, deleted = Event.objects.filter(created_at__lt=cutoff).delete()
    return deleted.get(Event._meta.label, 0)
