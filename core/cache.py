"""The shared cache's raw Redis plumbing: one client and one connection per process, commands pipelined in one
packet, and the few generic operations the apps build on (a key set once, keys deleted, a random token ensured).

On the local-memory cache of the laptop default (`redis_client()` is None) the generic operations use Django's cache
calls instead, which serve the same purpose within the one process that runs there. A flag that another process must
see (`flag_set`, `flag_clear`: the web process sets it, the worker clears it) is a file under LOCAL_DIR there instead,
beside the file broker that those processes already share.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from django.conf import settings
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


def _flag_path(key: str) -> Path:
    return Path(settings.LOCAL_DIR) / "flags" / key.replace(":", "-").replace("/", "-")


def flag_set(key: str, *, seconds: int) -> bool:
    """Set a flag that every process of this installation sees, unless it is set: True for the one caller that set
    it. Redis when configured; else a file created exclusively (atomic across processes), expired by its age."""
    if redis_client() is not None:
        return set_if_absent(key, "1", seconds=seconds)  # the SET alone: no GET of a value no caller reads
    return flag_claim(key, "1", seconds=seconds) is None


def flag_claim(key: str, value: str, *, seconds: int) -> str | None:
    """`flag_set` with a value: None for the one caller that set the flag (to `value`), else the value the flag holds
    (its setter's; "" if it cannot be read yet). On Redis, one round trip (SET … NX and GET in one packet)."""
    if redis_client() is not None:
        was_set, held = pipeline([("SET", key, value, "EX", seconds, "NX"), ("GET", key)])
        return None if was_set is not None else text(held) or ""
    path = _flag_path(key)
    for _ in range(3):
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileNotFoundError:  # the first flag of this installation: its folder, made once, not per payout
            path.parent.mkdir(parents=True, exist_ok=True)
            continue
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime < seconds:
                    return path.read_text()  # "" between its creation and its setter's write
                path.unlink(missing_ok=True)  # expired: take it (two takers at once only cost a duplicate)
            except FileNotFoundError:
                pass  # cleared meanwhile: try again
            continue
        try:
            os.write(descriptor, value.encode())
        finally:
            os.close(descriptor)
        return None
    return ""


def flag_clear(key: str) -> None:
    if redis_client() is not None:
        keys_delete([key])
    else:
        _flag_path(key).unlink(missing_ok=True)


def flags_clear() -> None:
    """Every flag of `flag_set` (the tests start from none)."""
    if redis_client() is None:
        for path in (Path(settings.LOCAL_DIR) / "flags").glob("*"):
            path.unlink(missing_ok=True)
