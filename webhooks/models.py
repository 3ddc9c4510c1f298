from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Merchant
from core.ids import uuid7


class EventType(models.TextChoices):
    PAYIN_CREATED = "payin.created"
    PAYIN_PROCESSING = "payin.processing"
    PAYIN_PAID = "payin.paid"
    PAYIN_FAILED = "payin.failed"
    PAYIN_EXPIRED = "payin.expired"
    PAYIN_CANCELED = "payin.canceled"
    PAYIN_PARTIALLY_REFUNDED = "payin.partially_refunded"
    PAYIN_REFUNDED = "payin.refunded"
    PAYIN_CHARGEBACK = "payin.chargeback"
    REFUND_SUCCEEDED = "refund.succeeded"
    REFUND_FAILED = "refund.failed"
    PAYOUT_CREATED = "payout.created"
    PAYOUT_PROCESSING = "payout.processing"
    PAYOUT_COMPLETED = "payout.completed"
    PAYOUT_FAILED = "payout.failed"
    PAYOUT_CANCELED = "payout.canceled"
    PAYOUT_RETURNED = "payout.returned"
    UNMATCHED_PAYMENT_CREATED = "unmatched_payment.created"
    UNMATCHED_PAYMENT_UPDATED = "unmatched_payment.updated"
    DISPUTE_CREATED = "dispute.created"
    DISPUTE_UPDATED = "dispute.updated"
    DISPUTE_CLOSED = "dispute.closed"
    WEBHOOK_TEST = "webhook.test"


class Event(models.Model):
    """A status change, written in the same transaction as the change (the outbox). `payload` is the envelope sent."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # No index of its own: `event_list` starts with it (migration 0006).
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="events", db_index=False)
    livemode = models.BooleanField()
    type = models.CharField(max_length=40, choices=EventType.choices)
    object_id = models.CharField(max_length=64, blank=True)
    payload = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["merchant", "livemode", "created_at", "id"], name="event_list"),
            models.Index(fields=["merchant", "livemode", "object_id", "created_at"], name="event_by_object"),
            models.Index(fields=["created_at"], name="event_purge"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class WebhookEndpoint(models.Model):
    """A URL the merchant registered for one mode, with the event types it wants (empty: all)."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="webhook_endpoints")
    livemode = models.BooleanField()
    url = models.CharField(max_length=2048)
    description = models.CharField(max_length=200, blank=True)
    event_types = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["merchant", "livemode", "enabled"])]

    def __str__(self) -> str:
        return self.url

    def wants(self, event_type: str) -> bool:
        return self.enabled and (not self.event_types or event_type in self.event_types)


class WebhookSecret(models.Model):
    """The signing secret of one merchant and mode, encrypted; the previous one signs too for 24 h after rotation."""

    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="+")
    livemode = models.BooleanField()
    secret_encrypted = models.TextField()
    previous_secret_encrypted = models.TextField(blank=True)
    rotated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["merchant", "livemode"], name="webhook_secret_unique")]

    def __str__(self) -> str:
        return f"signing secret of {self.merchant_id} ({'live' if self.livemode else 'test'})"


class Delivery(models.Model):
    """One event to one URL. The database is the truth: a task claims the row, POSTs, and records the attempt; the
    sweeper re-enqueues rows that are due and not claimed, so a lost message only delays a webhook."""

    class Status(models.TextChoices):
        PENDING = "PENDING"
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # No index of their own: `delivery_once_per_event_and_url` starts with the event, `delivery_list` with the
    # merchant (migration 0006).
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="+", db_index=False)
    livemode = models.BooleanField()
    endpoint = models.ForeignKey(WebhookEndpoint, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="deliveries")
    url = models.CharField(max_length=2048)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # Failed attempts since the schedule (re)started: a manual resend starts the schedule again.
    failures = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    locked_until = models.DateTimeField(null=True, blank=True)
    # When a message for this delivery last went to the broker (for its due time): the sweeper leaves it alone for
    # WEBHOOK_REENQUEUE_SECONDS after that, so a backlog is not flooded with duplicates.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "deliveries"
        constraints = [models.UniqueConstraint(fields=["event", "url"], name="delivery_once_per_event_and_url")]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="delivery_due"),
            models.Index(fields=["merchant", "livemode", "created_at", "id"], name="delivery_list"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.url}"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    attempted_at = models.DateTimeField(default=timezone.now)
    url = models.CharField(max_length=2048)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    response_excerpt = models.TextField(blank=True)

    class Meta:
        ordering = ["-attempted_at", "-id"]

    def __str__(self) -> str:
        return f"{self.status_code or self.error} at {self.attempted_at}"
