"""Payouts end to end (issue 17, goal 2): the API and a Celery worker on one machine, as production runs them.

    .venv/bin/python bench/payouts_e2e.py [--duration 30] [--concurrency 8] [--tail 10] [--rounds 2]
                                          [--scenario "POST /payout hot merchant"] [--worker-args "..."]

One run, on its own database (`pagamentos_bench_e2e`) and Redis databases (10 cache, 11 broker):

1. gunicorn (bench/server.py, 3 sync workers) and the bench merchant(s), funded by the scenario's setup;
2. `--rounds` rounds of two phases, the first round running then paused, the second paused then running, and so
   on (the machine's speed drifts within a run; alternating keeps the drift out of the ratio):
   - **worker running**: `celery -A config worker` (the plain command; pool, concurrency and prefetch come from
     config/settings.py, `--worker-args` adds options to try others) on the same settings; once it is idle (the
     payouts an earlier paused phase left PENDING finished), POST /payout for `--duration` seconds
     (`bench/load.py`, the scenario's bodies), then `--tail` seconds more without load. Sampled at the start, at the
     load's stop and at the tail's end: the worker's CPU (utime + stime of its whole process tree,
     /proc/<pid>/stat), PostgreSQL's, and the payouts by status; then the worker stops;
   - **worker paused**: the same load without a worker (the payouts wait PENDING);
3. prints each round's API req/s, p50 and p99 both ways, then the run's: running against paused (the ratio of the
   phases' mean req/s), payouts COMPLETED per second, the largest backlog of any round (payouts neither COMPLETED
   nor FAILED) at the load's stop and at the tail's end, and the worker's CPU per completed payout over every
   round; writes bench/results/payouts_e2e.json.

Targets: worker CPU per payout <= 3 ms, no backlog `--tail` seconds after the load, API req/s with the worker
running >= 75% of it paused. Exit status 0 when it ran, 1 with --strict and a target missed, 2 when the harness
failed. Wrap it in `flock /tmp/bench.lock` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import scenarios as scenario_list
from load import pids_matching, process_ticks, ticks_used
from server import (
    ROOT,
    ApiClient,
    Autovacuum,
    Gunicorn,
    HarnessError,
    ServerConfig,
    analyze,
    connect,
    kill_group,
    prepare_data,
    recreate_database,
    reset_redis,
    service_env,
)

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"
LOAD_SCRIPT = BENCH_DIR / "load.py"
CELERY = ROOT / ".venv" / "bin" / "celery"
DATABASE = "pagamentos_bench_e2e"
REDIS_DBS = (10, 11)
FINAL = ("COMPLETED", "FAILED", "CANCELED", "RETURNED")
TICKS = os.sysconf("SC_CLK_TCK")
# Issue 17's targets (goal 2), judged here and by bench/goals.py.
RUNNING_OVER_PAUSED = 0.75
WORKER_MS_PER_PAYOUT = 3.0
# `--profile`: the worker under cProfile counting CPU time (not wall time: waits on PostgreSQL are not its cost).
PROFILED = """
import cProfile, runpy, sys, time
path, sys.argv = sys.argv[1], sys.argv[2:]
profile = cProfile.Profile(time.process_time)
try:
    profile.runcall(runpy.run_path, sys.argv[0], run_name="__main__")
except SystemExit:
    pass
finally:
    profile.dump_stats(path)
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Payouts end to end: API and Celery worker on one machine.")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load per phase")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--tail", type=float, default=10.0, help="seconds after the load before the backlog count")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--scenario", default="POST /payout hot merchant",
                        choices=["POST /payout hot merchant", "POST /payout 8 merchants"])
    parser.add_argument("--worker-args", default="", help="extra options after `celery -A config worker`")
    parser.add_argument("--profile", metavar="PATH", help="run the worker under cProfile (solo pool), stats to PATH")
    parser.add_argument("--skip-paused", action="store_true", help="measure only with the worker running")
    parser.add_argument("--rounds", type=lambda text: max(1, int(text)), default=2,
                        help="pairs of phases, alternating which goes first (running then paused, paused then "
                             "running…): a machine whose speed drifts during the run favours neither")
    parser.add_argument("--strict", action="store_true")
    return parser.parse_args(argv)


# --- The worker ------------------------------------------------------------------------------------------------------
class Worker:
    def __init__(self, env: dict[str, str], extra: str, log_path: Path, profile: str | None = None):
        self.env, self.extra, self.log_path, self.profile = env, extra, log_path, profile
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        command = [str(CELERY), "-A", "config", "worker", *shlex.split(self.extra)]
        if self.profile:  # one process, so that the one profiler sees every task
            command = [sys.executable, "-c", PROFILED, self.profile, *command, "--pool", "solo"]
        print("worker: celery " + " ".join(command[1:]), flush=True)
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def tree(self) -> list[int]:
        """The worker and every process under it (prefork children)."""
        if self.process is None:
            return []
        found, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            for task in _listdir(f"/proc/{pid}/task"):
                try:
                    todo += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
                except OSError:
                    pass
        return found

    def cpu_seconds(self) -> float:
        return sum(_ticks(pid) for pid in self.tree()) / TICKS

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if self.process.poll() is None:
                kill_group(self.process)


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _ticks(pid: int) -> int:
    """utime + stime of a process, its dead waited-for children included (cutime + cstime)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return sum(int(value) for value in fields[11:15])


def postgres_ticks() -> dict[int, int]:
    """The ticks of each backend of the bench's database, counted over a phase by load.ticks_used: a backend born
    in it (a gunicorn worker reconnecting at CONN_MAX_AGE) wholly; one that ended in it is lost, never subtracted."""
    return process_ticks(pids_matching("postgres", f" {DATABASE} "))


# --- The database ----------------------------------------------------------------------------------------------------
def payout_counts(conn: psycopg.Connection) -> dict[str, int]:
    rows = conn.execute("SELECT status, count(*) FROM payments_payout GROUP BY status").fetchall()
    return {status: count for status, count in rows}


def pending_work(counts: dict[str, int]) -> int:
    return sum(count for status, count in counts.items() if status not in FINAL)


def wait_idle(conn: psycopg.Connection, worker: Worker, seconds: float = 240) -> None:
    """Until no payout is left to move (the payouts a paused phase left PENDING among them) and the worker's CPU
    stays still for a second."""
    deadline = time.monotonic() + seconds
    before = worker.cpu_seconds()
    while time.monotonic() < deadline:
        time.sleep(1)
        if worker.process.poll() is not None:
            raise HarnessError(f"the worker exited with {worker.process.returncode}: see {worker.log_path}")
        now = worker.cpu_seconds()
        if not pending_work(payout_counts(conn)) and now - before < 0.05:
            return
        before = now
    raise HarnessError("the worker did not become idle")


# --- Load ----------------------------------------------------------------------------------------------------------
def start_load(server: Gunicorn, pair, values: dict, args: argparse.Namespace, database: str) -> subprocess.Popen:
    command = [sys.executable, str(LOAD_SCRIPT), "--port", str(server.port), "--scenario", args.scenario,
               "--duration", str(args.duration), "--warmup", str(args.warmup), "--concurrency",
               str(args.concurrency), "--server-pids", ",".join(str(pid) for pid in server.worker_pids()),
               "--database", database]
    env = {**os.environ, "BENCH_PUBLIC_KEY": pair.public_key, "BENCH_SECRET_KEY": pair.secret_key,
           "BENCH_SETUP_VALUES": json.dumps(values)}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish_load(process: subprocess.Popen, args: argparse.Namespace) -> dict:
    try:
        stdout, stderr = process.communicate(timeout=args.warmup + args.duration + 60)
    finally:
        kill_group(process)
    if process.returncode != 0:
        raise HarnessError(f"load generator failed ({process.returncode}):\n{stderr[-3000:]}")
    return json.loads(stdout)


def api_figures(part: dict) -> dict:
    latencies = sorted(part["latencies_us"])
    ok = len(latencies)
    errors = sum(part["statuses"].values()) - ok + sum(part["failures"].values())

    def pct(q: float) -> float:
        return round(latencies[min(ok - 1, int(q * ok))] / 1000, 1) if ok else 0.0

    return {"req_s": round(ok / part["duration"], 1), "p50_ms": pct(0.50), "p99_ms": pct(0.99), "errors": errors,
            "cpu_cores": part["cpu"]}


def phase_running(server, pair, values, args, worker: Worker, conn) -> dict:
    worker.start()
    wait_idle(conn, worker)  # started, connected, its start-up dispatch done
    counts0, cpu0, pg0, t0 = payout_counts(conn), worker.cpu_seconds(), postgres_ticks(), time.monotonic()
    load = start_load(server, pair, values, args, DATABASE)
    part = finish_load(load, args)
    counts1, cpu1, t1 = payout_counts(conn), worker.cpu_seconds(), time.monotonic()
    time.sleep(args.tail)
    counts2, cpu2, pg2, t2 = payout_counts(conn), worker.cpu_seconds(), postgres_ticks(), time.monotonic()
    if worker.process.poll() is not None:
        raise HarnessError(f"the worker exited with {worker.process.returncode}: see {worker.log_path}")
    created = sum(counts2.values()) - sum(counts0.values())
    completed_load = counts1.get("COMPLETED", 0) - counts0.get("COMPLETED", 0)
    completed = counts2.get("COMPLETED", 0) - counts0.get("COMPLETED", 0)
    finished = sum(counts2.get(s, 0) - counts0.get(s, 0) for s in FINAL)
    # Every payout that left PENDING and every one that became final: a payout is two state changes.
    changes = created - counts2.get("PENDING", 0) + counts0.get("PENDING", 0) + finished
    worker_cpu = cpu2 - cpu0
    postgres = ticks_used(pg0, pg2) / TICKS
    return {
        "api": api_figures(part),
        "payouts_created": created,
        "payouts_finished": finished,
        "completed_during_load": completed_load,
        "completed_total": completed,
        "completed_per_s_during_load": round(completed_load / (t1 - t0), 1),
        "completed_per_s_load_and_tail": round(completed / (t2 - t0), 1),
        "backlog_at_load_stop": pending_work(counts1),
        "backlog_after_tail": pending_work(counts2),
        "statuses_after_tail": counts2,
        "worker_cpu_s": round(worker_cpu, 2),
        "worker_cpu_s_during_load": round(cpu1 - cpu0, 2),
        "worker_cores_during_load": round((cpu1 - cpu0) / (t1 - t0), 2),
        "worker_ms_per_payout": round(worker_cpu * 1000 / finished, 2) if finished else None,
        "worker_ms_per_state_change": round(worker_cpu * 1000 / changes, 2) if changes else None,
        "postgres_cpu_s": round(postgres, 2),
        "postgres_ms_per_payout_all": round(postgres * 1000 / created, 2) if created else None,
    }


def phase_paused(server, pair, values, args) -> dict:
    load = start_load(server, pair, values, args, DATABASE)
    return {"api": api_figures(finish_load(load, args))}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    env = service_env(DATABASE, REDIS_DBS)
    scenario = scenario_list.by_name()[args.scenario]
    server = worker = None
    try:
        print(f"setting up: database {DATABASE}, Redis {REDIS_DBS}", flush=True)
        recreate_database(DATABASE)
        reset_redis(REDIS_DBS)
        pair = prepare_data(env)
        server = Gunicorn(ServerConfig(workers=3, worker_class="sync", threads=1), env,
                          RESULTS / "gunicorn-payouts-e2e.log")
        server.start()
        api = ApiClient(server.port, pair)
        api.env, api.root = env, ROOT
        values = scenario.setup(api) if scenario.setup else {}
        analyze(DATABASE)
        worker = Worker(env, args.worker_args, RESULTS / "worker-payouts-e2e.log", args.profile)
        with connect(DATABASE) as conn, \
                Autovacuum([DATABASE]):  # the statistics a live database keeps current
            print(f"{args.rounds} round(s) of the worker running and paused: {args.scenario}, {args.concurrency} "
                  f"clients, {args.duration:g} s each, the running one then {args.tail:g} s without load", flush=True)
            running, paused = [], []
            for number in range(args.rounds):
                order = ("running", "paused") if number % 2 == 0 else ("paused", "running")
                for phase in order:
                    if phase == "running":
                        print(f"round {number + 1}: worker running", flush=True)
                        running.append(phase_running(server, pair, values, args, worker, conn))
                        worker.stop()
                    elif not args.skip_paused:
                        print(f"round {number + 1}: worker paused (not running: its payouts wait PENDING)",
                              flush=True)
                        paused.append(phase_paused(server, pair, values, args))
    except HarnessError as error:
        print(f"harness error: {error}", file=sys.stderr)
        return 2
    finally:
        if worker is not None:
            worker.stop()
        if server is not None:
            server.stop()
    result = {"scenario": args.scenario, "duration": args.duration, "concurrency": args.concurrency,
              "tail": args.tail, "worker_args": args.worker_args, "rounds": args.rounds, "running": running,
              "paused": paused}
    result["summary"] = summary(result)
    (RESULTS / "payouts_e2e.json").write_text(json.dumps(result, indent=2))
    return report(result, args)


def summary(result: dict) -> dict:
    """The run's figures over its rounds, written into the results for bench/goals.py: API req/s running and paused
    (means of the phases) and their ratio, the largest backlog of any round at the load's stop and `--tail` seconds
    later, the worker's CPU over every payout it finished, PostgreSQL's per payout created."""
    running, paused = result["running"], result["paused"]
    mean_running = sum(phase["api"]["req_s"] for phase in running) / len(running)
    mean_paused = sum(phase["api"]["req_s"] for phase in paused) / len(paused) if paused else None
    created = sum(phase["payouts_created"] for phase in running)
    worker_cpu = sum(phase["worker_cpu_s"] for phase in running)
    finished = sum(phase["payouts_finished"] for phase in running)
    postgres = sum(phase["postgres_cpu_s"] for phase in running)
    return {
        "running_req_s": round(mean_running, 1), "paused_req_s": None if mean_paused is None else round(mean_paused, 1),
        "running_over_paused": round(mean_running / mean_paused, 3) if mean_paused else None,
        "payouts_created": created, "payouts_completed": sum(phase["completed_total"] for phase in running),
        "backlog_at_load_stop": max(phase["backlog_at_load_stop"] for phase in running),
        "backlog_after_tail": max(phase["backlog_after_tail"] for phase in running),
        "worker_cpu_s": round(worker_cpu, 2),
        "worker_ms_per_payout": round(worker_cpu * 1000 / finished, 2) if finished else None,
        "postgres_ms_per_payout": round(postgres * 1000 / created, 2) if created else None,
    }


def report(result: dict, args: argparse.Namespace) -> int:
    """Each round's figures, then the run's (`summary`)."""
    running, paused, figures = result["running"], result["paused"], result["summary"]
    print()
    for number, phase in enumerate(running):
        r = phase["api"]
        line = (f"round {number + 1}: running {r['req_s']:,.1f} req/s (p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, "
                f"{r['errors']} errors; cores {r['cpu_cores']})")
        if number < len(paused):
            p = paused[number]["api"]
            line += (f"; paused {p['req_s']:,.1f} req/s (p50 {p['p50_ms']} ms, p99 {p['p99_ms']} ms, "
                     f"{p['errors']} errors; cores {p['cpu_cores']}); running / paused "
                     f"{r['req_s'] / p['req_s'] if p['req_s'] else 0.0:.2f}")
        print(line)
    missed = []
    print(f"\nAPI, worker running: {figures['running_req_s']:,.1f} req/s (mean of {len(running)})")
    if paused:
        print(f"API, worker paused:  {figures['paused_req_s']:,.1f} req/s (mean of {len(paused)})")
        share = figures["running_over_paused"] or 0.0
        print(f"running / paused: {share:.2f} (target >= {RUNNING_OVER_PAUSED})")
        if share < RUNNING_OVER_PAUSED:
            missed.append("API throughput")
    print(f"payouts: {figures['payouts_created']} created, {figures['payouts_completed']} COMPLETED (" + ", ".join(
        f"{phase['completed_per_s_during_load']}/s during the load" for phase in running) + ")")
    print(f"backlog (not final), the largest of any round: {figures['backlog_at_load_stop']} at the load's stop, "
          f"{figures['backlog_after_tail']} {args.tail:g} s later (target 0)")
    per_payout = figures["worker_ms_per_payout"]
    print(f"worker CPU: {figures['worker_cpu_s']} s, {per_payout} ms per finished payout (target <= "
          f"{WORKER_MS_PER_PAYOUT:g}; rounds: " + ", ".join(str(phase["worker_ms_per_payout"]) for phase in running)
          + f"); PostgreSQL (web and worker) {figures['postgres_ms_per_payout']} ms per payout created")
    if figures["backlog_after_tail"]:
        missed.append("backlog")
    if per_payout is None or per_payout > WORKER_MS_PER_PAYOUT:
        missed.append("worker CPU per payout")
    print("targets missed: " + ", ".join(missed) if missed else "targets met")
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
