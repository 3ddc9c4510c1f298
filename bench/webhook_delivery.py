"""Webhook delivery benchmark: deliveries per second with one Celery worker, the delay from commit to arrival, and
how long a money task waits behind a storm of deliveries.

    .venv/bin/python bench/webhook_delivery.py [--events 2000] [--rate 300] [--seconds 10] [--storm-events 2000]
        [--slow-ms 1000] [--pool threads|prefork] [--concurrency N] [--prefetch-multiplier N] [--database NAME]

Against PostgreSQL (a fresh `pagamentos_bench_webhooks` database, or --database) and Redis as broker (databases 12
and 13, or WEBHOOK_BENCH_REDIS_DBS=cache,broker), like production. The worker is started with the plain command,
`celery -A config worker` (pool, concurrency and prefetch from the settings), unless --pool, --concurrency or
--prefetch-multiplier are given. Phases:
0. floor: --floor-tasks no-op tasks (Celery's built-in `celery.accumulate`) queued on the webhooks queue, then the
   same worker drains them: what Celery and the Redis broker alone cost per message (fetch, the unacked bookkeeping
   of a late ack, the pool's hand-over, the ack), tasks per second and worker CPU per task, under every delivery;
1. throughput: a burst of --events events is committed and queued, then the worker starts and drains it; the figure
   is deliveries per second from the first arrival to the last, with the CPU each delivery cost (the worker's
   processes, the receiver, and the whole machine: PostgreSQL, Redis and any neighbour included);
2. latency: --rate events per second for --seconds, the delay of each from its commit to its first arrival;
3. storm: --storm-events deliveries are committed at once (their messages reach the broker faster than the worker
   drains them), then one payout's task is sent (`payouts_process` of a PENDING payout of the bench merchant); how
   long until it has run (the payout left PENDING). Once with a receiver that answers
   at once, once with one that takes --slow-ms per answer (every pool slot busy on a slow merchant).
Targets (issue 17, on the 2-core reference machine): >= 300 deliveries/s and p50 < 200 ms.
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
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import server  # bench/server.py: the database and environment helpers

ROOT = server.ROOT
RESULTS = ROOT / "bench" / "results"
TARGET_RATE = 300.0
TARGET_P50 = 0.2
TICKS = os.sysconf("SC_CLK_TCK")
PAYOUT_TASK = "payments.payouts.tasks.payouts_process"


def start(command: list[str], env: dict, log: Path) -> subprocess.Popen:
    with log.open("a") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)


def processes_cpu(session: int) -> tuple[float, float, float]:
    """CPU seconds (user + system) of every live process of a session (a worker and its prefork children), and of
    every PostgreSQL and Redis server process (those count other databases' work too: indicative only)."""
    totals = [0, 0, 0]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            name, rest = Path(f"/proc/{entry}/stat").read_text().split(" (", 1)[1].rsplit(")", 1)
        except (OSError, ValueError):
            continue
        fields = rest.split()  # after the command: state ppid pgrp session ...
        ticks = int(fields[11]) + int(fields[12])
        if int(fields[3]) == session:
            totals[0] += ticks
        elif name == "postgres":
            totals[1] += ticks
        elif name.startswith("redis-server"):
            totals[2] += ticks
    return tuple(t / TICKS for t in totals)


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (all cores, everything but idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / TICKS


def arrivals(port: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/arrivals")
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def wait_for(port: int, ids: set[str], timeout: float, on_poll=None) -> dict:
    deadline = time.monotonic() + timeout
    seen: dict = {}
    while time.monotonic() < deadline:
        seen = arrivals(port)
        if on_poll is not None:
            on_poll(seen)
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
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--storm-events", type=int, default=2000, help="0: no storm phase")
    parser.add_argument("--slow-ms", type=int, default=1000, help="the slow receiver's answer time (0: no slow storm)")
    parser.add_argument("--pool", choices=["prefork", "threads", "solo"], help="default: the settings' (plain command)")
    parser.add_argument("--concurrency", type=int, help="default: the settings'")
    parser.add_argument("--prefetch-multiplier", type=int, help="default: the settings'")
    parser.add_argument("--database", default="pagamentos_bench_webhooks")
    parser.add_argument("--floor-tasks", type=int, default=2000, help="0: no floor phase")
    args = parser.parse_args()

    RESULTS.mkdir(parents=True, exist_ok=True)
    # Its own database and Redis databases: it may run beside run.py (3, 4) and the test suites.
    redis_dbs = tuple(int(n) for n in os.environ.get("WEBHOOK_BENCH_REDIS_DBS", "12,13").split(","))
    server.DATABASE = args.database
    env = server.service_env(redis_dbs=redis_dbs)
    env.update({"WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true", "WEBHOOKS_ALLOW_HTTP": "true"})
    server.recreate_database()
    server.reset_redis(redis_dbs)
    server.manage(env, "migrate", "--noinput", "-v", "0")
    server.manage(env, "createmerchant", "--email", "hooks@example.com", "--password", "x" * 16, "--approve")
    os.environ.update(env)

    import django

    django.setup()
    import redis
    from django.conf import settings
    from django.db import connections, transaction

    from accounts.models import Merchant
    from config.celery import app
    from core import cache
    from payments.ledger import services as ledger
    from payments.models import Payout, PayoutStatus
    from payments.payouts import dispatch as payout_dispatch
    from payments.payouts import services as payout_services
    from payments.payouts.validation import payout_request_validate
    from webhooks import services

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    merchant = Merchant.objects.get(owner__email="hooks@example.com")
    port = server.free_port()
    for log in ("receiver.log", "worker.log"):
        (RESULTS / log).write_text("")
    receiver = start([str(server.PYTHON), "bench/webhook_receiver.py", str(port)], env, RESULTS / "receiver.log")
    worker_command = [str(server.PYTHON), "-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING"]
    for option, value in (("--pool", args.pool), ("--concurrency", args.concurrency),
                          ("--prefetch-multiplier", args.prefetch_multiplier)):
        if value is not None:
            worker_command += [option, str(value)]
    described = (f"pool {args.pool or getattr(settings, 'CELERY_WORKER_POOL', 'prefork')} x "
                 f"{args.concurrency or getattr(settings, 'CELERY_WORKER_CONCURRENCY', None) or os.cpu_count()}, "
                 f"prefetch multiplier {args.prefetch_multiplier or settings.CELERY_WORKER_PREFETCH_MULTIPLIER}")
    worker = None
    base = f"http://127.0.0.1:{port}"
    storm: dict = {}
    try:
        time.sleep(1)  # the receiver binds

        def record(n: int, url: str = base + "/hook") -> tuple[str, float]:
            with transaction.atomic():
                event = services.event_record(merchant=merchant, livemode=False, type="payin.paid",
                                              obj={"id": f"charge-{n}", "status": "PAID", "amount": 1000 + n},
                                              previous_status="PENDING", webhook_url=url)
            return str(event.id), time.time()

        # 0. Celery's floor: no-op tasks through the same worker command, timed from the first message it takes until
        # a tenth is left (its start and the tail out, as the burst's middle 80% below).
        floor: dict = {}
        if args.floor_tasks:
            with app.producer_or_acquire() as producer:
                for n in range(args.floor_tasks):
                    app.send_task("celery.accumulate", args=(n,), queue="webhooks", producer=producer)
            worker = start(worker_command, env, RESULTS / "worker.log")
            deadline = time.monotonic() + 120
            while broker.llen("webhooks") >= args.floor_tasks and time.monotonic() < deadline:
                time.sleep(0.005)
            began, left = (time.time(), processes_cpu(worker.pid)[0]), broker.llen("webhooks")
            while broker.llen("webhooks") > args.floor_tasks // 10 and time.monotonic() < deadline:
                time.sleep(0.005)
            ended, rest = (time.time(), processes_cpu(worker.pid)[0]), broker.llen("webhooks")
            done = left - rest
            floor = {"tasks": args.floor_tasks, "tasks_per_second": round(done / (ended[0] - began[0]), 1),
                     "worker_cpu_ms_per_task": round((ended[1] - began[1]) * 1000 / max(done, 1), 3)}
            stop(worker)
            worker = None
            broker.delete("webhooks")

        # 1. Throughput of the worker alone: the burst is committed and queued before the worker starts, and the
        # rate is counted from its first arrival to its last (the producer's speed does not enter the figure).
        burst = dict(record(n) for n in range(args.events))
        worker = start(worker_command, env, RESULTS / "worker.log")
        samples: list[tuple[float, ...]] = []

        def sample(seen: dict) -> None:
            samples.append((time.time(), *processes_cpu(worker.pid), processes_cpu(receiver.pid)[0],
                            machine_busy()))

        seen = wait_for(port, set(burst), 300, on_poll=sample)
        times = sorted(seen["first"][i] for i in burst if i in seen["first"])
        delivered = len(times)
        rate = (delivered - 1) / (times[-1] - times[0])
        # Sustained: the middle 80% of the burst, without the worker's start (connections, pools) and the tail.
        low, high = times[len(times) // 10], times[len(times) * 9 // 10]
        sustained = (len(times) * 8 // 10) / (high - low)
        # CPU per delivery between the polls nearest the 10% and 90% arrivals.
        first = min(samples, key=lambda s: abs(s[0] - low))
        last = min(samples, key=lambda s: abs(s[0] - high))
        in_window = sum(1 for t in times if first[0] < t <= last[0])
        cpu_ms = [round((b - a) / max(in_window, 1) * 1000, 3) for a, b in zip(first[1:], last[1:], strict=True)]

        # 2. Latency at a steady rate, from a few producer threads (one commits ~200 events/s on a busy machine).
        paced: dict[str, float] = {}
        producers = 4
        interval = producers / args.rate
        start_at = time.monotonic()

        def produce(k: int) -> None:
            try:
                for n in range(int(args.rate * args.seconds / producers)):
                    time.sleep(max(0.0, start_at + (n + k / producers) * interval - time.monotonic()))
                    event_id, committed = record(n * producers + k)
                    paced[event_id] = committed
            finally:
                connections.close_all()

        threads = [threading.Thread(target=produce, args=(k,)) for k in range(producers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        paced_rate = len(paced) / (time.monotonic() - start_at)
        seen = wait_for(port, set(paced), 120)
        delays = [seen["first"][i] - t for i, t in paced.items() if i in seen["first"]]

        # 3. A money task queued behind a storm of deliveries, to a fast receiver and to a slow one, the worker
        # running: the storm is committed in one transaction, so its messages reach the broker faster than the
        # worker drains them, then a payout's task is sent and timed until it has run (the payout left PENDING).
        # The broker keeps no trace of a message a worker took (Decision 118): the payout's row is the witness.
        ledger.adjustment_create(merchant=merchant, livemode=False, amount=1_000_000, reason="bench storm payouts",
                                 staff=merchant.owner)
        for name, path in (("fast", "/hook"), ("slow", f"/slow/{args.slow_ms}")):
            if not args.storm_events or (name == "slow" and not args.slow_ms):
                continue
            cache.flag_set(payout_dispatch.DISPATCH_FLAG, seconds=60)  # no dispatch message: the task below alone
            payout = payout_services.payout_create(merchant=merchant, livemode=False, data=payout_request_validate(
                {"amount": 100, "referenceId": f"storm-{name}", "pixKeyType": "EVP", "pixKey": str(uuid.uuid4())},
                merchant=merchant))
            with transaction.atomic():
                storm_ids = {record(n, base + path)[0] for n in range(args.storm_events)}
            backlog = broker.llen("webhooks")
            sent_at = time.time()
            app.send_task(PAYOUT_TASK, kwargs={"payout_ids": [str(payout.pk)]})
            deadline, done_at = time.monotonic() + 120, None
            while time.monotonic() < deadline and done_at is None:
                if Payout.objects.filter(pk=payout.pk).exclude(status=PayoutStatus.PENDING).exists():
                    done_at = time.time()
                time.sleep(0.005)
            seen = arrivals(port)
            firsts = [seen["first"][i] for i in storm_ids if i in seen["first"]]
            storm[name] = {
                "receiver_answer_ms": args.slow_ms if name == "slow" else 0, "deliveries_queued": backlog,
                "payout_done_after_s": round(done_at - sent_at, 3) if done_at else None,
                "deliveries_arrived_meanwhile": sum(1 for t in firsts if sent_at <= t <= (done_at or 0)),
            }
            if name == "fast":
                drained = wait_for(port, storm_ids, 120)["first"]
                storm[name]["storm_drained_after_s"] = round(max(drained[i] for i in storm_ids) - sent_at, 3)
    finally:
        if worker is not None:
            stop(worker)
        stop(receiver)
        app.control.purge()

    p50, p99 = percentile(delays, 50), percentile(delays, 99)
    figures = {
        "worker": f"1 worker ({' '.join(worker_command[2:])}): {described}",
        "burst_events": args.events, "burst_delivered": delivered, "deliveries_per_second": round(rate, 1),
        "sustained_deliveries_per_second": round(sustained, 1),
        "cpu_ms_per_delivery": dict(zip(("worker", "postgresql", "redis", "receiver", "machine"), cpu_ms,
                                        strict=True)),
        "paced_rate": args.rate, "paced_rate_achieved": round(paced_rate, 1), "paced_events": len(paced),
        "paced_delivered": len(delays), "delay_p50_ms": round(p50 * 1000, 1), "delay_p99_ms": round(p99 * 1000, 1),
        "delay_mean_ms": round(statistics.mean(delays) * 1000, 1), "storm": storm, "celery_floor": floor,
    }
    (RESULTS / "webhooks.json").write_text(json.dumps(figures, indent=2))
    print(f"Webhook delivery, {figures['worker']}; PostgreSQL + Redis broker, local receiver")
    print(f"  burst of {args.events}: {delivered} delivered, {rate:.1f} deliveries/s first to last arrival, "
          f"{sustained:.1f}/s sustained over the middle 80% "
          f"(target >= {TARGET_RATE:.0f}: {'met' if rate >= TARGET_RATE else 'MISSED'})")
    if floor:
        print(f"  Celery's floor, {floor['tasks']} no-op tasks through the same worker: {floor['tasks_per_second']}/s, "
              f"{floor['worker_cpu_ms_per_task']:.2f} ms of worker CPU each")
    print("  CPU per delivery (middle 80%): " + ", ".join(f"{name} {ms:.2f} ms" for name, ms in
                                                         figures["cpu_ms_per_delivery"].items()))
    print(f"  paced {paced_rate:.0f}/s for {args.seconds:.0f} s: commit to arrival p50 {p50 * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms (target p50 < {TARGET_P50 * 1000:.0f} ms: "
          f"{'met' if p50 < TARGET_P50 else 'MISSED'})")
    for name, figure in storm.items():
        drained = (f"; the storm drained {figure['storm_drained_after_s']} s after it"
                   if "storm_drained_after_s" in figure else "")
        print(f"  storm, {name} receiver ({figure['receiver_answer_ms']} ms an answer): a payout task sent behind "
              f"{figure['deliveries_queued']} queued deliveries had run {figure['payout_done_after_s']} s later "
              f"({figure['deliveries_arrived_meanwhile']} deliveries arrived meanwhile){drained}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
