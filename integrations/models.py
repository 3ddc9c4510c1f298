from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from accounts.models import Merchant
from core.ids import uuid7


class ApiKey(models.Model):
    """One API key pair. The secret is never stored: only its keyed HMAC-SHA256 digest and its last four characters
    (so the merchant can tell keys apart)."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="api_keys")
    livemode = models.BooleanField()
    label = models.CharField(max_length=100, blank=True)
    public_key = models.CharField(max_length=64, unique=True)
    secret_digest = models.CharField(max_length=64, editable=False)
    secret_last4 = models.CharField(max_length=4, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["merchant", "livemode", "created_at"])]

    def __str__(self) -> str:
        return self.public_key

    @property
    def mode(self) -> str:
        return "live" if self.livemode else "test"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class IdempotencyKey(models.Model):
    """A POST's Idempotency-Key, claimed before the request runs and holding its response once it finished."""

    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="+")
    livemode = models.BooleanField()
    key = models.CharField(max_length=255)
    method = models.CharField(max_length=8)
    path = models.TextField()
    body_digest = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True)
    response_body = models.JSONField(null=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(default=timezone.now)
    locked_at = models.DateTimeField(null=True, help_text="Set while the first request is still running.")
    took_effect = models.BooleanField(
        default=False, help_text="A write of the first request committed: the request is never run a second time.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["merchant", "livemode", "key"], name="idempotency_key_unique"),
        ]
        indexes = [models.Index(fields=["created_at"])]

    def __str__(self) -> str:
        return self.key
