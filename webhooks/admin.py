"""Staff views of events and deliveries: read-only, with resend for deliveries."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from config.admin import ReadOnlyAdmin, ReadOnlyInline, apply_to_each
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
        apply_to_each(request, queryset, lambda d: services.delivery_resend(delivery=d), done="Queued again")


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ["url", "merchant", "livemode", "enabled", "created_at"]
    list_filter = ["livemode", "enabled"]
    search_fields = ["url", "merchant__name"]
