"""A per-process cache of verified key pairs, so that an authenticated request costs no database query.

Each cached pair remembers the version token its key pair had in the shared cache when it was loaded. Every change
that authentication depends on (revocation, KYC status, suspension, the merchant's name or rate limit) sets a new
random token for the merchant's key pairs after it commits; the next request anywhere sees a token that differs
from its cached one and reloads from the database. Tokens are random, not counters, so a flushed Redis can never
make an old token match again. A cached pair is also reloaded after MAX_AGE_SECONDS, in case a token was lost.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from django.db import transaction

from accounts.signals import MEMO_ATTRIBUTE
from integrations import ratelimit
from integrations.models import ApiKey

logger = logging.getLogger(__name__)

MAX_AGE_SECONDS = 60.0
MAX_ENTRIES = 10_000


@dataclass
class Entry:
    api_key: ApiKey  # with .merchant loaded; shared by the requests of this process, read-only but for last_used_at
    version: str | None
    loaded_at: float


_entries: dict[str, Entry] = {}


def get(public_key: str, *, version: str | None) -> ApiKey | None:
    entry = _entries.get(public_key)
    if entry is None or entry.version != version or time.monotonic() - entry.loaded_at > MAX_AGE_SECONDS:
        return None
    return entry.api_key


def put(api_key: ApiKey, *, version: str | None) -> None:
    if len(_entries) >= MAX_ENTRIES:
        _entries.clear()
    # Other apps may keep what they derive from the merchant with it (the webhooks app: its endpoints) for as long as
    # this entry lives: a change to that data sends accounts.signals.merchant_changed, received here.
    setattr(api_key.merchant, MEMO_ATTRIBUTE, {})
    _entries[api_key.public_key] = Entry(api_key=api_key, version=version, loaded_at=time.monotonic())


def clear() -> None:
    _entries.clear()


def invalidate(public_keys: list[str]) -> None:
    """Make every process reload these key pairs on their next use: this one at once, the others once the current
    transaction commits (a reload before the commit is harmless: the token changes after it and forces another)."""
    for key in public_keys:
        _entries.pop(key, None)

    def bump() -> None:
        try:
            ratelimit.versions_bump(public_keys, uuid.uuid4().hex)
        except Exception:
            # The change is committed; other processes pick it up within MAX_AGE_SECONDS at the latest.
            logger.exception("authcache.invalidate_failed", extra={"keys": len(public_keys)})

    transaction.on_commit(bump)


def invalidate_merchant(merchant_id) -> None:
    invalidate(list(ApiKey.objects.filter(merchant_id=merchant_id).values_list("public_key", flat=True)))


def merchant_changed_receiver(sender, *, merchant_id, **kwargs) -> None:
    """Receives accounts.signals.merchant_changed (connected in IntegrationsConfig.ready)."""
    invalidate_merchant(merchant_id)
