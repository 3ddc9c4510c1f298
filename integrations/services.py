"""Writes of the integrations app: API key pairs."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from accounts.models import Merchant
from core.errors import DomainError, InvalidState
from integrations import authcache, keys
from integrations.models import ApiKey

LAST_USED_RESOLUTION = timedelta(minutes=1)


class LiveKeysNeedKyc(DomainError):
    status_code = 403
    type = "permission_error"
    code = "kyc_not_approved"
    message = "Live keys can be created once your KYC is approved"


def apikey_create(*, merchant: Merchant, livemode: bool, label: str = "",
                  pair: keys.KeyPair | None = None) -> tuple[ApiKey, str]:
    """Create a key pair and return it with its secret, which exists in plain text only in this return value."""
    if livemode and not merchant.kyc_approved:
        raise LiveKeysNeedKyc()
    pair = pair or keys.generate_pair(livemode=livemode)
    api_key = ApiKey.objects.create(
        merchant=merchant, livemode=livemode, label=label.strip(), public_key=pair.public_key,
        secret_digest=keys.secret_digest(pair.secret_key), secret_last4=pair.secret_key[-4:],
    )
    return api_key, pair.secret_key


def apikey_revoke(*, api_key: ApiKey) -> None:
    with transaction.atomic():
        if not ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
            raise InvalidState("This key pair is already revoked")
        authcache.invalidate([api_key.public_key])
    api_key.revoked_at = timezone.now()


def apikey_touch(*, api_key: ApiKey) -> None:
    """Record use at most once a minute per key: a write on every request would make the key row a hot spot."""
    now = timezone.now()
    if api_key.last_used_at is not None and now - api_key.last_used_at < LAST_USED_RESOLUTION:
        return
    # Conditional on the value we read, so of many concurrent requests one writes and the rest do nothing.
    ApiKey.objects.filter(pk=api_key.pk, last_used_at=api_key.last_used_at).update(last_used_at=now)
    api_key.last_used_at = now
