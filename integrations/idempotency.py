"""Idempotency-Key for every POST of the API (SPEC §1.3).

The key is claimed by inserting a row before the request runs: the unique constraint on (merchant, mode, key) makes
exactly one of any number of concurrent requests the owner; the others see the row and get 409 while it runs, the
stored response once it finished, or 422 when their body or path differ.

No transaction is opened around the request: transactions belong to the services it calls, and a service that calls a
rail commits before the call and records the answer after it (a rail call never runs inside a transaction). So the
wrapper cannot undo a request's effect; instead it watches, on the request's database connection, whether any write
of the request committed:
- a request that committed nothing (a validation error, a business refusal rolled back by its service, a rail that
  refused before anything was written) is released: its key may be retried;
- a request that committed something keeps its response, whatever it is (a 201, or the 500 of a crash after a charge
  was handed to the rail): a retry gets that response again and never acts twice.

While it runs, the owner holds a PostgreSQL session advisory lock on its claim (not a transaction: it lives with the
connection). A claim found "in progress" is taken over only when it is both older than
IDEMPOTENCY_LOCK_TIMEOUT_SECONDS and not locked: a live request keeps its claim however slow it is, while a dead
process's lock died with its connection (elsewhere than on PostgreSQL, the age alone decides). Completing and
releasing are conditional on the owner's token (the `locked_at` it wrote), so a former owner can never touch a new
owner's claim.
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
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from config.errors import DomainError, ValidationFailed, as_domain_error, error_body
from integrations.models import ApiKey, IdempotencyKey

HEADER = "Idempotency-Key"
KEY_PATTERN = re.compile(r"[\x20-\x7e]{1,255}")
# Statements that may change rows (a WITH may carry an INSERT: config.inserts writes a charge and its event so).
WRITE_STATEMENT = re.compile(r"\s*(INSERT|UPDATE|DELETE|WITH|MERGE)\b", re.IGNORECASE)
# The first key of the two-key advisory locks on claims: one namespace of its own ("IDEM").
LOCK_NAMESPACE = 0x4944454D


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


class RequestInterrupted(DomainError):
    status_code = 500
    type = "api_error"
    code = "request_interrupted"
    message = ("The first request with this Idempotency-Key stopped after it took effect; it is not run again: find "
               "its result (list by referenceId) instead of retrying")


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
    except (ValueError, UnicodeDecodeError, RecursionError):  # the view refuses such a body (malformed_json)
        canonical = raw
    return hmac.new(_digest_key(), canonical, hashlib.sha256).hexdigest()


def idempotency_claim(*, api_key: ApiKey, key: str, method: str, path: str, digest: str) -> Claim:
    """Claim the key for this request (and lock the claim, see `_lock`), or say why not: a replay, 409 or 422."""
    scope = {"merchant_id": api_key.merchant_id, "livemode": api_key.livemode, "key": key}
    lock_timeout = timedelta(seconds=settings.IDEMPOTENCY_LOCK_TIMEOUT_SECONDS)
    for _ in range(3):  # a released row can vanish between our failed insert and our read: claim again
        now = timezone.now()
        try:
            with transaction.atomic():
                row = IdempotencyKey.objects.create(**scope, method=method, path=path, body_digest=digest,
                                                    locked_at=now)
            _lock(row)  # a new row: nobody else can hold its lock
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
            if row.took_effect:
                return _interrupted(row=row, token=now)
            return Claim(row=row, token=now)
        raise IdempotencyKeyInUse(param=HEADER)
    raise IdempotencyKeyInUse(param=HEADER)


def _lock_keys(row: IdempotencyKey) -> tuple[int, int]:
    return LOCK_NAMESPACE, row.pk % 2**32 - 2**31  # the second key is a signed 32-bit integer


def _lock(row: IdempotencyKey) -> bool:
    """The session advisory lock of a claim, held by its owner for as long as its request runs: not a transaction,
    nothing is left open around the request's own work, and it dies with the connection of a dead process."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", _lock_keys(row))
        return bool(cursor.fetchone()[0])


def _unlock(row: IdempotencyKey) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", _lock_keys(row))


def _take_over(*, row: IdempotencyKey, now) -> bool:
    """Take over a stale claim, if its owner is dead: a live owner holds the claim's lock for as long as it runs."""
    if not _lock(row):  # the lock is held: its owner is alive, only slow
        return False
    if IdempotencyKey.objects.filter(pk=row.pk, locked_at=row.locked_at, response_status__isnull=True).update(
            locked_at=now):
        return True
    _unlock(row)
    return False


def _interrupted(*, row: IdempotencyKey, token: Any) -> Claim:
    """A dead owner's request committed something before it died (a charge handed to the rail, say): running it again
    could act twice, so the claim keeps an answer saying so, and every retry gets that answer."""
    claim = Claim(row=row, token=token)
    error = RequestInterrupted(param=HEADER)
    response = Response(error_body(error), status=error.status_code)
    try:
        idempotency_complete(claim=claim, response=response)
    finally:
        _unlock(row)
    return Claim(row=row, replay=response)


def idempotency_complete(*, claim: Claim, response: Response) -> None:
    IdempotencyKey.objects.filter(pk=claim.row.pk, locked_at=claim.token).update(
        response_status=response.status_code, response_body=response.data, locked_at=None)


def idempotency_release(*, claim: Claim) -> None:
    IdempotencyKey.objects.filter(pk=claim.row.pk, locked_at=claim.token, response_status__isnull=True).delete()


class EffectWatch:
    """An execute wrapper telling whether any write of a request committed. Each write registers `on_commit`: it
    fires at once in autocommit, when the transaction commits inside one, and never when its transaction or savepoint
    rolls back. Inside a transaction the request did not open (a test's), a write that outlived its savepoints is
    still waiting for that commit: it counts too.

    The first committed write is also written on the claim (`took_effect`) at once: if the process dies from there on,
    a retry finds the claim stale but effective, and gets `request_interrupted` instead of acting a second time."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.committed = False

    def mark(self) -> None:
        if self.committed:
            return
        self.committed = True  # first: the update below is a write this watcher sees too
        IdempotencyKey.objects.filter(pk=self.claim.row.pk, locked_at=self.claim.token).update(took_effect=True)

    def __call__(self, execute: Callable, sql: Any, params: Any, many: bool, context: dict) -> Any:
        result = execute(sql, params, many, context)
        if not self.committed and (not isinstance(sql, str) or WRITE_STATEMENT.match(sql)):
            transaction.on_commit(self.mark)
        return result

    def effect(self) -> bool:
        return self.committed or any(entry[1] == self.mark for entry in connection.run_on_commit)


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
        watch = EffectWatch(claim)
        try:
            try:
                with connection.execute_wrapper(watch):
                    response = handler(view, request, *args, **kwargs)
            except BaseException as exc:
                if watch.effect():
                    # Something was committed (a charge handed to the rail) before the crash: the retry must get
                    # this answer again, not act a second time.
                    error = as_domain_error(exc)
                    idempotency_complete(claim=claim, response=Response(error_body(error), status=error.status_code))
                else:
                    idempotency_release(claim=claim)
                raise
            if 200 <= response.status_code < 300 or watch.effect():
                idempotency_complete(claim=claim, response=response)
            else:
                idempotency_release(claim=claim)
        finally:
            _unlock(claim.row)
        return response

    wrapper.idempotent = True
    return wrapper
