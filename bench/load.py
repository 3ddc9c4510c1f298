"""The load generator: closed-loop HTTP/1.1 clients against 127.0.0.1, in forked processes.

The client shares the machine with gunicorn, PostgreSQL and Redis, so every client cycle is CPU the server does not
get: raw non-blocking sockets on one selector per process (no http.client, no threads), a request encoded once when
nothing in it varies, and a parser that reads only the status line, Content-Length and Connection. About 0.1 ms of
client CPU per request with a reconnect (gunicorn's sync workers close every connection): one process drives
10,000+ req/s, far above what two cores serve.

Each user sends a request, waits for the whole response, sends the next. Responses that complete in the warm-up are
discarded; a connection the server closes is reopened, and the connect counts in the next request's latency, as it
would for a real client. Any other status than the expected one, a refused or dropped connection, or a request over
10 s is an error. Every loop ends at the window's end, whatever the server does.
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import selectors
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

HOST = "127.0.0.1"  # the only address this client connects to
RECV_BYTES = 65536
REQUEST_TIMEOUT = 10.0
RETRY_DELAY = 0.05  # after a failed connect: a server that is down must not turn the loop into a spin
START_DELAY = 0.3  # lets every process fork and open its sockets before the warm-up clock starts


@dataclass(frozen=True)
class Request:
    """One kind of request. `body` (JSON) and `path` may be callables, called for every request in the client."""

    method: str
    path: str | Callable[[], str]
    body: Callable[[], object] | None = None
    expect: int = 200


def encode(request: Request, port: int, authorization: str) -> Callable[[], bytes]:
    """A function returning the bytes of the next request: the same bytes when nothing varies."""
    head = f"Host: {HOST}:{port}\r\nAccept: application/json\r\nUser-Agent: pagamentos-bench\r\n"
    if authorization:
        head += f"Authorization: {authorization}\r\n"

    def build() -> bytes:
        path = request.path if isinstance(request.path, str) else request.path()
        if request.body is None:
            return f"{request.method} {path} HTTP/1.1\r\n{head}\r\n".encode()
        body = json.dumps(request.body(), separators=(",", ":")).encode()
        return (f"{request.method} {path} HTTP/1.1\r\n{head}Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    if request.body is None and isinstance(request.path, str):
        data = build()
        return lambda: data
    return build


def parse_response(buffer: bytes) -> tuple[int, bool] | None:
    """(status, keep_alive) once `buffer` holds a whole response, else None. Django's CommonMiddleware sets
    Content-Length; a chunked body is recognised by its terminating empty chunk, enough for JSON."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buffer[:end].lower()
    at = head.find(b"\r\ncontent-length:")
    if at >= 0:
        line_end = head.find(b"\r\n", at + 2)
        if len(buffer) < end + 4 + int(head[at + 17: line_end if line_end >= 0 else None]):
            return None
    elif b"\r\ntransfer-encoding: chunked" in head and not buffer.endswith(b"0\r\n\r\n"):
        return None
    keep_alive = b"\r\nconnection: close" not in head and not head.startswith(b"http/1.0")
    return int(head[9:12]), keep_alive


class User:
    __slots__ = ("inbox", "outbox", "retry_at", "sock", "started")

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.started = self.retry_at = 0.0
        self.outbox = self.inbox = b""


class Driver:
    """One process's users on one selector: begin -> (connect) -> send -> receive -> record -> begin again."""

    def __init__(self, port: int, expect: int, next_request: Callable[[], bytes], window: tuple[float, float]):
        self.port, self.expect, self.next_request = port, expect, next_request
        self.window_start, self.window_end = window
        self.selector = selectors.DefaultSelector()
        self.latencies: list[float] = []  # of expected-status responses completed in the window
        self.errors: Counter[str] = Counter()  # other statuses and connection failures in the window
        self.waiting: list[User] = []  # users whose connect failed, until retry_at

    def begin(self, user: User, now: float) -> None:
        user.started, user.outbox, user.inbox = now, self.next_request(), b""
        if user.sock is not None:
            self.send(user)
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        code = sock.connect_ex((HOST, self.port))
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            self.fail(user, f"connect: {errno.errorcode.get(code, code)}", now)
            return
        user.sock = sock
        self.selector.register(sock, selectors.EVENT_WRITE, user)

    def send(self, user: User) -> None:
        try:
            sent = user.sock.send(user.outbox)
        except BlockingIOError:
            sent = 0
        except OSError as error:
            self.fail(user, f"send: {type(error).__name__}", time.monotonic())
            return
        user.outbox = user.outbox[sent:]
        events = selectors.EVENT_WRITE if user.outbox else selectors.EVENT_READ
        if user.sock.fileno() in self.selector.get_map():
            self.selector.modify(user.sock, events, user)
        else:
            self.selector.register(user.sock, events, user)

    def on_writable(self, user: User) -> None:
        code = user.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self.fail(user, f"connect: {errno.errorcode.get(code, code)}", time.monotonic())
        else:
            self.send(user)

    def on_readable(self, user: User) -> None:
        try:
            chunk = user.sock.recv(RECV_BYTES)
        except BlockingIOError:
            return
        except OSError as error:
            self.fail(user, f"recv: {type(error).__name__}", time.monotonic())
            return
        now = time.monotonic()
        if not chunk:
            self.fail(user, "closed before a whole response", now)
            return
        user.inbox += chunk
        parsed = parse_response(user.inbox)
        if parsed is None:
            return
        status, keep_alive = parsed
        if self.window_start <= now < self.window_end:
            if status == self.expect:
                self.latencies.append(now - user.started)
            else:
                self.errors[f"status {status}"] += 1
        if not keep_alive:
            self.drop(user)
        self.begin(user, now)

    def fail(self, user: User, reason: str, now: float) -> None:
        if self.window_start <= now < self.window_end:
            self.errors[reason] += 1
        self.drop(user)
        user.retry_at = now + RETRY_DELAY
        self.waiting.append(user)

    def drop(self, user: User) -> None:
        if user.sock is not None:
            if user.sock.fileno() in self.selector.get_map():
                self.selector.unregister(user.sock)
            user.sock.close()
            user.sock = None

    def run(self, users: int) -> dict:
        now = time.monotonic()
        for _ in range(users):
            self.begin(User(), now)
        next_expiry_check = now + 0.5
        while (now := time.monotonic()) < self.window_end:
            for key, mask in self.selector.select(timeout=min(0.05, self.window_end - now)):
                if mask & selectors.EVENT_WRITE:
                    self.on_writable(key.data)
                else:
                    self.on_readable(key.data)
            if self.waiting:
                ready = [user for user in self.waiting if user.retry_at <= now]
                self.waiting = [user for user in self.waiting if user.retry_at > now]
                for user in ready:
                    self.begin(user, now)
            if now >= next_expiry_check:  # scanning every user on every event would cost more than the parsing
                for key in list(self.selector.get_map().values()):
                    if now - key.data.started > REQUEST_TIMEOUT:
                        self.fail(key.data, "timeout", now)
                next_expiry_check = now + 0.5
        for key in list(self.selector.get_map().values()):
            self.drop(key.data)
        self.selector.close()
        return {"latencies": self.latencies, "errors": dict(self.errors)}


def _child(pipe: Connection, port: int, request: Request, authorization: str, users: int,
           window: tuple[float, float]) -> None:
    pipe.send(Driver(port, request.expect, encode(request, port, authorization), window).run(users))
    pipe.close()


def busy_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot, from /proc/stat."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def busy_cores(seconds: float) -> float:
    """Cores busy over the next `seconds` (other people's load, before this bench's)."""
    start = busy_ticks()
    time.sleep(seconds)
    end = busy_ticks()
    return (end[0] - start[0]) / max(end[1] - start[1], 1) * (os.cpu_count() or 1)


def drive(port: int, request: Request, *, authorization: str = "", seconds: float, warmup: float,
          concurrency: int = 8, procs: int = 1, idle: Callable[[], None] | None = None) -> dict:
    """`concurrency` users in `procs` forked processes over one window of `seconds` after `warmup`. This process
    waits meanwhile, calling `idle` every 10 ms (the dispatch stand-in). Returns the window's latencies (µs), the
    errors by kind and the machine's busy cores during the window."""
    window_start = time.monotonic() + START_DELAY + warmup  # CLOCK_MONOTONIC is system-wide: children share it
    window = (window_start, window_start + seconds)
    context = multiprocessing.get_context("fork")
    children = []
    for number in range(procs):
        users = concurrency // procs + (1 if number < concurrency % procs else 0)
        parent_end, child_end = context.Pipe(duplex=False)
        process = context.Process(target=_child, daemon=True,
                                  args=(child_end, port, request, authorization, users, window))
        process.start()
        child_end.close()
        children.append((process, parent_end))
    ticks = None
    while (now := time.monotonic()) < window[1]:
        if ticks is None and now >= window[0]:
            ticks = busy_ticks()
        if idle is not None:
            idle()
        time.sleep(0.01)
    end_ticks = busy_ticks()
    latencies: list[int] = []
    errors: Counter[str] = Counter()
    for process, pipe in children:
        if not pipe.poll(max(window[1] + 15 - time.monotonic(), 0)):
            process.kill()
            raise RuntimeError("a load process did not report in time")
        part = pipe.recv()
        process.join(timeout=5)
        latencies += [round(value * 1e6) for value in part["latencies"]]
        errors.update(part["errors"])
    ticks = ticks or end_ticks
    total = end_ticks[1] - ticks[1]
    busy = (end_ticks[0] - ticks[0]) / total * (os.cpu_count() or 1) if total else 0.0
    return {"seconds": seconds, "latencies_us": latencies, "errors": dict(errors), "busy_cores": round(busy, 2)}
