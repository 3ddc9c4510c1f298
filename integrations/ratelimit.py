"""Fixed-window counters in the shared cache: requests per second per key pair, failed authentications per IP.

On Redis each hit is one pipelined INCR + EXPIRE: atomic across every web process. On the local-memory cache of
the laptop default, Django's add/incr serve, atomic within the one process that runs there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache

from config.errors import RateLimited
from integrations.models import ApiKey

AUTH_FAILURE_WINDOW = 60


@dataclass(frozen=True)
class RateLimitState:
    limit: int
    remaining: int
    reset: int


def _redis_client():
    """The raw Redis client behind the default cache, or None when the cache is not Redis."""
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        return backend._cache.get_client(write=True)
    return None


def _hit(key: str, window: int) -> int:
    """Count one hit on `key` and return the count in the current window."""
    redis = _redis_client()
    if redis is not None:
        pipe = redis.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, window + 1, nx=True)
        return int(pipe.execute()[0])
    cache.add(key, 0, timeout=window + 1)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window + 1)
        return 1


def _get(key: str) -> int:
    redis = _redis_client()
    if redis is not None:
        value = redis.get(key)
        return int(value) if value is not None else 0
    return int(cache.get(key) or 0)


def key_rate_limit(api_key: ApiKey) -> RateLimitState:
    limit = api_key.merchant.api_rate_limit or settings.API_RATE_LIMIT
    now = time.time()
    window_start = int(now)
    count = _hit(f"rl:key:{api_key.pk}:{window_start}", 1)
    state = RateLimitState(limit=limit, remaining=max(limit - count, 0), reset=1)
    if count > limit:
        raise RateLimited(headers={"Retry-After": "1", "RateLimit-Limit": str(limit), "RateLimit-Remaining": "0",
                                   "RateLimit-Reset": "1"})
    return state


def _auth_failure_key(ip: str) -> str:
    return f"rl:authfail:{ip}:{int(time.time()) // AUTH_FAILURE_WINDOW}"


def auth_failures_exceeded(ip: str) -> bool:
    return _get(f"rl:authblock:{ip}") > 0


def auth_failure_record(ip: str) -> None:
    """After too many failures in a minute the IP is refused for a minute, whatever credentials it sends."""
    if _hit(_auth_failure_key(ip), AUTH_FAILURE_WINDOW) >= settings.API_AUTH_FAILURES_PER_MINUTE:
        redis = _redis_client()
        if redis is not None:
            redis.set(f"rl:authblock:{ip}", 1, ex=AUTH_FAILURE_WINDOW)
        else:
            cache.set(f"rl:authblock:{ip}", 1, timeout=AUTH_FAILURE_WINDOW)
