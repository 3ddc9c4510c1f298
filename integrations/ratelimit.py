"""What the shared cache knows about a request, in one round trip: is the caller's IP blocked, how many requests its
key pair made this second, the version token of the key pair (see `authcache`) and, for a read the API caches, the
freshness token of the object it reads (see `core.readcache`).

On Redis the four or five commands (GET, SET NX, INCR, GET, GET) go out as one pipelined packet on the client and
connection `core.cache` keeps per process: atomic counters across every web process, at the cost of a single
round trip. On the local-memory cache of the laptop default, Django's cache calls serve the same purpose within the
one process that runs there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from redis.exceptions import RedisError

from core.cache import TOKEN_TTL, pack, redis_client, send, text, token_ensure
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


def _pipeline(commands: list[tuple]) -> list:
    return send(pack(commands), len(commands))


def _block_key(ip: str, public_key: str | None = None) -> str:
    """The IP's block (it refuses the IP's failures) or, with a public key, the block of that key from that IP (it
    refuses every request, so that a guesser cannot tell a right secret from a wrong one)."""
    return f"rl:authblock:{ip}:{public_key}" if public_key else f"rl:authblock:{ip}"


def version_key(public_key: str) -> str:
    return f"authv:{public_key}"


def _gate_packet(block_key: bytes, rate_key: bytes, version_key_: bytes) -> bytes:
    """GET block, SET rate 0 EX 2 NX, INCR rate, GET version: what core.cache.pack would build, in one step.
    (SET … NX then INCR gives the counter its expiry on any Redis version; EXPIRE … NX needs Redis 7.)"""
    return (b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n"
            b"*6\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n0\r\n$2\r\nEX\r\n$1\r\n%d\r\n$2\r\nNX\r\n"
            b"*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n"
            b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n") % (
        len(block_key), block_key, len(rate_key), rate_key, RATE_WINDOW + 1, len(rate_key), rate_key,
        len(version_key_), version_key_)


def gate(*, ip: str, public_key: str, freshness_key: str | None = None) -> Gate:
    rate_key = f"rl:key:{public_key}:{int(time.time())}"
    try:
        if redis_client() is not None:
            packet = _gate_packet(_block_key(ip, public_key).encode(), rate_key.encode(),
                                  version_key(public_key).encode())
            if freshness_key is None:
                blocked, _, count, version = send(packet, 4)
                freshness = None
            else:
                key = freshness_key.encode()
                blocked, _, count, version, freshness = send(packet + b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (
                    len(key), key), 5)
            return Gate(blocked=blocked is not None, count=int(count), version=text(version), rate_key=rate_key,
                        freshness=text(freshness))
        cache.add(rate_key, 0, timeout=RATE_WINDOW + 1)
        try:
            count = cache.incr(rate_key)
        except ValueError:  # expired between add and incr
            cache.set(rate_key, 1, timeout=RATE_WINDOW + 1)
            count = 1
        return Gate(blocked=cache.get(_block_key(ip, public_key)) is not None, count=count,
                    version=cache.get(version_key(public_key)), rate_key=rate_key,
                    freshness=cache.get(freshness_key) if freshness_key is not None else None)
    except RedisError as error:
        raise CountersUnavailable() from error


def ip_blocked(ip: str) -> bool:
    try:
        if redis_client() is not None:
            return _pipeline([("GET", _block_key(ip))])[0] is not None
        return cache.get(_block_key(ip)) is not None
    except RedisError as error:
        raise CountersUnavailable() from error


def _release_commands(rate_key: str) -> list[tuple]:
    # EXPIRE again: a DECR after the window would otherwise leave a key with no expiry.
    return [("DECR", rate_key), ("EXPIRE", rate_key, RATE_WINDOW + 1)]


def _release_locally(rate_key: str) -> None:
    try:
        cache.decr(rate_key)
    except ValueError:
        pass  # the window is over: nothing left to give back


def rate_count_release(gate_: Gate) -> None:
    """Take a request back out of the key pair's counter: a refused caller must not spend the merchant's budget."""
    try:
        if redis_client() is not None:
            _pipeline(_release_commands(gate_.rate_key))
        else:
            _release_locally(gate_.rate_key)
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
        if redis_client() is not None:
            commands: list[tuple] = [("GET", _block_key(ip))]
            for fail_key in fail_keys:
                commands += [("SET", fail_key, 0, "EX", AUTH_FAILURE_WINDOW + 1, "NX"), ("INCR", fail_key)]
            if rate_key:
                commands += _release_commands(rate_key)
            replies = _pipeline(commands)
            ip_was_blocked, counts = replies[0] is not None, [int(replies[2 + 2 * i]) for i in range(len(fail_keys))]
            blocks = [("SET", key, 1, "EX", AUTH_FAILURE_WINDOW)
                      for key, count in zip(block_keys, counts, strict=True)
                      if count >= settings.API_AUTH_FAILURES_PER_MINUTE]
            if blocks:
                _pipeline(blocks)
            return ip_was_blocked
        ip_was_blocked = cache.get(_block_key(ip)) is not None
        if rate_key:
            _release_locally(rate_key)
        for fail_key, block_key in zip(fail_keys, block_keys, strict=True):
            cache.add(fail_key, 0, timeout=AUTH_FAILURE_WINDOW + 1)
            if cache.incr(fail_key) >= settings.API_AUTH_FAILURES_PER_MINUTE:
                cache.set(block_key, 1, timeout=AUTH_FAILURE_WINDOW)
        return ip_was_blocked
    except RedisError as error:
        raise CountersUnavailable() from error


def version_ensure(public_key: str) -> None:
    try:
        token_ensure(version_key(public_key))
    except RedisError as error:
        raise CountersUnavailable() from error


def versions_bump(public_keys: list[str], token: str) -> None:
    if not public_keys:
        return
    if redis_client() is not None:
        _pipeline([("SET", version_key(key), token, "EX", VERSION_TOKEN_TTL) for key in public_keys])
    else:
        cache.set_many({version_key(key): token for key in public_keys}, timeout=VERSION_TOKEN_TTL)
