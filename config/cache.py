"""The shared cache's raw Redis plumbing: one client and one connection per process, commands pipelined in one
packet, and the few generic operations the apps build on (a key set once, keys deleted, a random token ensured).

On the local-memory cache of the laptop default (`redis_client()` is None) the generic operations use Django's cache
calls instead, which serve the same purpose within the one process that runs there.
"""

from __future__ import annotations

import os
import threading

from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import TimeoutError as RedisTimeoutError

TOKEN_TTL = 86400  # an expired token only means one reload from the database

_client = None


def redis_client():
    """The raw Redis client behind the default cache, built once per process; None when the cache is not Redis."""
    global _client
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    if _client is None:
        _client = backend._cache.get_client(write=True)
    return _client


def pack(commands: list[tuple]) -> bytes:
    """RESP arrays of bulk strings: the whole wire format of a command (our arguments are short ASCII strings)."""
    parts = []
    for command in commands:
        parts.append(b"*%d\r\n" % len(command))
        for argument in command:
            data = str(argument).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


# As long as one exchange may take (the socket timeout): threads of a process never queue longer than that.
LOCK_WAIT_SECONDS = 1.0
_connection_lock = threading.Lock()
_connection: tuple[int, object] | None = None  # (pid, connection): a forked child must not share its parent's


def send(packet: bytes, replies: int) -> list:
    """Send one packet and read its replies: the hot path of every API request. One connection per process, used
    under a lock: the exchange takes a fraction of a millisecond, and taking a pooled connection each time would cost
    a third of that again, while keeping one per thread would exhaust the pool under a thread-per-request server.
    A connection that failed is dropped, never reused half-read."""
    global _connection
    # Bounded: if Redis hangs, the threads of a process fail fast (503) instead of queueing a second each behind it.
    if not _connection_lock.acquire(timeout=LOCK_WAIT_SECONDS):
        raise RedisTimeoutError("the Redis connection of this process is busy")
    try:
        if _connection is None or _connection[0] != os.getpid():
            _connection = (os.getpid(), redis_client().connection_pool.get_connection())
        connection = _connection[1]
        try:
            connection.send_packed_command([packet])
            return [connection.read_response() for _ in range(replies)]
        except BaseException:
            _connection = None
            connection.disconnect()
            redis_client().connection_pool.release(connection)
            raise
    finally:
        _connection_lock.release()


def pipeline(commands: list[tuple]) -> list:
    return send(pack(commands), len(commands))


def text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def set_if_absent(key: str, value: str, *, seconds: int) -> bool:
    """Set a key that expires, unless it is set: True for the one caller that set it."""
    if redis_client() is not None:
        return pipeline([("SET", key, value, "EX", seconds, "NX")])[0] is not None
    return cache.add(key, value, timeout=seconds)


def keys_delete(keys: list[str]) -> None:
    if redis_client() is not None:
        pipeline([("DEL", *keys)])
    else:
        cache.delete_many(keys)


def token_ensure(key: str) -> None:
    """Give a key (a key pair's version, an object's freshness) a random token if it has none (another process may
    set one first: either will do)."""
    set_if_absent(key, os.urandom(16).hex(), seconds=TOKEN_TTL)
