"""A webhook receiver for the delivery benchmark: answers 200 and remembers when each webhook-id arrived.

Run as its own process (`python bench/webhook_receiver.py PORT`), so its work does not share a GIL with the bench.
`POST /slow/<ms>` answers after that many milliseconds (a slow merchant: the storm phase); any other path at once.
`GET /arrivals` returns {"count": requests received, "first": {webhook-id: unix time of its first arrival}}.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

arrivals: dict[str, float] = {}
count = 0
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver behind a load balancer

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in two writes; without NODELAY the second waits ~40 ms for the client's delayed ACK.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        global count
        now = time.time()
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            count += 1
            arrivals.setdefault(self.headers.get("webhook-id", ""), now)
        if self.path.startswith("/slow/"):
            time.sleep(int(self.path.rsplit("/", 1)[1]) / 1000)
        self._answer(b"ok")

    def do_GET(self) -> None:
        with lock:
            body = json.dumps({"count": count, "first": arrivals}).encode()
        self._answer(body)

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128  # a worker opening dozens of connections at once is not refused
    server.serve_forever()
