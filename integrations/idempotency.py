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

On PostgreSQL the protocol costs two statements on top of the request's own: the claim and its lock in one, the
request's first write carrying the `took_effect` mark in the same statement (when that write is its own transaction),
and the stored response (or the release) with the unlock in one. Every commit waits for the disk (synchronous_commit
stays on).
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

from core.errors import DomainError, ValidationFailed, as_domain_error, error_body
from integrations.models import ApiKey, IdempotencyKey

HEADER = "Idempotency-Key"
KEY_PATTERN = re.compile(r"[\x20-\x7e]{1,255}")
# Statements that may change rows (a WITH may carry an INSERT: core.inserts writes a charge and its event so).
WRITE_STATEMENT = re.compile(r"\s*(INSERT|UPDATE|DELETE|WITH|MERGE)\b", re.IGNORECASE)
# The first key of the two-key advisory locks on claims: one namespace of its own ("IDEM").
LOCK_NAMESPACE = 0x4944454D
# A statement that already opens with a WITH list: the mark joins the list (RECURSIVE, if any, stays first).
WITH_LIST = re.compile(r"\s*WITH(\s+RECURSIVE)?\s", re.IGNORECASE)
# The columns a claim is inserted with (the rest are NULL until the request ends).
CLAIM_FIELDS = ("merchant", "livemode", "key", "method", "path", "body_digest", "created_at", "locked_at",
                "took_effect")


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
    """Insert a new claim and lock it (a new row: nobody else can hold its lock), or False if the key is taken. On
    PostgreSQL one statement (the lock keys computed there as `_lock_keys` does), with no savepoint: a taken key is
    no error."""
    if connection.vendor != "postgresql":
        try:
            with transaction.atomic():
                row.save(force_insert=True)
        except IntegrityError:
            return False
        return True
    with connection.cursor() as cursor:
        cursor.execute(_sql()["claim"], [*_params(row, CLAIM_FIELDS), LOCK_NAMESPACE])
        found = cursor.fetchone()
    if found is None:
        return False
    row.pk = found[0]
    row._state.adding = False
    row._state.db = connection.alias
    return True


def _params(row: IdempotencyKey, names: tuple[str, ...]) -> list:
    return [row._meta.get_field(name).get_db_prep_save(getattr(row, row._meta.get_field(name).attname), connection)
            for name in names]


@functools.cache
def _sql() -> dict[str, str]:
    """The claim's statements on PostgreSQL, names from the model (quoted), placeholders for every value."""
    quote = connection.ops.quote_name
    meta = IdempotencyKey._meta
    table, pk = quote(meta.db_table), quote(meta.pk.column)
    column = {name: quote(meta.get_field(name).column) for name in (*CLAIM_FIELDS, "response_status",
                                                                   "response_body")}
    lock_key = f"({pk} %% 4294967296 - 2147483648)::integer"  # _lock_keys' second key, the same arithmetic
    columns = ", ".join(column[name] for name in CLAIM_FIELDS)
    # Table and column names from the model (quoted), placeholders for every value: nothing from a request.
    return {
        "claim": (f"WITH _claim AS (INSERT INTO {table} ({columns}) "  # noqa: S608
                  f"VALUES ({', '.join(['%s'] * len(CLAIM_FIELDS))}) ON CONFLICT DO NOTHING RETURNING {pk}) "
                  f"SELECT {pk}, pg_try_advisory_lock(%s, {lock_key}) FROM _claim"),
        "mark": (f"_idempotency_mark AS (UPDATE {table} SET {column['took_effect']} = true "  # noqa: S608
                 f"WHERE {pk} = %s AND {column['locked_at']} = %s)"),
        "complete": (f"UPDATE {table} SET {column['response_status']} = %s, "  # noqa: S608
                     f"{column['response_body']} = %s, "
                     f"{column['locked_at']} = NULL WHERE {pk} = %s AND {column['locked_at']} = %s"),
        "release": (f"DELETE FROM {table} WHERE {pk} = %s AND {column['locked_at']} = %s "  # noqa: S608
                    f"AND {column['response_status']} IS NULL"),
    }


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


def idempotency_complete(*, claim: Claim, response: Response, unlock: bool = False) -> None:
    """Store the response on the claim; `unlock`: and end the claim's lock, in the same statement on PostgreSQL."""
    if connection.vendor != "postgresql":
        IdempotencyKey.objects.filter(pk=claim.row.pk, locked_at=claim.token).update(
            response_status=response.status_code, response_body=response.data, locked_at=None)
    else:
        body = IdempotencyKey._meta.get_field("response_body").get_db_prep_save(response.data, connection)
        _finish(_sql()["complete"], [response.status_code, body, claim.row.pk, claim.token], claim, unlock)


def idempotency_release(*, claim: Claim, unlock: bool = False) -> None:
    """Forget the claim (its key may be used again); `unlock`: and end its lock, as `idempotency_complete`."""
    if connection.vendor != "postgresql":
        IdempotencyKey.objects.filter(pk=claim.row.pk, locked_at=claim.token, response_status__isnull=True).delete()
    else:
        _finish(_sql()["release"], [claim.row.pk, claim.token], claim, unlock)


def _finish(sql: str, params: list, claim: Claim, unlock: bool) -> None:
    with connection.cursor() as cursor:
        if unlock:
            # The unlock reads `_done`, so the write runs first (a data-modifying WITH nobody reads would run after
            # the main query). A taker that gets the lock before our commit still finds the claim under our row
            # lock, and reads it done (or gone) once we commit, exactly as after an unlock.
            cursor.execute(f"WITH _done AS ({sql} RETURNING 1) "  # noqa: S608 (our own statements, _sql())
                           "SELECT pg_advisory_unlock(%s, %s) FROM (SELECT count(*) FROM _done) AS _written",
                           [*params, *_lock_keys(claim.row)])
        else:
            cursor.execute(sql, params)


class EffectWatch:
    """An execute wrapper telling whether any write of a request committed. Each write registers `on_commit`: it
    fires at once in autocommit, when the transaction commits inside one, and never when its transaction or savepoint
    rolls back. Inside a transaction the request did not open (a test's), a write that outlived its savepoints is
    still waiting for that commit: it counts too.

    The first committed write is also written on the claim (`took_effect`) at once: if the process dies from there on,
    a retry finds the claim stale but effective, and gets `request_interrupted` instead of acting a second time. On
    PostgreSQL a write that is its own transaction (autocommit, no atomic block: the single statement of a charge and
    its event) carries the mark itself, in a WITH clause: the two commit together or not at all, in one round trip.
    Any other write is marked after its commit, by a statement of its own."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.committed = False
        self.inline = connection.vendor == "postgresql"

    def mark(self) -> None:
        if self.committed:
            return
        self.committed = True  # first: the update below is a write this watcher sees too
        IdempotencyKey.objects.filter(pk=self.claim.row.pk, locked_at=self.claim.token).update(took_effect=True)

    def __call__(self, execute: Callable, sql: Any, params: Any, many: bool, context: dict) -> Any:
        if self.committed:
            return execute(sql, params, many, context)
        write = WRITE_STATEMENT.match(sql) if isinstance(sql, str) else None
        if write is not None and self.inline and not many and params and isinstance(params, list | tuple) and \
                write.group(1).upper() != "MERGE" and _own_transaction(context["connection"]):
            result = execute(*self._marked(sql, params), many, context)
            self.committed = True  # the statement committed, and its mark with it
            return result
        result = execute(sql, params, many, context)
        if write is not None or not isinstance(sql, str):
            transaction.on_commit(self.mark)
        return result

    def _marked(self, sql: str, params: list | tuple) -> tuple[str, list]:
        """The statement with the mark in its WITH list: placeholders are positional, the mark's come first."""
        mark = _sql()["mark"]
        opening = WITH_LIST.match(sql)
        sql = sql[:opening.end()] + mark + ", " + sql[opening.end():] if opening else f"WITH {mark} {sql}"
        return sql, [self.claim.row.pk, self.claim.token, *params]

    def effect(self) -> bool:
        return self.committed or any(entry[1] == self.mark for entry in connection.run_on_commit)


def _own_transaction(connection: Any) -> bool:
    """Whether a statement run now is a transaction of its own (committed when it returns)."""
    return connection.get_autocommit() and not connection.in_atomic_block


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
        unlocked = False
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
                idempotency_complete(claim=claim, response=response, unlock=True)
            else:
                idempotency_release(claim=claim, unlock=True)
            unlocked = True
        finally:
            if not unlocked:
                _unlock(claim.row)
        return response

    wrapper.idempotent = True
    return wrapper
