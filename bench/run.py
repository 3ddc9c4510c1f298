"""The benchmark: the service under gunicorn on PostgreSQL, loaded from a separate process, each endpoint's req/s,
p50 and p99, and its ratio to a baseline measured in the same run (see bench/README.md).

    .venv/bin/python bench/run.py [--duration 10] [--concurrency 8] [--scenario NAME ...] [--strict]

Exit status: 0 when the bench ran (a missed target is printed as MISSED), 1 with --strict and a missed target,
2 when the harness itself failed, 130 when interrupted. gunicorn is stopped in every case.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

import report
import scenarios as scenario_list
from load import machine_busy
from scenarios import Scenario
from server import (
    DATABASE,
    ROOT,
    ApiClient,
    Gunicorn,
    HarnessError,
    KeyPair,
    ServerConfig,
    analyze,
    kill_group,
    prepare_data,
    recreate_database,
    reset_redis,
    service_env,
)

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"
LOAD_SCRIPT = BENCH_DIR / "load.py"
LATER_WARMUP = 0.5  # seconds of warm-up in rounds after the first: enough to reopen connections


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark the API under gunicorn on PostgreSQL.")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per scenario (10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each scenario (2)")
    parser.add_argument("--concurrency", type=int, default=8, help="simultaneous client connections (8)")
    parser.add_argument("--client-procs", type=int, default=1, help="load generator processes (1)")
    # Sync workers, cores + 1: see bench/README.md for the measurements behind the choice.
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (3)")
    parser.add_argument("--worker-class", choices=["sync", "gthread"], default="sync", help="(sync)")
    parser.add_argument("--threads", type=int, default=2, help="threads per gthread worker (2)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="split each scenario's duration into this many windows, alternating scenarios (5)")
    parser.add_argument("--scenario", action="append", default=[], metavar="NAME",
                        help="measure only this scenario (repeatable); baselines it needs are added")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--floor", action="store_true",
                        help="serve bench/floor.py and measure the floors too (what an endpoint cannot cost less than)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.duration <= 0 or args.warmup < 0 or min(args.concurrency, args.client_procs, args.workers,
                                                     args.threads, args.rounds) < 1:
        parser.error("duration must be > 0, warmup >= 0, and the counts >= 1")
    return args


def chosen_scenarios(names: list[str], *, floor: bool = False) -> list[Scenario]:
    """The scenarios to run, in SCENARIOS order, with the baselines of the chosen ones; the floors only with
    `floor` (only bench/floor.py serves them)."""
    problems = scenario_list.check(scenario_list.SCENARIOS)
    if problems:
        raise HarnessError("bench/scenarios.py: " + "; ".join(problems))
    known = scenario_list.by_name()
    if not floor:
        known = {name: scenario for name, scenario in known.items() if not scenario.floor}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise HarnessError(f"unknown scenario(s) {unknown}; known: {list(known)}")
    wanted = set(names or known)
    while missing := {known[name].baseline for name in wanted if known[name].baseline} - wanted:
        wanted |= missing  # and the baseline's baseline, so every chosen target is judged
    return [scenario for scenario in scenario_list.SCENARIOS if scenario.name in wanted and scenario.name in known]


def run_setups(scenarios: list[Scenario], server: Gunicorn, pair: KeyPair) -> dict[str, str]:
    """Each distinct setup of the chosen scenarios, once, through the API: the values of their paths' placeholders.
    Then ANALYZE, so that the planner knows the tables as it would on a live database (see server.analyze)."""
    values: dict[str, str] = {}
    api = ApiClient(server.port, pair)
    api.env = server.env  # a setup that makes more merchants runs manage.py with the server's own settings
    for setup in dict.fromkeys(scenario.setup for scenario in scenarios if scenario.setup):
        made = setup(api)
        print(f"setup {setup.__name__}: {made}", flush=True)
        values.update(made)
    analyze()
    return values


def measure(scenario: Scenario, server: Gunicorn, pair: KeyPair, args: argparse.Namespace, *, duration: float,
            warmup: float, values: dict[str, str]) -> dict:
    """One window of one scenario, driven by load.py in its own process (and session, so it can be killed with the
    children it forks)."""
    command = [sys.executable, str(LOAD_SCRIPT), "--port", str(server.port), "--scenario", scenario.name,
               "--duration", str(duration), "--warmup", str(warmup), "--concurrency", str(args.concurrency),
               "--procs", str(args.client_procs),
               "--server-pids", ",".join(str(pid) for pid in server.worker_pids()), "--database", DATABASE]
    env = {**os.environ, "BENCH_PUBLIC_KEY": pair.public_key, "BENCH_SECRET_KEY": pair.secret_key,
           "BENCH_SETUP_VALUES": json.dumps(values)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=warmup + duration + 60)
    except subprocess.TimeoutExpired as error:
        raise HarnessError(f"load generator hung on {scenario.name}") from error
    finally:
        kill_group(process)  # a no-op once it exited; on timeout or Ctrl-C it takes the forked children too
    if process.returncode != 0:
        raise HarnessError(f"load generator failed on {scenario.name} ({process.returncode}):\n{stderr[-3000:]}")
    try:
        return json.loads(stdout)
    except ValueError as error:
        raise HarnessError(f"load generator printed no result for {scenario.name}: {stdout[-500:]!r}") from error


def progress(part: dict, round_number: int, rounds: int) -> str:
    ok = len(part["latencies_us"])
    errors = sum(part["statuses"].values()) - ok + sum(part["failures"].values())
    return (f"  round {round_number}/{rounds} {part['name']}: {ok / part['duration']:,.1f} req/s"
            + (f", {errors} errors" if errors else ""))


def measure_all(scenarios: list[Scenario], server: Gunicorn, pair: KeyPair,
                args: argparse.Namespace) -> dict[str, list[dict]]:
    """Every scenario, `--rounds` times, alternating: a burst of background load on a shared machine then hits
    every scenario of one round rather than all of one scenario's time."""
    values = run_setups(scenarios, server, pair)
    duration = args.duration / args.rounds
    parts: dict[str, list[dict]] = {scenario.name: [] for scenario in scenarios}
    for round_number in range(1, args.rounds + 1):
        # The first round warms each code path up (imports, connections, caches); later ones only reconnect.
        warmup = args.warmup if round_number == 1 else min(args.warmup, LATER_WARMUP)
        for scenario in scenarios:
            part = measure(scenario, server, pair, args, duration=duration, warmup=warmup, values=values)
            parts[scenario.name].append(part)
            print(progress(part, round_number, args.rounds), flush=True)
            if server.process.poll() is not None:
                raise HarnessError(f"gunicorn died during {scenario.name}:\n{server.log_tail()}")
    return parts


def run(args: argparse.Namespace, scenarios: list[Scenario], config: ServerConfig) -> tuple[dict, float]:
    """Set up, start gunicorn, measure; gunicorn is stopped whatever happens. Returns the parts and how busy the
    machine was before the load started."""
    env = service_env()
    print(f"setting up: database {DATABASE}, migrate, merchant and test key", flush=True)
    recreate_database()
    reset_redis()
    pair = prepare_data(env)
    RESULTS.mkdir(parents=True, exist_ok=True)
    server = Gunicorn(config, env, RESULTS / "gunicorn.log")
    try:
        server.start()
        idle_busy = machine_busy(1.0)
        print(f"{config.describe()} on 127.0.0.1:{server.port}; {args.concurrency} connections, "
              f"{args.client_procs} client process(es); {args.rounds} round(s) of {args.duration / args.rounds:g}s "
              f"per scenario; machine {idle_busy:.2f} cores busy before start", flush=True)
        return measure_all(scenarios, server, pair, args), idle_busy
    finally:
        server.stop()


def meta(args: argparse.Namespace, config: ServerConfig) -> dict:
    return {
        "finishedAt": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git_commit(),
        "server": config.describe() + (" serving bench/floor.py" if args.floor else ""),
        "duration": args.duration, "rounds": args.rounds, "warmup": args.warmup, "concurrency": args.concurrency,
        "clientProcs": args.client_procs, "cpus": os.cpu_count(), "python": platform.python_version(),
    }


def _git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def print_report(rows: list[dict], idle_busy: float) -> None:
    print()
    print(report.table(rows))
    print()
    print("\n".join(report.detail_lines(rows)))
    print(f"\nCPU in the measured windows, in cores of {os.cpu_count()} ('rest': other processes and the kernel):")
    print("\n".join(report.cpu_lines(rows)))
    print()
    print("\n".join([*report.noise_warnings(rows, idle_busy), *report.verdicts(rows)])
          or "no targets in the chosen scenarios")


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM (e.g. from CI) takes the same path as Ctrl-C, so the finally blocks stop gunicorn.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    config = ServerConfig(workers=args.workers, worker_class=args.worker_class, threads=args.threads,
                          **({"wsgi": "bench.floor:application"} if args.floor else {}))
    started = time.monotonic()
    try:
        scenarios = chosen_scenarios(args.scenario, floor=args.floor)
        if args.list:
            print("\n".join(scenario.name for scenario in scenarios))
            return 0
        parts, idle_busy = run(args, scenarios, config)
        rows = report.judge(scenarios, parts)
        print_report(rows, idle_busy)
        report.write_json(RESULTS / "latest.json", {**meta(args, config), "idleBusyCores": round(idle_busy, 2)},
                          rows)
    except KeyboardInterrupt:
        print("\ninterrupted; gunicorn stopped", file=sys.stderr)
        return 130
    except HarnessError as error:
        print(f"bench failed: {error}", file=sys.stderr)
        return 2
    except Exception:
        # A bug of the harness is a harness failure too: 2, never the 1 that --strict gives a missed target.
        traceback.print_exc()
        return 2
    print(f"\nwritten to {(RESULTS / 'latest.json').relative_to(ROOT)} in {time.monotonic() - started:.0f}s")
    missed = any(row["met"] is False for row in rows)
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
