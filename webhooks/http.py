"""The HTTP client of webhook deliveries: it connects only to the address it checked (no DNS rebinding), follows no
redirect, and bounds every attempt in time and in what it reads.

A socket timeout bounds each read, not a whole answer: a receiver that trickles its headers a byte at a time would
hold an attempt (and its worker thread) for ever. So every attempt also has a watchdog that shuts the connection
down when the attempt's deadline passes, whatever it is waiting for.
"""

from __future__ import annotations

import heapq
import ipaddress
import socket
import threading
import time
from dataclasses import dataclass

import urllib3
from django.conf import settings
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError
from urllib3.util import connection as urllib3_connection

from webhooks import ssrf

RESPONSE_EXCERPT_BYTES = 2048
# A name with many addresses must not multiply the connect timeout past the attempt's budget.
MAX_ADDRESSES = 2

_attempt = threading.local()


class RefusedAddress(NewConnectionError):
    pass


class _GuardedConnectionMixin:
    """Resolve, check every address, and open the socket to a checked one: the address we judged is the address we
    talk to. TLS still verifies the certificate against the URL's host name."""

    def _new_conn(self) -> socket.socket:
        host = self._dns_host.rstrip(".")
        literal = ssrf.parse_ip_literal(host)
        candidates = [str(literal)] if literal is not None else ssrf.resolve(host, self.port)
        permitted = [a for a in candidates if ssrf.allowed(ipaddress.ip_address(a.split("%")[0]))]
        if not permitted:
            raise RefusedAddress(self, f"refused address: {host} resolves to {', '.join(candidates)} (not public)")
        last_error: OSError | None = None
        for address in permitted[:MAX_ADDRESSES]:
            try:
                return urllib3_connection.create_connection(
                    (address, self.port), self.timeout, source_address=self.source_address,
                    socket_options=self.socket_options)
            except OSError as exc:
                last_error = exc
        raise NewConnectionError(self, f"Failed to establish a new connection: {last_error}")

    def getresponse(self, *args, **kwargs):
        # The request is sent: from here the watchdog of this attempt may shut this socket down.
        watchdog = getattr(_attempt, "watchdog", None)
        if watchdog is not None:
            watchdog.watch(self.sock)
        return super().getresponse(*args, **kwargs)


class _Watchdog:
    """Shuts the attempt's socket down at its deadline, so a blocked read fails at once."""

    def __init__(self, seconds: float):
        self.sock: socket.socket | None = None
        self.fired = False
        self.done = False
        self.deadline = time.monotonic() + seconds
        self.lock = threading.Lock()

    def watch(self, sock: socket.socket | None) -> None:
        with self.lock:
            self.sock = sock
            if self.fired:
                self._shutdown()

    def _fire(self) -> None:
        with self.lock:
            if not self.done:
                self.fired = True
                self._shutdown()

    def _shutdown(self) -> None:
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class GuardedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class GuardedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


def _pool_manager() -> urllib3.PoolManager:
    # maxsize: one kept-alive connection per worker thread to a busy receiver, so none is thrown away after use
    manager = urllib3.PoolManager(num_pools=200, maxsize=32, retries=False)
    manager.pool_classes_by_scheme = {"http": GuardedHTTPConnectionPool, "https": GuardedHTTPSConnectionPool}
    return manager


_manager: urllib3.PoolManager | None = None


def manager() -> urllib3.PoolManager:
    global _manager  # one pool per process: keep-alive connections to receivers are reused across deliveries
    if _manager is None:
        _manager = _pool_manager()
    return _manager


@dataclass(frozen=True)
class HttpResult:
    status: int | None
    body_excerpt: str
    error: str
    duration_ms: int

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and not self.error


class _Deadlines:
    """One thread per process watches every attempt's deadline (a thread per attempt would cost more than the
    attempt's own work at hundreds of deliveries a second). Every attempt has the same budget, so a new deadline is
    never earlier than those already waiting: the thread is woken only when it has nothing to wait for, and it fires
    what is due in rounds at most DEADLINE_SLACK_SECONDS late (a 13 s budget cut 0.1 s late is still cut), not once
    per attempt: at 300 deliveries a second a wake-up per attempt was a GIL hand-over every 3 ms."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, _Watchdog]] = []
        self.condition = threading.Condition()
        self.thread: threading.Thread | None = None
        self.counter = 0

    def add(self, watchdog: _Watchdog) -> None:
        with self.condition:
            if self.thread is None or not self.thread.is_alive():  # also after a fork
                self.thread = threading.Thread(target=self._run, name="webhook-deadlines", daemon=True)
                self.thread.start()
            self.counter += 1
            earliest = self.heap[0][0] if self.heap else None
            heapq.heappush(self.heap, (watchdog.deadline, self.counter, watchdog))
            if earliest is None or watchdog.deadline < earliest:  # the thread waits for nothing, or for later
                self.condition.notify()

    def _run(self) -> None:
        while True:
            with self.condition:
                while not self.heap or self.heap[0][0] > time.monotonic():
                    wait = self.heap[0][0] - time.monotonic() if self.heap else None
                    self.condition.wait(timeout=None if wait is None else max(wait, DEADLINE_SLACK_SECONDS))
                now = time.monotonic()
                due = []
                while self.heap and self.heap[0][0] <= now:
                    due.append(heapq.heappop(self.heap)[2])
            for watchdog in due:
                watchdog._fire()


DEADLINE_SLACK_SECONDS = 0.1
_deadlines = _Deadlines()


def post(url: str, *, body: bytes, headers: dict[str, str]) -> HttpResult:
    """POST once. Success is a 2xx answered in full within WEBHOOK_TIMEOUT_SECONDS; a 3xx is a failure. Never
    raises: whatever goes wrong is the attempt's error."""
    total_timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    started = time.monotonic()

    def failed(error: str) -> HttpResult:
        return HttpResult(None, "", _clean(error)[:500], int((time.monotonic() - started) * 1000))

    if url.startswith("http://") and not settings.WEBHOOKS_ALLOW_HTTP:
        return failed("refused: plain http:// is not allowed (WEBHOOKS_ALLOW_HTTP is off)")
    watchdog = _Watchdog(settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS + total_timeout)
    _attempt.watchdog = watchdog
    _deadlines.add(watchdog)
    try:
        response = manager().request(
            "POST", url, body=body, headers=headers, redirect=False, preload_content=False,
            timeout=urllib3.Timeout(connect=settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS, read=total_timeout),
            retries=False)
        complete = False
        try:
            excerpt = response.read(RESPONSE_EXCERPT_BYTES, decode_content=True) or b""
            # Drain what is left (bounded by the deadline) so the connection can be reused.
            for _ in response.stream(65536, decode_content=False):
                if time.monotonic() - started > total_timeout:
                    break
            else:
                complete = True
        finally:
            _stand_down(watchdog)  # before the socket can go to another thread's attempt
            if not complete:
                # Unread bytes would be taken for the next delivery's answer: never pool this connection.
                response.close()
            response.release_conn()
        duration = time.monotonic() - started
        error = f"timeout: no complete answer within {total_timeout:g} s" if duration > total_timeout else ""
        if 300 <= response.status < 400 and not error:
            error = f"redirect to {response.headers.get('Location', '?')[:200]} not followed"
        return HttpResult(status=response.status, body_excerpt=_clean(excerpt.decode("utf-8", "replace")),
                          error=_clean(error), duration_ms=int(duration * 1000))
    except RefusedAddress as exc:
        return failed(str(exc).split(": ", 1)[-1])
    except Exception as exc:  # urllib3's errors, a bad host name, a socket shut by the watchdog: all are failures
        if watchdog.fired:
            return failed(f"timeout: no complete answer within {total_timeout:g} s")
        return failed(f"{type(exc).__name__}: {exc}")
    finally:
        _stand_down(watchdog)
        _attempt.watchdog = None


def _stand_down(watchdog: _Watchdog) -> None:
    with watchdog.lock:
        watchdog.done = True  # a deadline passing after the attempt touches nothing (the socket may be reused)
        watchdog.sock = None


def _clean(text: str) -> str:
    """What a receiver answers is stored: PostgreSQL text cannot hold NUL characters."""
    return text.replace("\x00", "\ufffd")
