"""The benchmark: the service under gunicorn on PostgreSQL, loaded from a separate process, each endpoint's req/s,
p50 and p99, and its ratio to a baseline measured in the same run (see bench/README.md).

    .venv/bin/python bench/run.py [--duration 10] [--concurrency 8] [--scenario NAME ...] [--strict] [--compare REF]
                                  [--peer]

Exit status: 0 when the bench ran (a missed target is printed as MISSED), 1 with --strict and a missed target,
2 when the harness itself failed, 130 when interrupted. gunicorn is stopped (and --compare's worktree removed) in
every case.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import report
import scenarios as scenario_list
from load import machine_busy
from scenarios import Scenario
from server import (
    DATABASE,
    PEER_DATABASE,
    PEER_DIR,
    PEER_WSGI,
    ROOT,
    ApiClient,
    Autovacuum,
    DispatchStandIn,
    Gunicorn,
    HarnessError,
    KeyPair,
    ServerConfig,
    analyze,
    kill_group,
    peer_env,
    prepare_data,
    prepare_peer_data,
    recreate_database,
    reset_redis,
    service_env,
)

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"
LOAD_SCRIPT = BENCH_DIR / "load.py"
LATER_WARMUP = 0.5  # seconds of warm-up in rounds after the first: enough to reopen connections
# --compare's "before" server: its own database and Redis databases (cache, broker), beside this tree's 3 and 4.
BASE_DATABASE = "pagamentos_bench_base"
BASE_REDIS_DBS = (9, 0)


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
    parser.add_argument("--compare", metavar="REF",
                        help="also serve the git commit-ish REF from a temporary worktree and measure both, "
                             "alternating: before (REF) and after (this tree)")
    parser.add_argument("--peer", action="store_true",
                        help="also serve the textbook peer (bench/peer/) and measure the scenarios it serves on both, "
                             "alternating: ours and the peer")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.peer and args.compare:
        parser.error("--peer and --compare are separate runs")
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


@dataclass
class Side:
    """One server under test and what it runs on: this tree ("after"), and with --compare REF's worktree ("before"),
    each with its own database and Redis databases."""

    label: str
    root: Path
    database: str = DATABASE
    redis_dbs: tuple[int, int] = (3, 4)
    log_name: str = "gunicorn.log"
    title: str = ""  # how progress lines name it ("ours" beside the peer); the label when empty
    peer: bool = False  # the textbook peer (bench/peer/): only the scenarios marked `peer`, no setups
    server: Gunicorn | None = None
    pair: KeyPair | None = None
    values: dict[str, str] = field(default_factory=dict)  # what its setups made


def start(side: Side, config: ServerConfig, stack: ExitStack, *, labelled: bool) -> None:
    """A fresh database, migrated with the side's own manage.py, its merchant and key pair, then its gunicorn, which
    `stack` stops whatever happens next. The peer: its own project, database and seed (funded merchants), served
    with the same gunicorn options."""
    label = f" {side.title or side.label} ({PEER_DIR if side.peer else side.root})" if labelled else ""
    print(f"setting up{label}: database {side.database}, migrate, merchant and test key", flush=True)
    recreate_database(side.database)
    if side.peer:
        env = peer_env(side.database)
        side.pair, side.values = prepare_peer_data(env, scenario_list.PAYOUT_MERCHANTS)
        config = replace(config, wsgi=PEER_WSGI, chdir=str(PEER_DIR))
    else:
        env = service_env(side.database, side.redis_dbs)
        reset_redis(side.redis_dbs)
        side.pair = prepare_data(env, side.root)
    side.server = Gunicorn(config, env, RESULTS / side.log_name, side.root)
    stack.callback(side.server.stop)
    side.server.start()


def run_setups(scenarios: list[Scenario], side: Side) -> dict[str, str]:
    """Each distinct setup of the chosen scenarios, once, through the API: the values of their paths' placeholders.
    Then ANALYZE, so that the planner knows the tables as it would on a live database (see server.analyze)."""
    values: dict[str, str] = {}
    api = ApiClient(side.server.port, side.pair)
    # A setup that makes more merchants runs manage.py with the server's own settings and tree.
    api.env, api.root = side.server.env, side.root
    for setup in dict.fromkeys(scenario.setup for scenario in scenarios if scenario.setup):
        made = setup(api)
        print(f"setup {setup.__name__}: {made}", flush=True)
        values.update(made)
    analyze(side.database)
    return values


def measure(scenario: Scenario, side: Side, args: argparse.Namespace, *, duration: float, warmup: float) -> dict:
    """One window of one scenario, driven by load.py in its own process (and session, so it can be killed with the
    children it forks)."""
    server, pair = side.server, side.pair
    command = [sys.executable, str(LOAD_SCRIPT), "--port", str(server.port), "--scenario", scenario.name,
               "--duration", str(duration), "--warmup", str(warmup), "--concurrency", str(args.concurrency),
               "--procs", str(args.client_procs),
               "--server-pids", ",".join(str(pid) for pid in server.worker_pids()), "--database", side.database]
    env = {**os.environ, "BENCH_PUBLIC_KEY": pair.public_key, "BENCH_SECRET_KEY": pair.secret_key,
           "BENCH_SETUP_VALUES": json.dumps(side.values)}
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


def progress(part: dict, round_number: int, rounds: int, label: str = "") -> str:
    ok = len(part["latencies_us"])
    errors = sum(part["statuses"].values()) - ok + sum(part["failures"].values())
    return (f"  round {round_number}/{rounds} {part['name']}{label}: {ok / part['duration']:,.1f} req/s"
            + (f", {errors} errors" if errors else ""))


def measure_all(scenarios: list[Scenario], sides: list[Side],
                args: argparse.Namespace) -> dict[str, dict[str, list[dict]]]:
    """Every scenario, `--rounds` times, alternating: a burst of background load on a shared machine then hits
    every scenario of one round rather than all of one scenario's time. With two sides, each scenario runs on one
    then the other within the round, never both at once. Returns each side's parts by scenario."""
    for side in sides:
        if side.peer:
            analyze(side.database)  # its seed made the data the setups make on the service
        else:
            side.values = run_setups(scenarios, side)
    duration = args.duration / args.rounds
    parts = {side.label: {scenario.name: [] for scenario in scenarios if scenario.peer or not side.peer}
             for side in sides}
    # The statistics a live database keeps current, and the dispatch flag as the payout worker clears it.
    with Autovacuum([side.database for side in sides]), \
            DispatchStandIn([side.redis_dbs[0] for side in sides if not side.peer]):
        for round_number in range(1, args.rounds + 1):
            # The first round warms each code path up (imports, connections, caches); later ones only reconnect.
            warmup = args.warmup if round_number == 1 else min(args.warmup, LATER_WARMUP)
            for scenario in scenarios:
                for side in sides:
                    if scenario.name not in parts[side.label]:
                        continue  # a scenario the peer does not serve
                    part = measure(scenario, side, args, duration=duration, warmup=warmup)
                    parts[side.label][scenario.name].append(part)
                    label = f" ({side.title or side.label})" if len(sides) > 1 else ""
                    print(progress(part, round_number, args.rounds, label), flush=True)
                    if side.server.process.poll() is not None:
                        raise HarnessError(f"gunicorn{label} died during {scenario.name}:\n{side.server.log_tail()}")
    return parts


@contextmanager
def worktree(commit: str) -> Iterator[Path]:
    """A detached git worktree of `commit` in a temporary directory, its .venv a link to this tree's (the same
    packages); removed on the way out, whatever happens."""
    parent = Path(tempfile.mkdtemp(prefix="pagamentos-bench-"))
    tree = parent / "tree"
    try:
        git("worktree", "add", "--detach", str(tree), commit)
        (tree / ".venv").symlink_to(ROOT / ".venv")
        yield tree
    finally:
        removed = git("worktree", "remove", "--force", str(tree), check=False) is not None
        shutil.rmtree(parent, ignore_errors=True)
        if not removed:
            git("worktree", "prune", check=False)  # forget it even so


def git(*args: str, check: bool = True) -> str | None:
    """A git command in this tree: its stdout; on failure a HarnessError, or None without `check`."""
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        if check:
            raise HarnessError(f"git {args[0]}: {error}") from error
        return None
    if done.returncode != 0:
        if check:
            raise HarnessError(f"git {' '.join(args)} failed: {done.stderr.strip()[-1000:]}")
        return None
    return done.stdout.strip()


def resolve(ref: str) -> str:
    """The commit `ref` names, abbreviated (so the worktree gets that commit even if `ref` moves meanwhile)."""
    commit = git("rev-parse", "--verify", "--quiet", "--short", f"{ref}^{{commit}}", check=False)
    if not commit:
        raise HarnessError(f"--compare {ref}: not a commit of this repository")
    return commit


def run(args: argparse.Namespace, scenarios: list[Scenario], config: ServerConfig,
        base: str | None = None) -> tuple[dict[str, dict[str, list[dict]]], float]:
    """Set up, start gunicorn (with `base`, a commit, also one serving it from a worktree; with --peer, also the
    textbook peer), measure; every gunicorn is stopped and the worktree removed whatever happens. Returns the parts
    by side ("after" is this tree, "before" the base, "peer" the peer) and how busy the machine was before the load
    started."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        sides = [Side("after", ROOT, title="ours" if args.peer else "")]
        if base:
            sides.insert(0, Side("before", stack.enter_context(worktree(base)), BASE_DATABASE, BASE_REDIS_DBS,
                                 "gunicorn-base.log"))
        if args.peer:
            sides.append(Side("peer", ROOT, PEER_DATABASE, log_name="gunicorn-peer.log", peer=True))
        for side in sides:
            start(side, config, stack, labelled=len(sides) > 1)
        idle_busy = machine_busy(1.0)
        where = ", ".join(f"127.0.0.1:{side.server.port}" + (f" ({side.title or side.label})" if len(sides) > 1
                                                              else "") for side in sides)
        print(f"{config.describe()} on {where}; {args.concurrency} connections, "
              f"{args.client_procs} client process(es); {args.rounds} round(s) of {args.duration / args.rounds:g}s "
              f"per scenario; machine {idle_busy:.2f} cores busy before start", flush=True)
        return measure_all(scenarios, sides, args), idle_busy


def meta(args: argparse.Namespace, config: ServerConfig, base: str | None = None) -> dict:
    return {
        "finishedAt": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git_commit(),
        **({"compare": {"ref": args.compare, "commit": base}} if base else {}),
        **({"peer": "bench/peer (textbook Django + DRF), same gunicorn options"} if args.peer else {}),
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


def print_comparison(sides: dict[str, list[dict]], idle_busy: float, before: str) -> list[dict]:
    """Each side's report, then per scenario its figures on both and the change: the rows of that last table."""
    for label, title in (("before", before), ("after", "this tree")):
        print(f"\n=== {label}: {title} ===")
        print_report(sides[label], idle_busy)
    changes = report.compare(sides["before"], sides["after"])
    print(f"\n=== after (this tree) vs before ({before}) ===\n")
    print(report.compare_table(changes))
    print()
    print("\n".join(report.compare_lines(changes)))
    return changes


def print_peer(ours: list[dict], peer: list[dict], idle_busy: float) -> list[dict]:
    """Both reports, then per scenario the service's figures beside the peer's and their ratio: that table's rows."""
    for title, rows in (("ours: this tree", ours), ("peer: bench/peer, Django + DRF the textbook way", peer)):
        print(f"\n=== {title} ===")
        print_report(rows, idle_busy)
    sides = report.peer_compare(ours, peer)
    print("\n=== ours vs the textbook peer (same requests, same gunicorn, alternating windows) ===\n")
    print(report.peer_table(sides))
    print()
    print("\n".join(report.peer_lines(sides)))
    return sides


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
        base = resolve(args.compare) if args.compare else None
        parts, idle_busy = run(args, scenarios, config, base)
        sides = {label: report.judge([scenario for scenario in scenarios if scenario.name in side_parts], side_parts)
                 for label, side_parts in parts.items()}  # the peer: only the scenarios it serves
        rows, extra = sides["after"], {}
        if base:
            extra = {"before": sides["before"],
                     "comparison": print_comparison(sides, idle_busy, f"{args.compare} = {base}")}
        elif args.peer:
            extra = {"peer": sides["peer"], "peerComparison": print_peer(rows, sides["peer"], idle_busy)}
        else:
            print_report(rows, idle_busy)
        report.write_json(RESULTS / "latest.json",
                          {**meta(args, config, base), "idleBusyCores": round(idle_busy, 2)}, rows, **extra)
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
