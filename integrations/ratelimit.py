"""What the shared cache knows about a request, in one round trip: is the caller's IP blocked, how many requests its
key pair made this second, the version token of the key pair (see `authcache`) and, for a read the API caches, the
freshness token of the object it reads (see `core.readcache`).

The four or five commands (GET, SET NX, INCR, GET, GET) go to Redis as one pipeline on the client `core.cache` keeps
per process: counters that are atomic across every web process, for a single round trip. When Redis cannot answer
(within its 1 s timeout), the request is answered 503 `service_unavailable` (`CountersUnavailable`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from redis.client import Pipeline
from redis.exceptions import RedisError

from core.cache import TOKEN_TTL, redis_client, token_ensure
from core.errors import RateLimited, ServiceUnavailable

AUTH_FAILURE_WINDOW = 60
RATE_WINDOW = 1
VERSION_TOKEN_TTL = TOKEN_TTL


@dataclass(frozen=True)
class RateLimitState:
    limit: int
    remaining: int
    reset: int


@dataclass(frozen=True)
class Gate:
    blocked: bool
    count: int
    version: str | None
    rate_key: str
    freshness: str | None = None  # the token of the object named by gate(freshness_key=...)


class CountersUnavailable(ServiceUnavailable):
    message = "The service cannot check rate limits right now; retry in a moment"

    def __init__(self) -> None:
        super().__init__(headers={"Retry-After": "1"})


def _block_key(ip: str, public_key: str | None = None) -> str:
    """The IP's block (it refuses the IP's failures) or, with a public key, the block of that key from that IP (it
    refuses every request, so that a guesser cannot tell a right secret from a wrong one)."""
    return f"rl:authblock:{ip}:{public_key}" if public_key else f"rl:authblock:{ip}"


def version_key(public_key: str) -> str:
    return f"authv:{public_key}"


def gate(*, ip: str, public_key: str, freshness_key: str | None = None) -> Gate:
    rate_key = f"rl:key:{public_key}:{int(time.time())}"
    try:
        pipeline = redis_client().pipeline(transaction=False)
        pipeline.get(_block_key(ip, public_key))
        # SET … NX then INCR gives the counter its expiry on any Redis version (EXPIRE … NX needs Redis 7).
        pipeline.set(rate_key, 0, ex=RATE_WINDOW + 1, nx=True)
        pipeline.incr(rate_key)
        pipeline.get(version_key(public_key))
        if freshness_key is not None:
            pipeline.get(freshness_key)
        blocked, _, count, version, *freshness = pipeline.execute()
    except RedisError as error:
        raise CountersUnavailable() from error
    return Gate(blocked=blocked is not None, count=count, version=version, rate_key=rate_key,
                freshness=freshness[0] if freshness else None)


def ip_blocked(ip: str) -> bool:
    try:
        return redis_client().get(_block_key(ip)) is not None
    except RedisError as error:
        raise CountersUnavailable() from error


def _release(pipeline: Pipeline, rate_key: str) -> None:
    pipeline.decr(rate_key)
    pipeline.expire(rate_key, RATE_WINDOW + 1)  # again: a DECR after the window would leave a key with no expiry


def rate_count_release(gate_: Gate) -> None:
    """Take a request back out of the key pair's counter: a refused caller must not spend the merchant's budget."""
    try:
        pipeline = redis_client().pipeline(transaction=False)
        _release(pipeline, gate_.rate_key)
        pipeline.execute()
    except RedisError:
        pass  # the cache is away: nothing to give back to


def rate_limit_check(gate_: Gate, *, limit: int) -> RateLimitState:
    if gate_.count > limit:
        raise RateLimited(headers={"Retry-After": "1", "RateLimit-Limit": str(limit), "RateLimit-Remaining": "0",
                                   "RateLimit-Reset": "1"})
    return RateLimitState(limit=limit, remaining=limit - gate_.count, reset=RATE_WINDOW)


def auth_failure_record(ip: str, *, public_key: str | None = None, rate_key: str | None = None) -> bool:
    """Count a failed authentication, and say whether to answer it 429 rather than 401.

    Two counters per minute: the IP's failures and, when the request named a public key, that key's failures from
    that IP. At API_AUTH_FAILURES_PER_MINUTE, the IP's *failures* are answered 429 for a minute (requests that
    authenticate from it still work: one bad client behind a NAT locks out no one else), and that public key is
    refused from that IP for a minute, right secret or wrong (so the answer tells a guesser nothing). The failed
    request is taken back out of the key pair's rate counter, so guessing at someone's public key does not spend
    that merchant's requests."""
    window = int(time.time()) // AUTH_FAILURE_WINDOW
    fail_keys = [f"rl:authfail:{ip}:{window}"] + ([f"rl:authfail:{ip}:{public_key}:{window}"] if public_key else [])
    block_keys = [_block_key(ip)] + ([_block_key(ip, public_key)] if public_key else [])
    try:
        pipeline = redis_client().pipeline(transaction=False)
        pipeline.get(_block_key(ip))
        for fail_key in fail_keys:
            pipeline.set(fail_key, 0, ex=AUTH_FAILURE_WINDOW + 1, nx=True)
            pipeline.incr(fail_key)
        if rate_key:
            _release(pipeline, rate_key)
        replies = pipeline.execute()
        ip_was_blocked, counts = replies[0] is not None, [replies[2 + 2 * i] for i in range(len(fail_keys))]
        blocks = [key for key, count in zip(block_keys, counts, strict=True)
                  if count >= settings.API_AUTH_FAILURES_PER_MINUTE]
        if blocks:
            pipeline = redis_client().pipeline(transaction=False)
            for key in blocks:
                pipeline.set(key, 1, ex=AUTH_FAILURE_WINDOW)
            pipeline.execute()
    except RedisError as error:
        raise CountersUnavailable() from error
    return ip_was_blocked


def version_ensure(public_key: str) -> None:
    try:
        token_ensure(version_key(public_key))
    except RedisError as error:
        raise CountersUnavailable() from error


def versions_bump(public_keys: list[str], token: str) -> None:
    if not public_keys:
        return
    pipeline = redis_client().pipeline(transaction=False)
    for key in public_keys:
        pipeline.set(version_key(key), token, ex=VERSION_TOKEN_TTL)
    pipeline.execute()
