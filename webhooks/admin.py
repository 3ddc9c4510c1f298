"""Staff views of events and deliveries: read-only, with resend for deliveries (audited)."""

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.models import AccountEvent
from accounts.services import audit_record
from core.admin import ReadOnlyAdmin, ReadOnlyInline, apply_to_each
from webhooks import services
from webhooks.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "type", "merchant", "livemode", "object_id"]
    list_filter = ["type", "livemode"]
    search_fields = ["=id", "=object_id", "merchant__name"]
    list_select_related = ["merchant"]


class DeliveryAttemptInline(ReadOnlyInline):
    model = DeliveryAttempt
    fields = readonly_fields = ["attempted_at", "status_code", "error", "duration_ms", "response_excerpt"]


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "event", "url", "status", "attempts", "last_status_code", "next_attempt_at"]
    list_filter = ["status", "livemode"]
    search_fields = ["=id", "=event__id", "url", "merchant__name"]
    list_select_related = ["event"]
    inlines = [DeliveryAttemptInline]
    actions = ["resend"]

    @admin.action(description="Resend the selected deliveries now")
    def resend(self, request: HttpRequest, queryset: QuerySet) -> None:
        apply_to_each(request, queryset, lambda d: delivery_resend_audited(delivery=d, staff=request.user),
                      done="Queued again")


def delivery_resend_audited(*, delivery: Delivery, staff) -> None:
    """A staff resend goes into the merchant's audit trail, in the transaction that queues it."""
    with transaction.atomic():
        services.delivery_resend(delivery=delivery)
        audit_record(merchant=delivery.merchant, actor=staff, action=AccountEvent.Action.DELIVERY_RESENT,
                     reason=f"delivery {delivery.pk} of event {delivery.event_id} to {delivery.url}",
                     details={"delivery_id": str(delivery.pk), "event_id": str(delivery.event_id),
                              "url": delivery.url, "livemode": delivery.livemode})


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ["url", "merchant", "livemode", "enabled", "created_at"]
    list_filter = ["livemode", "enabled"]
    search_fields = ["url", "merchant__name"]
