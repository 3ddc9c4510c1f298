"""Idempotency-Key for every POST of the API (SPEC §1.3).

The key is claimed by inserting a row before the request runs: the unique constraint on (merchant, mode, key) makes
exactly one of any number of concurrent requests the owner; the others see the row and get 409 while it runs, the
stored response once it finished, or 422 when their body or path differ.

The request itself runs in one transaction with the storing of its response: its effect and the stored response
commit together or not at all, and an error (raised or returned) rolls the effect back. For as long as that
transaction lives, it holds a row lock on its claim. A claim found "in progress" is taken over only when it is both
older than IDEMPOTENCY_LOCK_TIMEOUT_SECONDS and not locked (on PostgreSQL, `FOR UPDATE NOWAIT`): a live request keeps
its claim however slow it is, while a dead process's lock died with its connection. Completing and releasing are
conditional on the owner's token (the `locked_at` it wrote), so a former owner can never touch a new owner's claim.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from config.errors import DomainError, ValidationFailed
from integrations.models import ApiKey, IdempotencyKey

HEADER = "Idempotency-Key"
KEY_PATTERN = re.compile(r"[\x20-\x7e]{1,255}")


class IdempotencyKeyReused(DomainError):
    status_code = 422
    type = "idempotency_error"
    code = "idempotency_key_reused"
    message = "This Idempotency-Key was used with a different request; use a new key for a new request"


class IdempotencyKeyInUse(DomainError):
    status_code = 409
    type = "conflict"
    code = "idempotency_key_in_use"
    message = "A request with this Idempotency-Key is still in progress; retry shortly"


@dataclass
class Claim:
    row: IdempotencyKey
    token: Any = None  # the locked_at this owner wrote
    replay: Response | None = None


@functools.cache
def _digest_key() -> bytes:
    return hmac.new(settings.SECRET_KEY.encode(), b"idempotency-body-digest", hashlib.sha256).digest()


def body_digest(raw: bytes) -> str:
    """The same JSON document gives the same digest whatever its key order or white space.

    Keyed (HMAC under a key derived from SECRET_KEY), never a bare hash: a card charge's body holds the card number
    and CVV, and with the rest of the body stored beside it a plain SHA-256 would give them away in a few thousand
    guesses."""
    try:
        canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, UnicodeDecodeError):
        canonical = raw
    return hmac.new(_digest_key(), canonical, hashlib.sha256).hexdigest()


def idempotency_claim(*, api_key: ApiKey, key: str, method: str, path: str, digest: str) -> Claim:
    scope = {"merchant_id": api_key.merchant_id, "livemode": api_key.livemode, "key": key}
    lock_timeout = timedelta(seconds=settings.IDEMPOTENCY_LOCK_TIMEOUT_SECONDS)
    for _ in range(3):  # a released row can vanish between our failed insert and our read: claim again
        now = timezone.now()
        try:
            with transaction.atomic():
                row = IdempotencyKey.objects.create(**scope, method=method, path=path, body_digest=digest,
                                                    locked_at=now)
            return Claim(row=row, token=now)
        except IntegrityError:
            row = IdempotencyKey.objects.filter(**scope).first()
        if row is None:
            continue
        if (row.method, row.path, row.body_digest) != (method, path, digest):
            raise IdempotencyKeyReused(param=HEADER)
        if row.response_status is not None:
            return Claim(row=row, replay=Response(row.response_body, status=row.response_status,
                                                  headers={"Idempotent-Replayed": "true"}))
        if row.locked_at is not None and now - row.locked_at < lock_timeout:
            raise IdempotencyKeyInUse(param=HEADER)
        if _take_over(row=row, now=now):
            return Claim(row=row, token=now)
        raise IdempotencyKeyInUse(param=HEADER)
    raise IdempotencyKeyInUse(param=HEADER)


def _take_over(*, row: IdempotencyKey, now) -> bool:
    """Take over a stale claim, if its owner is dead: a live owner holds the row lock for as long as it runs."""
    try:
        with transaction.atomic():
            stale = (IdempotencyKey.objects.select_for_update(nowait=True)
                     .filter(pk=row.pk, locked_at=row.locked_at, response_status__isnull=True))
            if not stale.exists():
                return False
            return bool(stale.update(locked_at=now))
    except DatabaseError:  # the lock is held: its owner is alive, only slow
        return False


def _hold(*, claim: Claim) -> bool:
    """Inside the request's transaction: lock our claim until commit, if it is still ours."""
    return (IdempotencyKey.objects.select_for_update()
            .filter(pk=claim.row.pk, locked_at=claim.token, response_status__isnull=True).exists())


def idempotency_complete(*, claim: Claim, response: Response) -> None:
    IdempotencyKey.objects.filter(pk=claim.row.pk, locked_at=claim.token).update(
        response_status=response.status_code, response_body=response.data, locked_at=None)


def idempotency_release(*, claim: Claim) -> None:
    IdempotencyKey.objects.filter(pk=claim.row.pk, locked_at=claim.token, response_status__isnull=True).delete()


def idempotency_keys_purge(*, older_than: timedelta | None = None) -> int:
    cutoff = timezone.now() - (older_than or timedelta(hours=settings.IDEMPOTENCY_KEY_TTL_HOURS))
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def idempotent(handler: Callable[..., Response]) -> Callable[..., Response]:
    """Wrap a POST handler of an authenticated API view with the Idempotency-Key protocol."""

    @functools.wraps(handler)
    def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(HEADER)
        if key is None:
            return handler(view, request, *args, **kwargs)
        if not KEY_PATTERN.fullmatch(key):
            raise ValidationFailed(param=HEADER, details=[{
                "param": HEADER, "code": "invalid_idempotency_key",
                "message": "Idempotency-Key must be 1 to 255 printable ASCII characters.",
            }])
        claim = idempotency_claim(api_key=request.auth, key=key, method=request.method, path=request.path,
                                  digest=body_digest(request.body))
        if claim.replay is not None:
            return claim.replay
        try:
            with transaction.atomic():
                if not _hold(claim=claim):
                    raise IdempotencyKeyInUse(param=HEADER)
                response = handler(view, request, *args, **kwargs)
                if 200 <= response.status_code < 300:
                    idempotency_complete(claim=claim, response=response)
                else:
                    transaction.set_rollback(True)  # an error leaves no effect, raised or returned
        except BaseException:
            idempotency_release(claim=claim)
            raise
        if not 200 <= response.status_code < 300:
            idempotency_release(claim=claim)
        return response

    wrapper.idempotent = True
    return wrapper
