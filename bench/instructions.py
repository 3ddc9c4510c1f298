"""Instructions per request, counted by valgrind's callgrind: a figure that does not move with the machine's load (the
same tree and inputs give the same count within about 0.5%), to compare two trees when req/s is noisy.

    .venv/bin/python bench/instructions.py [--compare REF] [--scenario NAME ...]

Each scenario runs in one Python process under callgrind twice, with FEW and then MANY requests after the same setup
and warm-up; the difference divided by MANY - FEW is what one request costs in the service's own process (Django, the
app, psycopg and the Redis client), not PostgreSQL's or Redis's side of it. Requests go through Django's WSGI handler
in that process: no gunicorn, no client socket. `--compare REF` measures REF's tree (a git worktree) the same way.
Needs valgrind (Debian's package) and PostgreSQL and Redis as for bench/run.py.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from scenarios import charges_setup, hot_merchant_setup, payin_body, payout_body  # noqa: E402

# name: (method, path, body factory name or None, setup (bench/scenarios.py's), requests: few, many)
SCENARIOS = {
    "GET /ping": ("GET", "/ping", None, None, (100, 400)),
    "GET /account": ("GET", "/account", None, None, (100, 400)),
    "GET /payin/{id}": ("GET", "/payin/{payin_id}", None, charges_setup, (100, 400)),
    "GET /payin?limit=20": ("GET", "/payin?limit=20", None, charges_setup, (50, 200)),
    "POST /payin PIX": ("POST", "/payin", "PIX", None, (50, 200)),
    "POST /payin BOLETO": ("POST", "/payin", "BOLETO", None, (50, 200)),
    "POST /payin CREDIT_CARD": ("POST", "/payin", "CREDIT_CARD", None, (50, 200)),
    "POST /payout": ("POST", "/payout", "payout", hot_merchant_setup, (50, 200)),
    # The floors (bench/floor.py): what the endpoint above them cannot cost less than, counted the same way.
    "FLOOR PIX charge + event": ("POST", "/floor/payin", "PIX", None, (50, 200)),
    "FLOOR payout write set": ("POST", "/floor/payout", "payout", hot_merchant_setup, (50, 200)),
}
WARMUP = 30
REDIS_DBS = {"after": (14, 15), "before": (8, 9)}


# --- The measured process --------------------------------------------------------------------------------------------
def child(tree: str, name: str, count: int) -> None:
    """In `tree`'s Django: the scenario's setup, WARMUP requests, then `count` more; each must succeed."""
    sys.path.insert(0, tree)
    os.chdir(tree)
    import django

    if name.startswith("FLOOR"):  # the tree's bench/floor.py sets Django up and serves its URLs plus the floors
        sys.path.insert(0, str(Path(tree) / "bench"))
        from floor import application as app
    else:
        django.setup()
        from django.core.handlers.wsgi import WSGIHandler

        app = WSGIHandler()
    pair = json.loads(os.environ["BENCH_KEY_PAIR"])
    credentials = base64.b64encode(f"{pair['public_key']}:{pair['secret_key']}".encode()).decode()

    def call(method: str, target: str, body: object = None, *, expect: int | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else b""
        path, _, query = target.partition("?")
        environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SERVER_NAME": "127.0.0.1",
                   "SERVER_PORT": "8000", "HTTP_HOST": "127.0.0.1:8000", "wsgi.input": io.BytesIO(data),
                   "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr, "SERVER_PROTOCOL": "HTTP/1.1",
                   "HTTP_AUTHORIZATION": f"Basic {credentials}", "CONTENT_TYPE": "application/json",
                   "CONTENT_LENGTH": str(len(data))}
        status: list[str] = []
        content = b"".join(app(environ, lambda line, headers, exc_info=None: status.append(line)))
        accepted = ("200", "201") if expect is None else (str(expect),)
        if status[0].split()[0] not in accepted:
            raise SystemExit(f"{method} {target}: {status[0]} {content[:300]!r}")
        return json.loads(content)

    class Api:  # what the scenarios' setups use of server.ApiClient, in process
        @staticmethod
        def post_json(path: str, body: object, *, expect: int = 201) -> dict:
            return call("POST", path, body, expect=expect)

    method, path, body_kind, setup, _ = SCENARIOS[name]
    values = setup(Api()) if setup else {}
    if body_kind == "payout":
        # The first payout of a burst sends the dispatch message (payments.payouts.dispatch.dispatch_soon), and a
        # process's first message to the broker loads and connects its client: hundreds of millions of instructions
        # once. FEW and MANY run at once and share the flag, so that first message would fall in one run and not the
        # other (a payout's figure moved by 900,000 per request from one run to the next). Here each sends one
        # message itself, and the flag is set for longer than any run, so no measured payout sends another. Its
        # dispatch is due in an hour, so the first measured payout learns that from the flag and the others commit
        # before it is due, with no round trip to Redis: the upper bound of what a burst saves (there, from the due
        # time until the worker clears the flag, payouts ask again). A tree from before due times (--compare) sets
        # the flag without one, and each of its payouts asks, as they did.
        import time

        from config.celery import task_enqueue
        from core import cache
        try:
            from payments.payouts import dispatch as payouts
        except ImportError:  # a tree from before that module (--compare)
            from payments.payouts import services as payouts

        task_enqueue("payments.payouts.tasks.payouts_dispatch", countdown=3600)  # no worker reads this broker
        cache.flag_clear(payouts.DISPATCH_FLAG)  # one the setup's payouts left, for a minute only
        if hasattr(cache, "flag_claim"):
            cache.flag_claim(payouts.DISPATCH_FLAG, f"{time.time() + 3600:.6f}", seconds=3600)
            # A process counts on a due time for DISPATCH_DELAY_SECONDS at most: stretched to the hour here too, so
            # that the count does not depend on how many of valgrind's slow payouts fit in a quarter second.
            payouts.DISPATCH_DELAY_SECONDS = 3600
        else:
            cache.flag_set(payouts.DISPATCH_FLAG, seconds=3600)
    make = payout_body() if body_kind == "payout" else payin_body(body_kind) if body_kind else (lambda: None)
    target = path.format(**values)
    for _ in range(WARMUP + count):
        call(method, target, make())


# --- The harness -----------------------------------------------------------------------------------------------------
def counted(tree: Path, env: dict[str, str], name: str, count: int) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out", str(tree / ".venv/bin/python"),
             __file__, "--child", str(tree), name, str(count)],
            env={**env, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"{name} ({count}) failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_request(tree: Path, env: dict[str, str], name: str) -> float:
    few, many = SCENARIOS[name][4]
    with ThreadPoolExecutor(2) as pool:  # two processes at once: a count does not depend on the other's load
        low, high = pool.map(lambda count: counted(tree, env, name, count), (few, many))
    return (high - low) / (many - few)


def side(tree: Path, label: str, names: list[str]) -> dict[str, float]:
    from server import prepare_data, recreate_database, service_env

    database = f"pagamentos_bench_instr_{label}"
    recreate_database(database)
    env = service_env(database, REDIS_DBS[label])
    pair = prepare_data(env, tree)
    env["BENCH_KEY_PAIR"] = json.dumps({"public_key": pair.public_key, "secret_key": pair.secret_key})
    figures = {}
    for name in names:
        figures[name] = per_request(tree, env, name)
        print(f"  {label:6s} {name:24s} {figures[name]:>12,.0f} instructions per request", flush=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", metavar="REF", help="also measure this commit's tree (before)")
    parser.add_argument("--scenario", action="append", choices=list(SCENARIOS),
                        help="default: all but the floors")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        tree, name, count = args.child
        child(tree, name, int(count))
        return 0
    from run import resolve, worktree
    from server import ROOT

    names = args.scenario or [name for name in SCENARIOS if not name.startswith("FLOOR")]
    after = side(ROOT, "after", names)
    if not args.compare:
        return 0
    with worktree(resolve(args.compare)) as tree:
        before = side(tree, "before", names)
    print(f"\n{'scenario':24s} {'before':>12s} {'after':>12s}  change   (instructions per request; before = "
          f"{args.compare})")
    for name in names:
        change = (after[name] - before[name]) / before[name] * 100
        print(f"{name:24s} {before[name]:>12,.0f} {after[name]:>12,.0f}  {change:+5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
