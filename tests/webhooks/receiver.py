"""A webhook receiver on 127.0.0.1 for tests: records every request and answers per path."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes
    at: float


@dataclass
class Receiver:
    server: ThreadingHTTPServer
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def url(self, path: str) -> str:
        return self.base + path

    def received(self, path: str | None = None) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if path is None or r.path == path]

    def wait_for(self, predicate, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()


def _handler(receiver_ref: list[Receiver]):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body leave in two writes: without NODELAY the body waits ~40 ms for a delayed ACK.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver = receiver_ref[0]
            with receiver.lock:
                receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                                                  time.monotonic()))
            status, extra, payload = 200, {}, b"ok"
            if self.path.startswith("/fail"):
                status, payload = 500, b"boom"
            elif self.path.startswith("/gone"):
                status = 410
            elif self.path.startswith("/redirect"):
                status, extra = 302, {"Location": f"{receiver.base}/redirect-target"}
            elif self.path.startswith("/slow"):
                time.sleep(float(self.path.rsplit("/", 1)[-1]))
            elif self.path.startswith("/big"):
                payload = b"x" * 10_000
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args) -> None:
            pass

    return Handler


def start_receiver() -> Receiver:
    ref: list[Receiver] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(ref))
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # a client that timed out and hung up is expected here
    receiver = Receiver(server=server)
    ref.append(receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver
