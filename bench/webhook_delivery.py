"""Webhook delivery benchmark: deliveries per second with one Celery worker, and the delay from commit to arrival.

    .venv/bin/python bench/webhook_delivery.py [--events 2000] [--rate 100] [--seconds 10] [--pool threads]
                                               [--concurrency 8]

Against PostgreSQL (a fresh `pagamentos_bench` database) and Redis as broker, like production. Two phases:
1. throughput: a burst of --events events is committed and queued, then one worker starts and drains it; the figure
   is deliveries per second from the first arrival to the last;
2. latency: --rate events per second for --seconds, the delay of each from its commit to its first arrival.
Targets (issue 3, on the 2-core reference machine): >= 200 deliveries/s and p50 < 1 s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import server  # bench/server.py: the database and environment helpers

ROOT = server.ROOT
RESULTS = ROOT / "bench" / "results"
TARGET_RATE = 200.0
TARGET_P50 = 1.0


def start(command: list[str], env: dict, log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def arrivals(port: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/arrivals")
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def wait_for(port: int, ids: set[str], timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    seen: dict = {}
    while time.monotonic() < deadline:
        seen = arrivals(port)
        if ids <= seen["first"].keys():
            return seen
        time.sleep(0.05)
    return seen


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--pool", choices=["prefork", "threads"], default="threads")
    parser.add_argument("--concurrency", type=int, default=8, help="threads (or prefork processes) of the worker")
    args = parser.parse_args()

    RESULTS.mkdir(parents=True, exist_ok=True)
    server.DATABASE = "pagamentos_bench_webhooks"  # its own database and Redis dbs: it may run beside run.py
    env = server.service_env()
    env.update({"WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true", "WEBHOOKS_ALLOW_HTTP": "true",
                "CACHE_URL": "redis://127.0.0.1:6379/8", "CELERY_BROKER_URL": "redis://127.0.0.1:6379/9"})
    server.recreate_database()
    server.manage(env, "migrate", "--noinput", "-v", "0")
    server.manage(env, "createmerchant", "--email", "hooks@example.com", "--password", "x" * 16, "--approve")
    os.environ.update(env)

    import django

    django.setup()
    from django.db import transaction

    from accounts.models import Merchant
    from config.celery import app
    from webhooks import services

    app.control.purge()
    merchant = Merchant.objects.get(owner__email="hooks@example.com")
    port = server.free_port()
    receiver = start([str(server.PYTHON), "bench/webhook_receiver.py", str(port)], env, RESULTS / "receiver.log")
    worker_command = [str(server.PYTHON), "-m", "celery", "-A", "config", "worker", "--pool", args.pool,
                      "--concurrency", str(args.concurrency), "--loglevel", "WARNING", "--without-gossip",
                      "--without-mingle", "--without-heartbeat"]
    worker = None
    url = f"http://127.0.0.1:{port}/hook"
    try:
        time.sleep(1)  # the receiver binds

        def record(n: int) -> tuple[str, float]:
            with transaction.atomic():
                event = services.event_record(merchant=merchant, livemode=False, type="payin.paid",
                                              obj={"id": f"charge-{n}", "status": "PAID", "amount": 1000 + n},
                                              previous_status="PENDING", webhook_url=url)
            return str(event.id), time.time()

        # Throughput of the worker alone: the burst is committed and queued before the worker starts, and the rate
        # is counted from its first arrival to its last (the producer's speed does not enter the figure).
        burst = dict(record(n) for n in range(args.events))
        worker = start(worker_command, env, RESULTS / "worker.log")
        seen = wait_for(port, set(burst), 300)
        times = sorted(seen["first"][i] for i in burst if i in seen["first"])
        delivered = len(times)
        rate = (delivered - 1) / (times[-1] - times[0])
        # Sustained: the middle 80% of the burst, without the worker's start (connections, pools) and the tail.
        low, high = times[len(times) // 10], times[len(times) * 9 // 10]
        sustained = (len(times) * 8 // 10) / (high - low)

        paced: dict[str, float] = {}
        interval = 1 / args.rate
        start_at = time.monotonic()
        for n in range(int(args.rate * args.seconds)):
            time.sleep(max(0.0, start_at + n * interval - time.monotonic()))
            event_id, committed = record(n)
            paced[event_id] = committed
        seen = wait_for(port, set(paced), 120)
        delays = [seen["first"][i] - t for i, t in paced.items() if i in seen["first"]]
    finally:
        if worker is not None:
            stop(worker)
        stop(receiver)

    p50, p99 = percentile(delays, 50), percentile(delays, 99)
    figures = {
        "worker": f"1 worker, {args.pool} pool x {args.concurrency}",
        "burst_events": args.events, "burst_delivered": delivered, "deliveries_per_second": round(rate, 1),
        "sustained_deliveries_per_second": round(sustained, 1),
        "paced_rate": args.rate, "paced_events": len(paced), "paced_delivered": len(delays),
        "delay_p50_ms": round(p50 * 1000, 1), "delay_p99_ms": round(p99 * 1000, 1),
        "delay_mean_ms": round(statistics.mean(delays) * 1000, 1),
    }
    (RESULTS / "webhooks.json").write_text(json.dumps(figures, indent=2))
    print(f"Webhook delivery ({figures['worker']}, PostgreSQL + Redis broker, local receiver)")
    print(f"  burst of {args.events}: {delivered} delivered, {rate:.1f} deliveries/s first to last arrival, "
          f"{sustained:.1f}/s sustained over the middle 80% "
          f"(target >= {TARGET_RATE:.0f}: {'met' if rate >= TARGET_RATE else 'MISSED'})")
    print(f"  paced {args.rate:.0f}/s for {args.seconds:.0f} s: commit to arrival p50 {p50 * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms (target p50 < {TARGET_P50 * 1000:.0f} ms: "
          f"{'met' if p50 < TARGET_P50 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
