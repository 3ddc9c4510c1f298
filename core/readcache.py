"""API bodies of single objects, kept per process for the reads merchants poll (`GET /payin/{id}`), and served only
while the object's freshness token in the shared cache is the one they were stored under.

- A read names its object's token key before authentication (`ApiView.freshness_key`); the authentication's Redis
  round trip fetches the token with the rate-limit counter (its rate-limit gate), so a hit costs no query and no
  round trip of its own.
- A body is stored only under a token read *before* the body was loaded from the database. Every change to such an
  object calls `changed` inside its transaction: this process's copy goes at once, and the token is deleted
  everywhere once the change commits. So a body stored from a read that raced the change sits under a token no
  later request can hold, and no request that starts after the commit is served the old body.
- With no token (an object never read, one just changed, a flushed Redis) the read creates one and stores nothing:
  the next read loads and stores under it. An absent token never matches, so a lost token can only cost a query.
- MAX_AGE_SECONDS bounds how long a body could outlive a lost delete (Redis unreachable at the moment of a commit),
  as the API's key cache bounds a cached key pair.
- The tokens are in Redis, which every process shares: a change the Celery worker makes (an expiry, a refund
  settled) deletes the token that the web processes' copies were stored under.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.db import transaction

from core import cache as shared_cache

logger = logging.getLogger(__name__)

MAX_AGE_SECONDS = 10.0
MAX_ENTRIES = 5_000


@dataclass(frozen=True)
class Entry:
    token: str
    merchant_id: object
    livemode: bool
    body: dict  # shared by the requests of this process: never mutated
    stored_at: float


_entries: dict[str, Entry] = {}


def key(kind: str, object_id) -> str:
    return f"fresh:{kind}:{object_id}"


def get(key_: str, token: str | None, *, merchant_id, livemode: bool) -> dict | None:
    """The body stored under this token for this merchant and mode, or None (the caller reads the database)."""
    if token is None:
        return None
    entry = _entries.get(key_)
    if (entry is None or entry.token != token or entry.merchant_id != merchant_id or entry.livemode != livemode
            or time.monotonic() - entry.stored_at > MAX_AGE_SECONDS):
        return None
    return entry.body


def put(key_: str, token: str | None, body: dict, *, merchant_id, livemode: bool) -> None:
    """Store a body just loaded from the database under the token read before that load; with no token, create one
    for the next read instead."""
    if token is None:
        try:
            shared_cache.token_ensure(key_)
        except Exception:  # the cache is away: the next read loads from the database again, nothing worse
            logger.warning("readcache.token_failed", extra={"key": key_})
        return
    if len(_entries) >= MAX_ENTRIES:
        _entries.clear()
    _entries[key_] = Entry(token=token, merchant_id=merchant_id, livemode=livemode, body=body,
                           stored_at=time.monotonic())


def changed(key_: str) -> None:
    """Call inside the transaction that changes the object: no process serves its old body once the change commits
    (this one stops at once; a read meanwhile may store it again, under the token deleted at the commit)."""
    _entries.pop(key_, None)

    def delete() -> None:
        try:
            shared_cache.keys_delete([key_])
        except Exception:
            # The change is committed; other processes stop serving the old body within MAX_AGE_SECONDS.
            logger.exception("readcache.invalidate_failed", extra={"key": key_})

    transaction.on_commit(delete)


def clear() -> None:
    _entries.clear()
