"""The benchmark, one command: this tree beside the textbook peer (and with --compare, beside another revision),
measured in interleaved rounds on one machine, printed as one table. See bench/README.md.

    python -m bench [--quick] [--compare REV] [--rounds N] [--seconds S] [--strict]

Exit status: 0 when it ran (a missed bound is printed as MISSED), 1 with --strict and a missed bound, 2 when the
harness failed, 130 when interrupted. Every process it started is stopped and the worktree removed in every case.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from bench import deliveries, load, server
from bench.load import Request
from bench.server import ROOT, ApiClient, Gunicorn, HarnessError, KeyPair

RESULTS = ROOT / "bench" / "results"
PEER_DIR = ROOT / "bench" / "peer"
PEER_BOUND = 2.0  # PIX and payouts: at least twice the textbook peer's req/s (issue 36)
REV_BOUND = 0.85  # every figure: within 15% of the compared revision's
FUNDING = 9_000_000  # cents: far more 1-cent payouts than a run sends
LIST_ROWS = 25  # more than a page of 20
WEBHOOK_ROUNDS = 3  # the webhook figure in the first three rounds only: a worker start and drain take ~15 s
CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
ITEMS = [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}]


def pix_body() -> dict:
    return {"paymentMethod": "PIX", "amount": 5000, "payerIp": "203.0.113.9", "isPhysicalProduct": False,
            "items": ITEMS, "customer": CUSTOMER, "referenceId": f"bench-{uuid.uuid4().hex}"}


def payout_body() -> dict:
    return {"amount": 1, "pixKeyType": "EVP", "pixKey": str(uuid.uuid4()), "referenceId": uuid.uuid4().hex}


PIX = "POST /payin PIX"
PAYOUT = "POST /payout hot merchant"
LIST = "GET /payin?limit=20"
ACCOUNT = "GET /account"
WEBHOOKS = "webhook deliveries/s"
FLOOR_PIX = "FLOOR PIX (ORM writes)"
FLOOR_PAYOUT = "FLOOR payout (ORM writes)"
# A round measures these in this order, each on every side that serves it (one server under load at a time), the
# floors right after their endpoints, so that a machine whose speed drifts moves an endpoint and its floor alike.
REQUESTS = {
    PIX: Request("POST", "/payin", pix_body, expect=201),
    FLOOR_PIX: Request("POST", "/floor/payin", pix_body, expect=201),
    PAYOUT: Request("POST", "/payout", payout_body, expect=201),
    FLOOR_PAYOUT: Request("POST", "/floor/payout", payout_body, expect=201),
    LIST: Request("GET", "/payin?limit=20"),
    ACCOUNT: Request("GET", "/account"),
}
FLOORS = {FLOOR_PIX: PIX, FLOOR_PAYOUT: PAYOUT}


@dataclass
class Side:
    """One server under test: this tree, its floors, the peer, or the compared revision."""

    name: str
    root: Path
    env: dict[str, str]
    figures: list[str]
    webhooks: bool = False
    pair: KeyPair | None = None
    gunicorn: Gunicorn | None = None
    parts: dict[str, list[dict]] = field(default_factory=dict)  # figure -> one result per round


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 round of 2 s windows (1-2 minutes)")
    parser.add_argument("--compare", metavar="REV", help="also serve git revision REV from a temporary worktree")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (4; --quick 1)")
    parser.add_argument("--seconds", type=float, help="measured seconds per figure, side and round (4; --quick 2)")
    parser.add_argument("--concurrency", type=int, default=8, help="client connections, closed loop (8)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a bound is missed")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL") or server.DEFAULT_DATABASE_URL,
                        help="the PostgreSQL server; its database's name prefixes the bench's (env DATABASE_URL)")
    parser.add_argument("--cache-url", default=os.environ.get("CACHE_URL"), help="a spare Redis database, emptied "
                        "(env CACHE_URL)")
    parser.add_argument("--broker-url", default=os.environ.get("CELERY_BROKER_URL"),
                        help="another spare Redis database, emptied (env CELERY_BROKER_URL)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 4)
    args.seconds = args.seconds or (2.0 if args.quick else 4.0)
    args.warmup = 1.0 if args.quick else 2.0
    args.webhook_events = 200 if args.quick else 1000
    if not (args.cache_url or "").startswith("redis") or not (args.broker_url or "").startswith("redis"):
        parser.error("CACHE_URL and CELERY_BROKER_URL (or --cache-url, --broker-url) must name two spare Redis "
                     "databases: the bench empties them")
    if args.cache_url == args.broker_url:
        parser.error("the cache and the broker need two different Redis databases")
    if args.rounds < 1 or args.seconds <= 0 or args.concurrency < 1:
        parser.error("rounds and concurrency must be >= 1, seconds > 0")
    return args


# --- Setting the servers up ------------------------------------------------------------------------------------------
def bench_db(args: argparse.Namespace, suffix: str) -> str:
    """`<DATABASE_URL's name>_bench<suffix>` on DATABASE_URL's server: the bench never touches the named database."""
    name = urlsplit(args.database_url).path.lstrip("/") or "pagamentos"
    return server.database_url(f"{name}_bench{suffix}", args.database_url)


def start_service(side: Side, stack: ExitStack) -> None:
    """A fresh database migrated by the tree's own manage.py, a merchant and its test key pair (its own operator
    commands), gunicorn, then through the API: a funded balance and a first page of charges."""
    print(f"setting up {side.name} ({side.root}): database, migrate, merchant, gunicorn", flush=True)
    server.recreate_database(side.env["DATABASE_URL"])
    server.manage(side.env, "migrate", "--noinput", "-v", "0", cwd=side.root)
    try:  # the translations, as `make setup` compiles them (a fresh worktree has none): both trees alike
        server.manage(side.env, "compilemessages", "--ignore=.venv", "-v", "0", cwd=side.root)
    except HarnessError as error:
        print(f"  (no compiled translations: {str(error).splitlines()[0]})", flush=True)
    side.pair = server.merchant_create(side.env, side.root, "bench@example.com")
    start_gunicorn(side, stack)
    api = ApiClient(side.gunicorn.port, side.pair)
    charge = api.post_json("/payin", {**pix_body(), "amount": FUNDING,
                                      "items": [{"title": "Saldo", "quantity": 1, "unitPrice": FUNDING}]})
    api.post_json(f"/sandbox/payin/{charge['id']}/simulate", {"action": "pay"}, expect=200)
    for _ in range(LIST_ROWS):
        api.post_json("/payin", pix_body())


def start_peer(side: Side, stack: ExitStack) -> None:
    print(f"setting up {side.name} ({PEER_DIR}): database, migrate, peer_seed, gunicorn", flush=True)
    server.recreate_database(side.env["DATABASE_URL"])
    server.manage(side.env, "migrate", "--noinput", "-v", "0", cwd=PEER_DIR)
    made = server.last_json(server.manage(side.env, "peer_seed", cwd=PEER_DIR), "peer_seed")
    side.pair = KeyPair(made["publicKey"], made["secretKey"])
    start_gunicorn(side, stack, app="textbook.wsgi:application", chdir=PEER_DIR)


def start_gunicorn(side: Side, stack: ExitStack, **options) -> None:
    side.gunicorn = Gunicorn(side.root, side.env, RESULTS / f"gunicorn-{side.name.split()[0]}.log", **options)
    stack.callback(side.gunicorn.stop)
    side.gunicorn.start()


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise HarnessError(f"git {' '.join(args)} failed: {done.stderr.strip()[-1000:]}")
    return done.stdout.strip()


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached git worktree of `rev` in a temporary directory, removed on the way out whatever happens."""
    parent = Path(tempfile.mkdtemp(prefix="pagamentos-bench-"))
    tree = parent / "tree"
    try:
        git("worktree", "add", "--detach", str(tree), rev)
        yield tree
    finally:
        removed = subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True,
                                 timeout=120, check=False).returncode == 0
        shutil.rmtree(parent, ignore_errors=True)
        if not removed:  # git forgets it even so
            subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True, timeout=120, check=False)


def sides_start(args: argparse.Namespace, stack: ExitStack, rev: str | None) -> list[Side]:
    this_env = server.service_env(bench_db(args, ""), args.cache_url, args.broker_url)
    this = Side("this tree", ROOT, this_env, [PIX, PAYOUT, LIST, ACCOUNT], webhooks=True)
    floors = Side("floors", ROOT, {**this_env, "DJANGO_SETTINGS_MODULE": "bench.floor_settings"},
                  [FLOOR_PIX, FLOOR_PAYOUT])
    peer_env = {**server.service_env(bench_db(args, "_peer")), "DJANGO_SETTINGS_MODULE": "textbook.settings"}
    peer = Side("textbook peer", ROOT, peer_env, [PIX, PAYOUT])
    sides = [this, floors, peer]
    server.flush_redis(args.cache_url)
    server.flush_redis(args.broker_url)
    start_service(this, stack)
    floors.pair = this.pair  # the same database, merchant and key pair, the floors' URLs
    start_gunicorn(floors, stack)
    start_peer(peer, stack)
    if rev:
        # The same cache and broker: only one server is ever under load, and the broker is emptied before each
        # webhook figure, so neither tree's worker sees the other's messages.
        env = server.service_env(bench_db(args, "_rev"), args.cache_url, args.broker_url)
        sides.append(Side(f"REV {rev}", stack.enter_context(worktree(rev)), env, [PIX, PAYOUT, LIST, ACCOUNT],
                          webhooks=True))
        start_service(sides[-1], stack)
    return sides


# --- Measuring -------------------------------------------------------------------------------------------------------
class DispatchStandIn:
    """What a payout worker does to the flag the API reads after each payout (payments/payouts/dispatch.py), for a run
    with no worker: delete `payouts:dispatch` once the due time it holds has passed (a flag without one, 0.25 s
    after it was first seen). Without it, the first payout's flag stayed for its minute and every later payout asked
    Redis about it, a round trip production does not make. Called every 10 ms while a payout window runs."""

    KEY, DELAY = "payouts:dispatch", 0.25

    def __init__(self, cache_url: str):
        import redis

        self.redis = redis.Redis.from_url(cache_url, socket_timeout=5)
        self.first_seen: float | None = None

    def __call__(self) -> None:
        held, now = self.redis.get(self.KEY), time.time()
        if held is None:
            return
        try:
            due = float(held)
        except ValueError:
            due = 0.0
        if due < 1e9:
            self.first_seen = self.first_seen or now
            due = self.first_seen + self.DELAY
        if now >= due and self.redis.delete(self.KEY):
            self.first_seen = None


def measure(sides: list[Side], args: argparse.Namespace, idle: Callable[[], None]) -> None:
    """Every figure on every side that serves it, `--rounds` times; within a round one figure after another, each
    on every side in turn (their order rotating by round); then (in the first WEBHOOK_ROUNDS) the webhook figure."""
    served = [side for side in sides if side.webhooks]
    for number in range(args.rounds):
        for side in sides:
            if side.name != "floors":
                server.vacuum_analyze(side.env["DATABASE_URL"])  # as autovacuum would have by now
        warmup = args.warmup if number == 0 else 0.5  # later rounds only reconnect
        for figure, request in REQUESTS.items():
            turn = [side for side in sides if figure in side.figures]
            for side in turn[number % len(turn):] + turn[:number % len(turn)]:
                part = load.drive(side.gunicorn.port, request, authorization=side.pair.basic, seconds=args.seconds,
                                  warmup=warmup, concurrency=args.concurrency,
                                  idle=idle if request.path.endswith("payout") else None)
                side.parts.setdefault(figure, []).append(part)
                note = f", {sum(part['errors'].values())} errors {part['errors']}" if part["errors"] else ""
                print(f"  round {number + 1}/{args.rounds} {figure} ({side.name}): "
                      f"{len(part['latencies_us']) / part['seconds']:,.1f} req/s{note}", flush=True)
                if side.gunicorn.process.poll() is not None:
                    raise HarnessError(f"gunicorn of {side.name} died:\n{side.gunicorn.log_tail()}")
        for side in (served[number % len(served):] + served[:number % len(served)]) * (number < WEBHOOK_ROUNDS):
            part = deliveries.measure(root=side.root, env=side.env, port=side.gunicorn.port,
                                      authorization=side.pair.basic, body=pix_body, events=args.webhook_events,
                                      log_path=RESULTS / f"worker-{side.name.split()[0]}.log")
            side.parts.setdefault(WEBHOOKS, []).append(part)
            rate = f"{part['rate']:,.1f}/s" if part["rate"] else "no rate"
            print(f"  round {number + 1}/{args.rounds} {WEBHOOKS} ({side.name}): {rate} "
                  f"({part['delivered']} deliveries)", flush=True)


# --- Figures and the table -------------------------------------------------------------------------------------------
def summary(parts: list[dict] | None, figure: str) -> dict | None:
    """One side's figure over its rounds: req/s pooled over every window (deliveries/s: the median round), p99."""
    if not parts:
        return None
    if figure == WEBHOOKS:
        rates = [part["rate"] for part in parts if part["rate"]]
        return {"value": statistics.median(rates) if rates else None, "by_round": [part["rate"] for part in parts],
                "errors": sum(part["rate"] is None for part in parts)}
    latencies = sorted(value for part in parts for value in part["latencies_us"])
    p99 = latencies[round(0.99 * (len(latencies) - 1))] if latencies else None
    return {"value": len(latencies) / sum(part["seconds"] for part in parts),
            "by_round": [len(part["latencies_us"]) / part["seconds"] for part in parts],
            "p99_ms": p99 / 1000 if p99 is not None else None,
            "errors": sum(sum(part["errors"].values()) for part in parts)}


def ratio(ours: dict | None, theirs: dict | None) -> dict | None:
    """ours / theirs, pooled and by round (the spread says how much the machine moved it)."""
    if not ours or not theirs or not ours["value"] or not theirs["value"]:
        return None
    rounds = [a / b for a, b in zip(ours["by_round"], theirs["by_round"], strict=False) if a and b]
    return {"value": ours["value"] / theirs["value"], "low": min(rounds, default=None),
            "high": max(rounds, default=None)}


def verdict(found: dict | None, bound: float, *figures: dict | None) -> str:
    if found is None or any(figure is None or figure["errors"] for figure in figures):
        return "not measured"
    return "ok" if found["value"] >= bound else "MISSED"


def rows(sides: list[Side]) -> list[dict]:
    this, floors, peer, *rev = sides
    out = []
    for figure in (PIX, PAYOUT, LIST, ACCOUNT, WEBHOOKS, FLOOR_PIX, FLOOR_PAYOUT):
        ours = summary((floors if figure in FLOORS else this).parts.get(figure), figure)
        row = {"figure": figure, "this": ours}
        if figure in (PIX, PAYOUT):
            theirs = summary(peer.parts.get(figure), figure)
            row.update(peer=theirs, vs_peer=ratio(ours, theirs))
            row["peer_verdict"] = verdict(row["vs_peer"], PEER_BOUND, ours, theirs)
        if figure in FLOORS:  # the endpoint over its floor
            row.update(vs_floor=ratio(summary(this.parts.get(FLOORS[figure]), figure), ours))
        elif rev:
            theirs = summary(rev[0].parts.get(figure), figure)
            row.update(rev=theirs, vs_rev=ratio(ours, theirs))
            row["rev_verdict"] = verdict(row["vs_rev"], REV_BOUND, ours, theirs)
        out.append(row)
    return out


def _num(figure: dict | None, key: str = "value", fmt: str = "{:,.1f}") -> str:
    return fmt.format(figure[key]) if figure and figure.get(key) is not None else "-"


def _ratio(found: dict | None) -> str:
    if not found:
        return "-"
    spread = f" ({found['low']:.2f}-{found['high']:.2f})" if found["low"] is not None else ""
    return f"{found['value']:.2f}{spread}"


def table(table_rows: list[dict], rev: str | None) -> str:
    head = ["figure", "this tree", "p99 ms", "errors", "peer", "this/peer (by round)", f">= {PEER_BOUND:g}x"]
    if rev:
        head += [f"REV {rev}", "this/REV (by round)", f">= {REV_BOUND:g}"]
    lines = [head]
    for row in table_rows:
        line = [row["figure"], _num(row["this"]), _num(row["this"], "p99_ms"), _num(row["this"], "errors", "{}")]
        if "vs_floor" in row:
            line += ["", f"endpoint/floor {_ratio(row['vs_floor'])}", ""]
        else:
            line += [_num(row.get("peer")), _ratio(row.get("vs_peer")), row.get("peer_verdict", "")]
        if rev and "vs_floor" not in row:
            line += [_num(row["rev"]), _ratio(row["vs_rev"]), row["rev_verdict"]]
        lines.append(line)
    widths = [max(len(line[column]) for line in lines if column < len(line)) for column in range(len(head))]
    return "\n".join("  ".join(cell.ljust(widths[n]) if n == 0 else cell.rjust(widths[n])
                               for n, cell in enumerate(line)).rstrip() for line in lines)


def write_json(args: argparse.Namespace, sides: list[Side], table_rows: list[dict], rev: str | None) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "latest.json"
    by_round = {side.name: {figure: summary(parts, figure)["by_round"] for figure, parts in side.parts.items()}
                for side in sides}
    path.write_text(json.dumps({
        "finishedAt": datetime.now(UTC).isoformat(timespec="seconds"), "commit": git("rev-parse", "--short", "HEAD"),
        "compare": rev, "rounds": args.rounds, "seconds": args.seconds, "concurrency": args.concurrency,
        "cpus": os.cpu_count(), "rows": table_rows, "byRound": by_round}, indent=1))
    return path


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM takes Ctrl-C's path, so the finally blocks stop every server


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    try:
        RESULTS.mkdir(parents=True, exist_ok=True)
        rev = git("rev-parse", "--verify", "--short", f"{args.compare}^{{commit}}") if args.compare else None
        with ExitStack() as stack:
            sides = sides_start(args, stack, rev)
            busy = load.busy_cores(1.0)
            print(f"servers up after {time.monotonic() - started:.0f}s; machine {busy:.2f} cores busy before the load; "
                  f"{args.rounds} round(s) of {args.seconds:g}s per figure and side, {args.concurrency} connections",
                  flush=True)
            measure(sides, args, DispatchStandIn(args.cache_url))
        table_rows = rows(sides)
        print(f"\n{table(table_rows, rev)}\n\nmachine: {os.cpu_count()} CPUs, {busy:.2f} cores busy before the load "
              "(other processes' work)")
        print(f"written to {write_json(args, sides, table_rows, rev).relative_to(ROOT)} "
              f"in {time.monotonic() - started:.0f}s")
    except KeyboardInterrupt:
        print("\ninterrupted; every server stopped", file=sys.stderr)
        return 130
    except HarnessError as error:
        print(f"bench failed: {error}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()  # a bug of the harness is a harness failure too: never the 1 of a missed bound
        return 2
    missed = any(row.get(key) == "MISSED" for row in table_rows for key in ("peer_verdict", "rev_verdict"))
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
