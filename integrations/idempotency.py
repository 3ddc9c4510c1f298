"""Idempotency-Key for every POST of the API (SPEC §1.3).

Every POST handler of the API is decorated with `idempotent` (core.api.ApiView refuses one that is not). The key is
claimed by inserting a row before the request runs: the unique constraint on (merchant, mode, key) makes exactly one
of any number of concurrent requests the owner; the others see the row and get 409 while it runs, the stored response
once it finished, or 422 when their body or path differ.

No transaction is opened around the request: transactions belong to the services it calls, and a service that calls a
rail commits before the call and records the answer after it (a rail call never runs inside a transaction). So the
wrapper cannot undo a request's effect; instead each service that commits an effect says so, by calling
`effect_record()` inside its own `transaction.atomic()` (or writes it inside `effect_statement()` when the effect
is one statement): that marks the claim `took_effect` in the same transaction, so the mark commits if and only if
the effect does. When the request ends:
- a response of 2xx is stored, and every retry gets it again;
- any other response, or a crash, is stored if the claim took effect (a retry gets that answer again and never acts
  twice: the 500 of a crash after a charge was handed to the rail), and otherwise released (a validation error, a
  business refusal rolled back by its service, a rail that refused before anything was written): its key may be
  retried.

While it runs, the owner holds a PostgreSQL session advisory lock on its claim (not a transaction: it lives with the
connection). A claim found "in progress" is taken over only when it is both older than
IDEMPOTENCY_LOCK_TIMEOUT_SECONDS and not locked: a live request keeps its claim however slow it is, while a dead
process's lock died with its connection. A dead owner whose claim took effect is not run again: its retries get
`request_interrupted`. Completing and releasing are conditional on the owner's token (the `locked_at` it wrote), so a
former owner can never touch a new owner's claim.

The protocol costs two statements on top of the request's own (the claim with its lock, and the stored response or
the release with the unlock), and one UPDATE in the transaction of the request's first effect. Its SQL is below, as it
is sent.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from core.errors import DomainError, ValidationFailed, as_domain_error, error_body
from integrations.models import ApiKey, IdempotencyKey

HEADER = "Idempotency-Key"
KEY_PATTERN = re.compile(r"[\x20-\x7e]{1,255}")
# The first key of the two-key advisory locks on claims: one namespace of its own ("IDEM"). The second is the claim's
# id as a signed 32-bit integer (`_lock_keys`; the claim's SQL computes the same).
LOCK_NAMESPACE = 0x4944454D

# A new claim and its lock, or no row when the key is taken (no error, so no savepoint is needed inside a caller's
# transaction). Nobody else can hold the lock of a row just inserted.
CLAIM_SQL = """
WITH claim AS (
    INSERT INTO integrations_idempotencykey
        (merchant_id, livemode, key, method, path, body_digest, created_at, locked_at, took_effect)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, false)
    ON CONFLICT DO NOTHING
    RETURNING id
)
SELECT id, pg_try_advisory_lock(%s, (id %% 4294967296 - 2147483648)::integer) FROM claim
"""

# The end of a request: its response stored on the claim, if `keep` is true or the claim took effect, else the claim
# released; then its lock ended. The unlock reads the writes, so they run first (a data-modifying WITH nobody reads
# runs after the main query). A taker that gets the lock before this statement commits still finds the claim under
# its row lock, and reads it done (or gone) once it commits, exactly as after an unlock.
FINISH_SQL = """
WITH kept AS (
    UPDATE integrations_idempotencykey SET response_status = %(status)s, response_body = %(body)s, locked_at = NULL
    WHERE id = %(id)s AND locked_at = %(token)s AND (%(keep)s OR took_effect)
    RETURNING 1
), released AS (
    DELETE FROM integrations_idempotencykey
    WHERE id = %(id)s AND locked_at = %(token)s AND NOT (%(keep)s OR took_effect) AND response_status IS NULL
    RETURNING 1
)
SELECT pg_advisory_unlock(%(namespace)s, %(lock)s)
FROM (SELECT (SELECT count(*) FROM kept) + (SELECT count(*) FROM released)) AS written
"""


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
    token: datetime | None = None  # the locked_at this owner wrote
    replay: Response | None = None
    effect_committed: bool = False  # an effect recorded by `effect_record` committed (no need to mark it again)
    unlocked: bool = False


# The claim of the request this thread (or task) is running, set by `idempotent` for the handler's duration.
_current: ContextVar[Claim | None] = ContextVar("idempotency_claim", default=None)


def effect_record() -> None:
    """Record that the request being served took effect: call it inside the `transaction.atomic()` that commits the
    effect. It marks the request's claim `took_effect` in that transaction, so the mark commits if and only if the
    effect does, and the request's answer is then kept whatever it is (see the module's docstring). Nothing to do
    outside a request with an Idempotency-Key (a task, the dashboard, a POST without the header)."""
    claim = _current.get()
    if claim is None or claim.effect_committed:
        return
    if not connection.in_atomic_block:
        raise RuntimeError("effect_record() belongs inside the transaction.atomic() that commits the effect")
    IdempotencyKey.objects.filter(pk=claim.row.pk, locked_at=claim.token).update(took_effect=True)
    transaction.on_commit(functools.partial(setattr, claim, "effect_committed", True))


@contextlib.contextmanager
def effect_statement() -> Iterator[None]:
    """Around an effect written by one SQL statement, which is a transaction of its own: no transaction is opened for
    it, unless the request holds a claim, whose mark must commit with the effect: then the statement and
    `effect_record` go in one `transaction.atomic()`. Inside a caller's transaction, both simply join it."""
    if connection.in_atomic_block:
        yield
        effect_record()
    elif _current.get() is None:
        yield
    else:
        with transaction.atomic():
            yield
            effect_record()


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
        row = IdempotencyKey(**scope, method=method, path=path, body_digest=digest, created_at=now, locked_at=now,
                             took_effect=False)
        if _claim_insert(row):
            return Claim(row=row, token=now)
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


def _claim_insert(row: IdempotencyKey) -> bool:
    """Insert a new claim and lock it (`CLAIM_SQL`), or False if the key is taken."""
    with connection.cursor() as cursor:
        cursor.execute(CLAIM_SQL, [row.merchant_id, row.livemode, row.key, row.method, row.path, row.body_digest,
                                   row.created_at, row.locked_at, LOCK_NAMESPACE])
        found = cursor.fetchone()
    if found is None:
        return False
    row.pk = found[0]
    row._state.adding = False
    row._state.db = connection.alias
    return True


def _lock_keys(row: IdempotencyKey) -> tuple[int, int]:
    return LOCK_NAMESPACE, row.pk % 2**32 - 2**31  # the second key is a signed 32-bit integer


def _lock(row: IdempotencyKey) -> bool:
    """The session advisory lock of a claim, held by its owner for as long as its request runs: not a transaction,
    nothing is left open around the request's own work, and it dies with the connection of a dead process."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", _lock_keys(row))
        return bool(cursor.fetchone()[0])


def _unlock(row: IdempotencyKey) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", _lock_keys(row))


def _take_over(*, row: IdempotencyKey, now: datetime) -> bool:
    """Take over a stale claim, if its owner is dead: a live owner holds the claim's lock for as long as it runs."""
    if not _lock(row):  # the lock is held: its owner is alive, only slow
        return False
    if IdempotencyKey.objects.filter(pk=row.pk, locked_at=row.locked_at, response_status__isnull=True).update(
            locked_at=now):
        return True
    _unlock(row)
    return False


def _interrupted(*, row: IdempotencyKey, token: datetime) -> Claim:
    """A dead owner's request committed something before it died (a charge handed to the rail, say): running it again
    could act twice, so the claim keeps an answer saying so, and every retry gets that answer."""
    claim = Claim(row=row, token=token)
    error = RequestInterrupted(param=HEADER)
    response = Response(error_body(error), status=error.status_code)
    try:
        idempotency_finish(claim=claim, response=response, keep=True)
    finally:
        if not claim.unlocked:
            _unlock(row)
    return Claim(row=row, replay=response)


def idempotency_finish(*, claim: Claim, response: Response, keep: bool) -> None:
    """End the claim (`FINISH_SQL`): store the response if `keep` or the claim took effect, else release the key; and
    end the claim's lock, in the same statement."""
    body = IdempotencyKey._meta.get_field("response_body").get_db_prep_save(response.data, connection)
    namespace, lock = _lock_keys(claim.row)
    with connection.cursor() as cursor:
        cursor.execute(FINISH_SQL, {"status": response.status_code, "body": body, "id": claim.row.pk,
                                    "token": claim.token, "keep": keep, "namespace": namespace, "lock": lock})
    claim.unlocked = True


def idempotency_keys_purge(*, older_than: timedelta | None = None) -> int:
    cutoff = timezone.now() - (older_than or timedelta(hours=settings.IDEMPOTENCY_KEY_TTL_HOURS))
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def idempotent(handler: Callable[..., Response]) -> Callable[..., Response]:
    """The Idempotency-Key protocol around a POST handler of an authenticated API view: decorate every one with it.

    Without the header the handler just runs. With it, the key is claimed (or the request answered at once: a replay,
    409 or 422), the claim is the current one while the handler runs (`effect_record`), and the claim is ended by the
    response (`idempotency_finish`: kept when it is a 2xx or the request took effect, else released)."""

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
        current = _current.set(claim)
        try:
            try:
                response = handler(view, request, *args, **kwargs)
            except BaseException as exc:
                # Kept if the request took effect before the crash (a charge handed to the rail): the retry must get
                # this answer again, not act a second time. Released otherwise.
                error = as_domain_error(exc)
                idempotency_finish(claim=claim, response=Response(error_body(error), status=error.status_code),
                                   keep=False)
                raise
            idempotency_finish(claim=claim, response=response, keep=200 <= response.status_code < 300)
        finally:
            _current.reset(current)
            if not claim.unlocked:
                _unlock(claim.row)
        return response

    wrapper.idempotent = True
    return wrapper
