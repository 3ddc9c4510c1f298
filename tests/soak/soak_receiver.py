"""The soak test's webhook receiver: a merchant's server that records every webhook it is sent.

Run as its own process (`python tests/soak/soak_receiver.py PORT`), so its work shares no GIL with the load generator.

- `POST /hook/<anything>`: a webhook. It is counted under (path, webhook-id), its signature is checked against the
  merchant's signing secrets (registered with `POST /secrets`, by the path's last segment), and it is answered 200;
  except that the first request of about one (path, webhook-id) in FAIL_ONE_IN is answered 500, so retries are
  exercised on every run while every delivery can still succeed (the retry schedule has more than one step).
- `POST /secrets` `{"<path's last segment>": ["whsec_…", …]}`: the secrets that may sign that path's webhooks.
- `GET /arrivals`: `{"requests", "answered500", "badSignature", "unsigned", "truncated", "ok": {path: {webhook-id:
  2xx count}}}` (`truncated`: requests whose sender died before the whole body arrived, not counted as deliveries).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAIL_ONE_IN = 20

lock = threading.Lock()
secrets_by_name: dict[str, list[bytes]] = {}
ok: dict[str, dict[str, int]] = {}  # path -> webhook-id -> how many times it was answered 2xx
seen: set[tuple[str, str]] = set()  # (path, webhook-id) that arrived at least once, answered 2xx or not
counters = {"requests": 0, "answered500": 0, "badSignature": 0, "unsigned": 0, "truncated": 0}


def first_time_fails(path: str, webhook_id: str) -> bool:
    digest = hashlib.sha256(f"{path} {webhook_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % FAIL_ONE_IN == 0


def signature_valid(name: str, headers, body: bytes) -> bool | None:
    """Standard Webhooks: v1,base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")); None when no secret is known."""
    keys = secrets_by_name.get(name)
    if not keys:
        return None
    signed = f"{headers.get('webhook-id', '')}.{headers.get('webhook-timestamp', '')}.".encode() + body
    sent = [s.removeprefix("v1,") for s in headers.get("webhook-signature", "").split(" ") if s]
    for key in keys:
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        if any(hmac.compare_digest(expected, s) for s in sent):
            return True
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        if len(body) < length:
            # The sender died mid-request (a SIGKILLed worker): not a delivery, and nobody to answer. Its signature
            # would not match the half body; the delivery is retried whole.
            with lock:
                counters["truncated"] += 1
            return
        if self.path == "/secrets":
            with lock:
                for name, values in json.loads(body).items():
                    secrets_by_name[name] = [base64.b64decode(v.removeprefix("whsec_")) for v in values]
            self._answer(200, b"{}")
            return
        webhook_id = self.headers.get("webhook-id", "")
        valid = signature_valid(self.path.rstrip("/").rsplit("/", 1)[-1], self.headers, body)
        with lock:
            counters["requests"] += 1
            if valid is False:
                counters["badSignature"] += 1
            elif valid is None:
                counters["unsigned"] += 1
            key = (self.path, webhook_id)
            fail = key not in seen and first_time_fails(*key)
            seen.add(key)
            if fail:
                counters["answered500"] += 1
            else:
                per_path = ok.setdefault(self.path, {})
                per_path[webhook_id] = per_path.get(webhook_id, 0) + 1
        self._answer(500 if fail else 200, b'{"error":"try again"}' if fail else b"ok")

    def do_GET(self) -> None:
        with lock:
            body = json.dumps({**counters, "ok": ok}).encode()
        self._answer(200, body)

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()
