"""Webhook deliveries per second with one Celery worker started by the plain command, `celery -A config worker`.

One measurement, for one tree: its broker is emptied; PIX charges are created through `POST /payin` with a
`webhookUrl` pointing at a receiver on 127.0.0.1 (each commits its `payin.created` event and queues one delivery)
while no worker runs; then the worker starts and drains them. The figure is deliveries per second over the middle
80% of the arrivals (the worker's start-up and the tail left out), counted by the receiver by `webhook-id`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench import server
from bench.load import Request, drive

QUIET_SECONDS = 2.0  # no arrival for this long after the last one: the worker has drained what there was
DRAIN_DEADLINE = 90.0
GENERATE_SECONDS = 15.0  # at most, making the charges


class Receiver:
    """An HTTP server in a thread of the harness: answers 200 at once, keeps each `webhook-id`'s first arrival.
    It listens from construction (so its URL goes into the charges) and answers once `start()` runs."""

    def __init__(self) -> None:
        first: dict[str, float] = {}
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the worker's HTTP client expects
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                now = time.monotonic()
                with lock:
                    first.setdefault(self.headers.get("webhook-id", ""), now)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.first = first
        self.http = ThreadingHTTPServer((server.HOST, 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://{server.HOST}:{self.http.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        if self.thread.is_alive():
            self.http.shutdown()
        self.http.server_close()


def sustained_rate(arrivals: list[float]) -> float | None:
    """Arrivals per second between the 10th and the 90th percentile of their times."""
    times = sorted(arrivals)
    if len(times) < 10:
        return None
    low, high = len(times) // 10, len(times) - 1 - len(times) // 10
    return (high - low) / (times[high] - times[low]) if times[high] > times[low] else None


def measure(*, root: Path, env: dict[str, str], port: int, authorization: str, body, events: int,
            log_path: Path) -> dict:
    """About `events` charges with a webhookUrl, then one worker of the tree at `root` drains their deliveries."""
    server.flush_redis(env["CELERY_BROKER_URL"])  # payouts' dispatch messages and earlier leftovers: not this figure
    receiver = Receiver()
    worker = None
    try:
        request = Request("POST", "/payin", lambda: {**body(), "webhookUrl": receiver.url}, expect=201)
        made, errors, started = 0, Counter(), time.monotonic()
        while made < events and time.monotonic() - started < GENERATE_SECONDS:
            part = drive(port, request, authorization=authorization, seconds=2.0, warmup=0)
            made += len(part["latencies_us"])
            errors.update(part["errors"])
        receiver.start()
        worker = server.spawn([str(server.PYTHON), "-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING"],
                              env, log_path, cwd=root)
        started = last = time.monotonic()
        count = 0
        while (now := time.monotonic()) - started < DRAIN_DEADLINE:
            if worker.poll() is not None:
                raise server.HarnessError(f"the Celery worker exited with {worker.returncode}; see {log_path}")
            if len(receiver.first) != count:
                last, count = now, len(receiver.first)
            elif count and now - last > QUIET_SECONDS:
                break
            time.sleep(0.05)
        arrivals = list(receiver.first.values())
    finally:
        server.stop(worker, grace=10)
        receiver.close()
    return {"delivered": len(arrivals), "rate": sustained_rate(arrivals), "errors": dict(errors)}
