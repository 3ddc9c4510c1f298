from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from accounts.models import Merchant
from core.errors import NotFound, ValidationFailed
from webhooks.models import Delivery, Event, EventType, WebhookEndpoint


def event_get(*, merchant: Merchant, livemode: bool, event_id) -> Event:
    event = Event.objects.filter(merchant=merchant, livemode=livemode, pk=event_id).first()
    if event is None:
        raise NotFound("No such event")
    return event


def event_list(*, merchant: Merchant, livemode: bool, type: str | None = None,
               object_id: str | None = None) -> QuerySet[Event]:
    events = Event.objects.filter(merchant=merchant, livemode=livemode).only("id", "payload", "created_at")
    if type is not None:
        if type not in EventType.values:
            raise ValidationFailed(param="type", details=[
                {"param": "type", "code": "invalid_choice", "message": f"Unknown event type '{type}'."}])
        events = events.filter(type=type)
    if object_id is not None:
        events = events.filter(object_id=object_id)
    return events


def event_timeline(*, merchant: Merchant, livemode: bool, object_ids: list[str], limit: int) -> list[Event]:
    """The events of these objects (at most `limit`), oldest first, each with its deliveries prefetched."""
    deliveries = Prefetch("deliveries", queryset=Delivery.objects.order_by("created_at", "id"))
    return list(Event.objects.filter(merchant=merchant, livemode=livemode, object_id__in=object_ids)
                .only("id", "type", "object_id", "created_at").order_by("created_at", "id")
                .prefetch_related(deliveries)[:limit])


def endpoint_list(*, merchant: Merchant, livemode: bool) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(merchant=merchant, livemode=livemode).order_by("created_at")


def delivery_list(*, merchant: Merchant, livemode: bool, status: str | None = None,
                  event_id: str | None = None) -> QuerySet[Delivery]:
    deliveries = Delivery.objects.filter(merchant=merchant, livemode=livemode).select_related("event")
    if status:
        deliveries = deliveries.filter(status=status)
    if event_id:
        deliveries = deliveries.filter(event_id=event_id)
    return deliveries


def delivery_get(*, merchant: Merchant, livemode: bool, delivery_id) -> Delivery | None:
    return (Delivery.objects.filter(merchant=merchant, livemode=livemode, pk=delivery_id)
            .select_related("event", "endpoint").first())
