"""The soak test (issue 7): minutes of mixed traffic against the whole production stack while it is hurt, then
proof that nothing was lost, doubled or left behind.

    .venv/bin/python tests/soak/soak.py [--duration 180] [--clients 16] [--merchants 8] [--drain-timeout 90]
                                   [--database pagamentos_soak]

Stack: a fresh PostgreSQL database (`--database`, dropped and created again), a redis-server of its own on a free
port (cache and broker on two databases), gunicorn (3 sync workers), one Celery worker (threads x 8), one beat, and
a webhook receiver, each a process of its own. Every merchant has a test key pair, a webhook endpoint for all
events, and some of its charges and payouts a `webhookUrl` of their own.

Traffic: --clients threads send the mix of bench/soak_traffic.py for --duration seconds. Faults: the worker is
SIGKILLed at 1/3 and 2/3 of the duration (and restarted 2 s later), and redis-server is shut down without saving at
1/2 (and started again, empty, 1 s later). Then the traffic stops, the worker keeps running, and the soak waits (at
most --drain-timeout seconds) until every payout is final, every refund resolved and every delivery made.

Invariants (any failure: exit 1, each failure printed):
- no 5xx and no connection error outside the Redis window [shutdown, back up + 2 s]; every 5xx has the SPEC §1.1
  error body; no answer a request may not get (e.g. a validation error on a valid body); idempotent replays return
  the first answer;
- the drain finishes in time; every payout final and sent to the rail exactly once (calls == 1), and we and the
  rail agree on every payout and refund; each transition's event written once;
- every event has a delivery and every delivery reached the receiver (its webhook-id seen), validly signed;
- no Celery process exits on its own (one that does is restarted, as a supervisor would, and the run goes on);
- `manage.py ledger_check` exits 0; the merchants' balances equal what the simulator rail says came in minus what
  left, minus fees, plus adjustments (see bench/soak_checks.py for the identity), to the cent.

Exit status: 0 all invariants hold, 1 an invariant failed, 2 the harness itself failed, 130 interrupted. Every
process it started is stopped in every case; logs are in bench/results/<database>/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.server

import soak_checks
import soak_services
import soak_traffic

from bench import server  # the database, manage.py and gunicorn helpers python -m bench uses

RESULTS = server.ROOT / "bench" / "results"
INITIAL_FUNDS = 500_000  # cents each merchant is credited by a staff adjustment, so payouts can start at once
WORKER_DOWN_SECONDS = 2.0
REDIS_DOWN_SECONDS = 1.0
REDIS_WINDOW_TAIL = 2.0  # seconds after Redis is back during which 5xx are still forgiven


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of traffic (180)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent client threads (16)")
    parser.add_argument("--merchants", type=int, default=8, help="merchants, each with a test key pair (8)")
    parser.add_argument("--drain-timeout", type=float, default=90.0,
                        help="seconds the run may take after the traffic to settle everything (90)")
    parser.add_argument("--database", default="pagamentos_soak",
                        help="PostgreSQL database, dropped and created again (pagamentos_soak); logs go to "
                             "bench/results/<database>/")
    args = parser.parse_args(argv)
    if args.duration < 15 or args.clients < 1 or args.merchants < 1 or args.drain_timeout <= 0:
        parser.error("duration must be >= 15 s (three faults fit in it), clients and merchants >= 1")
    return args


STARTED = time.monotonic()


def log(message: str) -> None:
    # Elapsed time, not the clock: Django's setup changes this process's time zone to TIME_ZONE.
    print(f"[{time.monotonic() - STARTED:6.1f} s] {message}", flush=True)


# --- Setup -------------------------------------------------------------------------------------------------------
def django_setup(env: dict[str, str]) -> None:
    """This process reads and writes the soak database directly: setup through the services, checks at the end."""
    os.environ.update(env)
    import django

    django.setup()


def merchants_create(count: int, receiver: soak_services.Receiver) -> list[soak_traffic.MerchantTarget]:
    """Merchants, each with a test key pair, a webhook endpoint for every event type, and initial funds."""
    from accounts import services as accounts
    from accounts.models import User
    from integrations.services import apikey_create
    from payments.ledger.services import adjustment_create
    from webhooks.services import endpoint_create, signing_secret_reveal

    staff = User.objects.create_user(email="soak-staff@example.com", password=None, is_staff=True)
    targets, secrets = [], {}
    for n in range(count):
        merchant = accounts.merchant_signup(email=f"soak{n}@example.com", password=f"soak-password-{n}-x",
                                            name=f"Loja Soak {n}")
        api_key, secret_key = apikey_create(merchant=merchant, livemode=False, label="soak")
        endpoint_create(merchant=merchant, livemode=False, url=receiver.url(f"/hook/ep/{n}"), event_types=[],
                        description="soak: every event")
        adjustment_create(merchant=merchant, livemode=False, amount=INITIAL_FUNDS, reason="soak: initial funds",
                          staff=staff)
        secrets[str(n)] = [signing_secret_reveal(merchant=merchant, livemode=False)]
        targets.append(soak_traffic.MerchantTarget(index=n, public_key=api_key.public_key, secret_key=secret_key,
                                                   object_webhook_url=receiver.url(f"/hook/obj/{n}")))
    receiver.register_secrets(secrets)  # both paths of merchant n end in n
    return targets


# --- The run -----------------------------------------------------------------------------------------------------
class Soak:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.workdir = RESULTS / args.database
        self.redis: soak_services.RedisServer | None = None
        self.receiver: soak_services.Receiver | None = None
        self.gunicorn: server.Gunicorn | None = None
        self.celery: soak_services.Celery | None = None
        self.env: dict[str, str] = {}
        self.stats = soak_traffic.Stats()
        self.redis_window: tuple[float, float] | None = None
        self.faults: list[str] = []
        self.crashes: list[str] = []
        self.traffic_started = 0.0
        self.figures: dict = {}
        self.traffic_seconds = 0.0
        self.drain_seconds: float | None = None

    def run(self) -> list[str]:
        started = time.monotonic()
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir.mkdir(parents=True)
        self.redis = soak_services.RedisServer(self.workdir)
        self.redis.start()
        self.env = soak_services.soak_env(database=self.args.database, redis_port=self.redis.port)
        log(f"database {self.args.database} (fresh), redis-server on port {self.redis.port}; migrating")
        server.recreate_database(self.env["DATABASE_URL"])
        server.manage(self.env, "migrate", "--noinput", "-v", "0")
        django_setup(self.env)
        self.receiver = soak_services.Receiver(self.env, self.workdir)
        targets = merchants_create(self.args.merchants, self.receiver)
        self.gunicorn = server.Gunicorn(server.ROOT, self.env, self.workdir / "gunicorn.log", workers=3)
        self.gunicorn.start()
        self.celery = soak_services.Celery(self.env, self.workdir)
        self.celery.start_worker()
        self.celery.start_beat()
        log(f"gunicorn (3 sync workers) on port {self.gunicorn.port}, Celery worker (threads x 8) and beat, "
            f"receiver on port {self.receiver.port}; setup took {time.monotonic() - started:.0f} s")

        self.traffic(targets)
        failures = self.drain()
        failures += self.verify(targets)
        self.figures["wall time"] = f"{time.monotonic() - started:.0f} s"
        return failures

    def traffic(self, targets: list[soak_traffic.MerchantTarget]) -> None:
        duration = self.args.duration
        stop = threading.Event()
        log(f"traffic: {self.args.clients} clients on {len(targets)} merchants for {duration:.0f} s")
        t0 = self.traffic_started = time.monotonic()
        clients = soak_traffic.run_clients(count=self.args.clients, base_url=f"http://{server.HOST}:"
                                           f"{self.gunicorn.port}", targets=targets, stats=self.stats, stop=stop,
                                           duration=duration)
        plan = [(duration / 3, self.kill_worker), (duration / 2, self.restart_redis),
                (2 * duration / 3, self.kill_worker)]
        try:
            for at, fault in plan:
                self.sleep_until(t0 + at)
                fault(t0)
            self.sleep_until(t0 + duration)
        finally:
            stop.set()
            for client in clients:
                client.join(timeout=soak_traffic.RETRY_BUDGET + soak_traffic.REQUEST_TIMEOUT + 5)
        self.traffic_seconds = time.monotonic() - t0
        stuck = [c.name for c in clients if c.is_alive()]
        if stuck:
            raise server.HarnessError(f"client threads did not stop: {stuck}")
        log(f"traffic stopped after {self.traffic_seconds:.0f} s: {len(self.stats.records)} requests")

    def sleep_until(self, moment: float) -> None:
        """Sleep, watching the processes: gunicorn's death ends the run; a Celery process that exits on its own is
        restarted and recorded (see soak_services.Celery.supervise)."""
        while (left := moment - time.monotonic()) > 0:
            time.sleep(min(left, 0.5))
            if self.gunicorn.process.poll() is not None:
                raise server.HarnessError(f"gunicorn exited with {self.gunicorn.process.returncode}:\n"
                                          f"{self.gunicorn.log_tail()}")
            for crash in self.celery.supervise():
                at = time.monotonic() - self.traffic_started if self.traffic_started else 0.0
                self.crashes.append(f"{crash} (at {at:.1f} s)")
                log(f"CRASH: {self.crashes[-1]}")

    def kill_worker(self, t0: float) -> None:
        self.celery.kill_worker()
        log(f"fault: worker SIGKILLed at {time.monotonic() - t0:.1f} s")
        time.sleep(WORKER_DOWN_SECONDS)
        self.celery.start_worker()
        self.faults.append(f"worker SIGKILLed at {time.monotonic() - t0 - WORKER_DOWN_SECONDS:.1f} s, "
                           f"restarted {WORKER_DOWN_SECONDS:.0f} s later")

    def restart_redis(self, t0: float) -> None:
        down = time.monotonic()
        self.redis.shutdown()
        time.sleep(REDIS_DOWN_SECONDS)
        self.redis.start()
        up = time.monotonic()
        self.redis_window = (down, up + REDIS_WINDOW_TAIL)
        self.faults.append(f"redis-server shut down (nosave) at {down - t0:.1f} s, back up (empty) at "
                           f"{up - t0:.1f} s; 5xx forgiven until {up - t0 + REDIS_WINDOW_TAIL:.1f} s")
        log(f"fault: {self.faults[-1]}")

    def drain(self) -> list[str]:
        """Wait, with the worker and beat running, until nothing is left to settle or deliver."""
        started = time.monotonic()
        deadline = started + self.args.drain_timeout
        last_log = 0.0
        while True:
            left = soak_checks.outstanding()
            missing = [] if any(left.values()) else soak_checks.deliveries_missing(self.receiver.arrivals())
            if not any(left.values()) and not missing:
                self.drain_seconds = time.monotonic() - started
                log(f"drained in {self.drain_seconds:.1f} s")
                return []
            now = time.monotonic()
            if now > deadline:
                return [f"drain not finished after {self.args.drain_timeout:.0f} s: {left}, "
                        f"{len(missing)} deliveries not received"]
            if now - last_log > 10:
                log(f"draining: {left}")
                last_log = now
            self.sleep_until(now + 1.0)

    # --- Verdict ---------------------------------------------------------------------------------------------
    def verify(self, targets: list[soak_traffic.MerchantTarget]) -> list[str]:
        out = soak_checks.Outcome()
        self.requests_check(out)
        ledger = subprocess.run([str(server.PYTHON), "manage.py", "ledger_check"], cwd=server.ROOT, env=self.env,
                                capture_output=True, text=True, timeout=300, check=False)
        ledger_text = (ledger.stdout + ledger.stderr).strip()
        out.figures["ledger_check"] = f"exit {ledger.returncode}: {ledger_text.splitlines()[-1] if ledger_text else ''}"
        out.check(ledger.returncode == 0, f"ledger_check failed:\n{ledger_text[-3000:]}")
        soak_checks.payouts_check(out)
        soak_checks.refunds_check(out)
        soak_checks.payins_check(out)
        soak_checks.deliveries_check(out, self.receiver.arrivals())
        soak_checks.money_check(out, self.api_balances(targets))
        self.crashes += [f"{c} (after the drain)" for c in self.celery.supervise()]
        out.check(not self.crashes, "Celery processes died on their own: " + "; ".join(self.crashes))
        self.figures.update(out.figures)
        return out.failures

    def api_balances(self, targets: list[soak_traffic.MerchantTarget]) -> list[dict]:
        balances = []
        for target in targets:
            api = server.ApiClient(self.gunicorn.port, server.KeyPair(target.public_key, target.secret_key))
            balances.append(api.get_json("/balance"))
        return balances

    def in_window(self, record: soak_traffic.Record) -> bool:
        if self.redis_window is None:
            return False
        start, end = self.redis_window
        return record.started <= end and record.ended >= start

    def requests_check(self, out: soak_checks.Outcome) -> None:
        records = self.stats.records
        by_endpoint: dict[str, Counter] = defaultdict(Counter)
        for r in records:
            by_endpoint[r.endpoint][r.status if r.status is not None else "no answer"] += 1
        self.figures["requests"] = len(records)
        self.figures["requests/s"] = round(len(records) / self.traffic_seconds, 1)
        self.figures["by endpoint"] = {e: dict(sorted(c.items(), key=str)) for e, c in sorted(by_endpoint.items())}
        durations: dict[str, list[float]] = defaultdict(list)
        for r in records:
            if r.status is not None and r.status < 500:
                durations[r.endpoint].append(r.ended - r.started)
        self.figures["latency"] = {e: (percentile(d, 50), percentile(d, 99)) for e, d in durations.items()}
        self.figures["by status"] = dict(sorted(Counter(r.status if r.status is not None else "no answer"
                                                        for r in records).items(), key=str))
        server_errors = [r for r in records if r.status is not None and r.status >= 500]
        no_answer = [r for r in records if r.status is None and r.endpoint != "harness"]
        inside = [r for r in server_errors + no_answer if self.in_window(r)]
        outside = [r for r in server_errors + no_answer if not self.in_window(r)]
        self.figures["5xx"] = {"inside the Redis window": sum(r.status is not None for r in inside),
                               "outside": sum(r.status is not None for r in outside),
                               "codes": dict(Counter(f"{r.status} {r.code}" for r in server_errors))}
        self.figures["no answer (connection errors)"] = {"inside the Redis window": sum(r.status is None
                                                                                        for r in inside),
                                                         "outside": sum(r.status is None for r in outside)}
        if self.redis_window:
            self.figures["Redis window"] = f"{self.redis_window[1] - self.redis_window[0]:.1f} s"
        t_base = records[0].started if records else 0.0
        out.check(not outside, f"{len(outside)} 5xx or unanswered request(s) outside the Redis window, e.g. "
                               + "; ".join(f"{r.endpoint} {r.status} {r.code} at {r.started - t_base:.1f} s"
                                           for r in outside[:10]))
        bad_bodies = [r for r in server_errors if not r.spec_body]
        out.check(not bad_bodies, f"{len(bad_bodies)} 5xx without the SPEC error body, e.g. "
                                  + "; ".join(f"{r.endpoint} {r.status}" for r in bad_bodies[:5]))
        unexpected = [r for r in records if r.status is not None and r.status < 500 and not r.expected]
        harness = [r for r in records if r.endpoint == "harness"]
        self.figures["unexpected answers"] = len(unexpected)
        out.check(not unexpected, f"{len(unexpected)} unexpected answer(s), e.g. "
                                  + "; ".join(f"{r.endpoint} {r.status} {r.code}: {r.detail}"
                                              for r in unexpected[:8]))
        out.check(not harness, f"{len(harness)} client error(s): " + "; ".join(r.code for r in harness[:5]))
        self.figures["idempotent replays"] = f"{self.stats.replays}, {len(self.stats.replay_mismatches)} mismatched"
        out.check(not self.stats.replay_mismatches, f"replays that differ: {self.stats.replay_mismatches[:5]}")

    def stop(self) -> None:
        for stopper in (self.gunicorn and self.gunicorn.stop, self.celery and self.celery.stop,
                        self.receiver and self.receiver.stop, self.redis and self.redis.stop):
            if stopper:
                try:
                    stopper()
                except Exception:  # keep stopping the others
                    traceback.print_exc()


# --- Report ------------------------------------------------------------------------------------------------------
def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else 0.0


def print_figures(args: argparse.Namespace, soak: Soak) -> None:
    f = soak.figures
    rows: list[tuple[str, str]] = [
        ("traffic", f"{soak.traffic_seconds:.0f} s, {args.clients} clients, {args.merchants} merchants"),
        ("drain", f"{soak.drain_seconds:.1f} s" if soak.drain_seconds is not None else "not finished"),
        ("wall time", f.get("wall time", "?")),
        ("requests", f"{f.get('requests', 0)} ({f.get('requests/s', 0)}/s)"),
    ]
    for endpoint, statuses in f.get("by endpoint", {}).items():
        p50, p99 = f.get("latency", {}).get(endpoint, (0.0, 0.0))
        rows.append((f"  {endpoint}", ", ".join(f"{s}: {n}" for s, n in statuses.items())
                     + f"   (p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms)"))
    rows.append(("by status", ", ".join(f"{s}: {n}" for s, n in f.get("by status", {}).items())))
    rows.append(("5xx", str(f.get("5xx", {}))))
    rows.append(("no answer", str(f.get("no answer (connection errors)", {}))))
    rows.append(("unexpected answers", str(f.get("unexpected answers", "?"))))
    rows.append(("idempotent replays", str(f.get("idempotent replays", "?"))))
    for fault in soak.faults:
        rows.append(("fault", fault))
    rows.append(("worker kills", str(soak.celery.kills if soak.celery else 0)))
    for crash in soak.crashes:
        rows.append(("CRASH", crash))
    rows.append(("events", str(f.get("events", "?"))))
    for event_type, n in f.get("events by type", {}).items():
        rows.append((f"  {event_type}", str(n)))
    rows.append(("deliveries", f"{f.get('deliveries', '?')}, {f.get('delivery attempts', '?')} attempts"))
    for name, value in f.get("receiver", {}).items():
        rows.append((f"  receiver: {name}", str(value)))
    rows.append(("charges", ", ".join(f"{k}: {n}" for k, n in f.get("charges", {}).items())))
    rows.append(("payouts", str(f.get("payouts", "?"))))
    rows.append(("payout rail calls > 1", str(f.get("payout rail calls > 1", "?"))))
    rows.append(("refunds", str(f.get("refunds", "?"))))
    for name, value in f.get("money", {}).items():
        rows.append((name, f"{value / 100:,.2f} BRL ({value} cents)"))
    rows.append(("ledger_check", f.get("ledger_check", "not run")))
    width = max(len(name) for name, _ in rows)
    print("\n" + "\n".join(f"{name:<{width}}  {value}" for name, value in rows), flush=True)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    soak = Soak(args)
    failures: list[str] = []
    try:
        failures = soak.run()
    except KeyboardInterrupt:
        print("\ninterrupted; stopping every process", file=sys.stderr)
        return 130
    except server.HarnessError as error:
        print(f"soak harness failed: {error}\nlogs: {soak.workdir}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        return 2
    finally:
        soak.stop()
    print_figures(args, soak)
    if failures:
        print(f"\nSOAK FAILED: {len(failures)} invariant(s) broken (logs: {soak.workdir})")
        for failure in failures:
            print(f"- {failure}")
        return 1
    print("\nsoak passed: every invariant holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
