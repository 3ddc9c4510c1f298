"""List scaling: the charge list (GET /payin) with 10,000 and with 1,000,000 charges of one merchant in the table.

Issue 4's target: a list page is as fast with 1,000,000 charges as with 10,000, within 20%. Keyset pagination on
indexes that begin (merchant, livemode[, filter]) and end (created_at, id) should make a page cost the same at any
table size and any depth; this measures it, through HTTP on gunicorn like `run.py`, and prints the plan PostgreSQL
chose for each page (EXPLAIN ANALYZE of the very statement the view ran) to show which index answered.

    .venv/bin/python bench/list_scaling.py [--sizes 10000 1000000] [--noise 0.25] [--duration 9] [--keep]

1. Recreates the database `pagamentos_bench_list` (Redis databases 10 and 11), migrates it, creates the bench merchant
   and its test key pair like `run.py`, and 20 other merchants.
2. For each size, grows the bench merchant's test-mode charges to that many (`INSERT … SELECT … FROM
   generate_series`: uuid7 ids from created_at, spread over the last year; PIX/card/boleto and status mixes; each
   method's own columns), plus `--noise` times as many for the 20 other merchants (both modes), then VACUUM ANALYZE.
3. Starts gunicorn (3 sync workers) and measures in alternating rounds: GET /account (the machine's yardstick, to
   tell a slower machine from a slower page), the first page, a deep page (cursor at the middle of the merchant's
   charges), the first page with status=PAID and the page of one referenceId; each window starts once the server
   has finished the previous one's requests. Then each page alone: one client, nine requests, the median.
4. Prints the figures per size, the ratio largest/smallest per page with PASS/FAIL (req/s within 20%), and the plans;
   writes them to bench/results/list_scaling.json. Drops the database at the end unless --keep.

Exit status: 0 when it ran (a page outside 20% prints FAIL), 1 with --strict and a FAIL, 2 when the harness failed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import load
import psycopg
import report
from psycopg import sql
from scenarios import Scenario
from server import (
    ADMIN_DSN,
    ROOT,
    ApiClient,
    Gunicorn,
    HarnessError,
    KeyPair,
    ServerConfig,
    prepare_data,
    recreate_database,
    service_env,
)

DATABASE = "pagamentos_bench_list"
DSN = f"postgresql://postgres@127.0.0.1:5432/{DATABASE}"
REDIS_DBS = (10, 11)  # cache, broker: apart from run.py's (3, 4) and webhook_delivery.py's (8, 9)
RESULTS = Path(__file__).resolve().parent / "results"
NOISE_MERCHANTS = 20
CHUNK = 250_000  # rows per INSERT statement: a few big statements, each its own transaction
TOLERANCE = 0.20  # "within 20%"

# One statement inserts `count` charges of one merchant, numbered from `first` (the number makes referenceId, txid
# and nosso número unique). The innermost query draws the random values once per row (PostgreSQL does not flatten a
# subquery with volatile functions, so each is drawn once and reused), the next picks the method, the next the status.
INSERT_CHARGES = """
INSERT INTO payments_payin (
    id, merchant_id, livemode, status, payment_method, amount, fee, refunded_amount, reference_id, description,
    metadata, customer, items, payer_ip, is_physical_product, webhook_url, public_token, pix_txid, pix_payload,
    pix_expires_at, boleto_nosso_numero, boleto_barcode, boleto_digitable_line, boleto_due_date, boleto_instructions,
    card, authorization_code, settle_at, failure_code, failure_message, paid_at, created_at, updated_at,
    pix_end_to_end_id)
SELECT
    -- uuid7: the 48-bit Unix time in ms of created_at, then random bits with the version set to 7 (4 -> 7)
    encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM ts) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1),
        'hex')::uuid,
    %(merchant)s, livemode, status, method, amount, amount / 50,
    CASE status WHEN 'REFUNDED' THEN amount WHEN 'PARTIALLY_REFUNDED' THEN amount / 2 ELSE 0 END,
    'order-' || %(number)s || '-' || i, 'Pedido ' || i, jsonb_build_object('orderId', i::text),
    jsonb_build_object('name', 'Cliente ' || i, 'document', '52998224725', 'email', 'cliente' || i || '@example.com',
                       'phone', NULL, 'address', NULL),
    jsonb_build_array(jsonb_build_object('title', 'Produto', 'quantity', 1, 'unitPrice', amount)),
    ('203.0.113.' || (i %% 254 + 1))::inet, i %% 5 = 0, '',
    translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', '-_'),
    CASE WHEN method = 'PIX' THEN txid END,
    CASE WHEN method = 'PIX' THEN '00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-426655440000'
        || '52040000530398654' || length(amount::text) || amount || '5802BR5905Bench6009SAO PAULO62290525' || txid
        || '6304ABCD' ELSE '' END,
    CASE WHEN method = 'PIX' THEN ts + interval '1 hour' END,
    CASE WHEN method = 'BOLETO' THEN nosso_numero END,
    CASE WHEN method = 'BOLETO' THEN lpad(nosso_numero::text, 44, '0') ELSE '' END,
    CASE WHEN method = 'BOLETO' THEN lpad(nosso_numero::text, 47, '0') ELSE '' END,
    CASE WHEN method = 'BOLETO' THEN (ts + interval '3 days')::date END,
    '',
    CASE WHEN method = 'CREDIT_CARD' THEN '{"bin": "411111", "brand": "visa", "last4": "1111", "token": null,
        "holderName": "CLIENTE", "installments": 1, "expirationYear": "2030", "expirationMonth": "12"}'::jsonb END,
    CASE WHEN method = 'CREDIT_CARD' AND status <> 'FAILED' THEN upper(substr(md5(i::text), 1, 6)) ELSE '' END,
    NULL,
    CASE WHEN status = 'FAILED' THEN 'card_declined' ELSE '' END,
    CASE WHEN status = 'FAILED' THEN 'The card was declined.' ELSE '' END,
    CASE WHEN status IN ('PAID', 'PARTIALLY_REFUNDED', 'REFUNDED', 'CHARGEBACK') THEN ts + interval '2 minutes' END,
    ts,
    CASE WHEN status IN ('PENDING', 'FAILED') THEN ts ELSE ts + interval '2 minutes' END,
    ''
FROM (
    SELECT *, CASE
        WHEN method = 'PIX' THEN CASE WHEN rs < 0.60 THEN 'PAID' WHEN rs < 0.85 THEN 'EXPIRED'
            WHEN rs < 0.92 THEN 'PENDING' WHEN rs < 0.95 THEN 'CANCELED' WHEN rs < 0.98 THEN 'REFUNDED'
            WHEN rs < 0.995 THEN 'PARTIALLY_REFUNDED' ELSE 'CHARGEBACK' END
        WHEN method = 'CREDIT_CARD' THEN CASE WHEN rs < 0.80 THEN 'PAID' WHEN rs < 0.92 THEN 'FAILED'
            WHEN rs < 0.97 THEN 'REFUNDED' WHEN rs < 0.99 THEN 'PARTIALLY_REFUNDED' ELSE 'CHARGEBACK' END
        ELSE CASE WHEN rs < 0.60 THEN 'PAID' WHEN rs < 0.90 THEN 'EXPIRED' WHEN rs < 0.97 THEN 'PENDING'
            ELSE 'CANCELED' END
        END AS status
    FROM (
        SELECT i, ts, rs, amount, livemode,
            CASE WHEN rm < 0.60 THEN 'PIX' WHEN rm < 0.90 THEN 'CREDIT_CARD' ELSE 'BOLETO' END AS method,
            'B' || lpad(%(number)s::text, 2, '0') || lpad(i::text, 22, '0') AS txid,
            (%(number)s + 1)::bigint * 10000000000 + i AS nosso_numero
        FROM (
            SELECT i, now() - interval '1 minute' - random() * interval '365 days' AS ts, random() AS rm,
                random() AS rs, 100 + floor(random() * random() * 100000)::bigint AS amount,
                CASE WHEN %(live_share)s > 0 THEN random() < %(live_share)s ELSE false END AS livemode
            FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i
        ) AS drawn
    ) AS with_method
) AS with_status
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="GET /payin pages at growing table sizes (issue 4: within 20%).")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000],
                        help="charges of the bench merchant at each step, growing (10000 1000000)")
    parser.add_argument("--noise", type=float, default=0.25,
                        help="other merchants' charges, as a share of the bench merchant's (0.25)")
    parser.add_argument("--duration", type=float, default=9.0, help="measured seconds per page and size (9)")
    parser.add_argument("--rounds", type=int, default=3, help="windows per page and size, alternating pages (3)")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before the first window (1)")
    parser.add_argument("--concurrency", type=int, default=8, help="client connections (8)")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn sync workers (3)")
    parser.add_argument("--keep", action="store_true", help=f"keep the database {DATABASE} afterwards")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a page is outside 20%%")
    args = parser.parse_args(argv)
    if sorted(args.sizes) != args.sizes or args.sizes[0] < 100 or len(args.sizes) < 2:
        parser.error("--sizes: at least two growing sizes of 100 or more")
    if args.duration <= 0 or args.rounds < 1 or args.noise < 0:
        parser.error("duration must be > 0, rounds >= 1, noise >= 0")
    return args


# --- Data ------------------------------------------------------------------------------------------------------------
def start_django(env: dict[str, str]) -> None:
    """Django in this process, on the bench database: to create the other merchants and to capture the statements
    the list view runs (for EXPLAIN). The same environment as gunicorn's, so the key pair authenticates here too."""
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def close_django_connections() -> None:
    """Before forking the load generator: children must not share this process's database socket."""
    from django.db import connections

    connections.close_all()


def create_noise_merchants(count: int) -> list[str]:
    from django.conf import settings

    from accounts import services

    # Throwaway logins: the fastest hasher instead of seconds of PBKDF2 for 20 passwords nobody will type.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return [str(services.merchant_signup(email=f"noise{number}@example.com", password="x" * 16,
                                         name=f"Noise {number}").pk)
            for number in range(1, count + 1)]


def bench_merchant_id(conn: psycopg.Connection) -> str:
    row = conn.execute("SELECT m.id FROM accounts_merchant m JOIN accounts_user u ON u.id = m.owner_id "
                       "WHERE u.email = 'bench@example.com'").fetchone()
    if row is None:
        raise HarnessError("the bench merchant is missing")
    return str(row[0])


def insert_charges(conn: psycopg.Connection, *, merchant: str, number: int, first: int, count: int,
                   live_share: float) -> None:
    for start in range(first, first + count, CHUNK):
        last = min(start + CHUNK, first + count) - 1
        conn.execute(INSERT_CHARGES, {"merchant": merchant, "number": number, "first": start, "last": last,
                                      "live_share": live_share})


def grow(conn: psycopg.Connection, *, bench: str, noise: list[str], have: dict[str, int], size: int,
         noise_share: float) -> float:
    """The bench merchant's test-mode charges up to `size`, the others' up to their share; VACUUM ANALYZE after.
    Returns the seconds it took."""
    started = time.monotonic()
    goals = {bench: size, **{merchant: round(size * noise_share / len(noise)) for merchant in noise}}
    for number, merchant in enumerate([bench, *noise]):
        missing = goals[merchant] - have.get(merchant, 0)
        if missing > 0:
            insert_charges(conn, merchant=merchant, number=number, first=have.get(merchant, 0) + 1, count=missing,
                           live_share=0.0 if merchant == bench else 0.5)
            have[merchant] = goals[merchant]
    inserted = time.monotonic() - started
    conn.execute("VACUUM (ANALYZE) payments_payin")
    total = conn.execute("SELECT count(*) FROM payments_payin").fetchone()[0]
    print(f"  {total:,} charges in the table ({size:,} of the bench merchant); inserted in {inserted:.0f}s, "
          f"VACUUM ANALYZE {time.monotonic() - started - inserted:.0f}s", flush=True)
    return time.monotonic() - started


# --- Pages -----------------------------------------------------------------------------------------------------------
def pages(conn: psycopg.Connection, api: ApiClient, *, bench: str, size: int) -> dict[str, str]:
    """The paths of the pages to measure at this size. The deep page's cursor is one the API wrote: the page of
    one charge created before the middle charge's created_at gives it."""
    middle = conn.execute(
        "SELECT created_at, reference_id FROM payments_payin WHERE merchant_id = %s AND NOT livemode "
        "ORDER BY created_at DESC, id DESC OFFSET %s LIMIT 1", (bench, size // 2)).fetchone()
    created_to = middle[0].astimezone(UTC).isoformat().replace("+00:00", "Z")
    cursor = api.get_json("/payin?" + urlencode({"limit": 1, "createdTo": created_to}))["nextCursor"]
    if not cursor:
        raise HarnessError("no cursor for the deep page")
    return {
        "first page": "/payin?limit=20",
        "deep page (cursor at the middle)": "/payin?" + urlencode({"limit": 20, "cursor": cursor}),
        "status=PAID": "/payin?limit=20&status=PAID",
        "referenceId=": "/payin?" + urlencode({"limit": 20, "referenceId": middle[1]}),
    }


def wait_quiet(server: Gunicorn, *, timeout: float = 180.0) -> None:
    """Until gunicorn's workers and their PostgreSQL backends stop using CPU. A sync worker finishes every request it
    accepted even after the client hung up, so a page that takes seconds would otherwise still be running, and
    queueing the next page's requests, when the next window starts."""
    deadline = time.monotonic() + timeout
    pids = server.worker_pids() + load.pids_matching("postgres", f" {DATABASE} ")
    before = load.process_ticks(pids)
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = load.process_ticks(pids)
        if sum(now.values()) - sum(before[pid] for pid in now if pid in before) <= 1:  # a tick: 1/100 s
            return
        before = now
    raise HarnessError(f"gunicorn still busy {timeout:.0f}s after the load stopped")


def alone_ms(api: ApiClient, path: str, repeat: int = 9) -> float:
    """The median latency of `path` for one client on an otherwise idle server (the page's own cost, no queueing)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        api.get_json(path)
        times.append((time.perf_counter() - started) * 1000)
    return round(sorted(times)[len(times) // 2], 2)


def measure_size(server: Gunicorn, pair: KeyPair, paths: dict[str, str], args: argparse.Namespace) -> dict:
    """Every page and the yardstick, `--rounds` windows each, alternating (as run.py does); then each page alone."""
    scenarios = [Scenario(name="GET /account", method="GET", path="/account", auth=True)]
    scenarios += [Scenario(name=name, method="GET", path=path, auth=True) for name, path in paths.items()]
    parts: dict[str, list[dict]] = {scenario.name: [] for scenario in scenarios}
    for round_number in range(1, args.rounds + 1):
        for scenario in scenarios:
            wait_quiet(server)
            part = load.drive(scenario, server.port, duration=args.duration / args.rounds,
                              warmup=args.warmup if round_number == 1 else 0.5, concurrency=args.concurrency,
                              procs=1, server_pids=server.worker_pids(), database=DATABASE,
                              credentials=(pair.public_key, pair.secret_key))
            parts[scenario.name].append(part)
            if server.process.poll() is not None:
                raise HarnessError(f"gunicorn died during {scenario.name}:\n{server.log_tail()}")
    rows = {row["name"]: row for row in (report.merge(scenario, parts[scenario.name]) for scenario in scenarios)}
    wait_quiet(server)
    api = ApiClient(server.port, pair)
    for scenario in scenarios:
        rows[scenario.name]["alone_ms"] = alone_ms(api, scenario.path)
    for name, row in rows.items():
        print(f"  {name}: {row['rps']:,.1f} req/s, p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms; alone "
              f"{row['alone_ms']} ms" + (f", {row['errors']} errors {row['statuses']} {row['failures']}"
                                         if row["errors"] else ""), flush=True)
    return rows


def explain(pair: KeyPair, path: str) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the charges SELECT that the view runs for `path`, captured while the Django
    test client calls it in this process (the same code as under gunicorn, so the same statement)."""
    import base64

    from django.db import connection
    from django.test import Client

    captured: list[tuple[str, object]] = []

    def capture(execute, sql_text, params, many, context):
        if sql_text.lstrip().upper().startswith("SELECT") and 'FROM "payments_payin"' in sql_text:
            captured.append((sql_text, params))
        return execute(sql_text, params, many, context)

    token = base64.b64encode(f"{pair.public_key}:{pair.secret_key}".encode()).decode()
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Basic {token}")
    with connection.execute_wrapper(capture):
        response = client.get(path)
    if response.status_code != 200 or not captured:
        raise HarnessError(f"GET {path} in-process: {response.status_code}, {len(captured)} charge queries")
    statement, params = captured[-1]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, params)
        return [row[0] for row in cursor.fetchall()]


# --- Report ----------------------------------------------------------------------------------------------------------
def comparison(results: list[dict]) -> list[dict]:
    """Each page at the largest size against the smallest: req/s ratio (the verdict), the same ratio with each
    normalised by GET /account of its own size (what the machine did in between cancels out) and p50/p99."""
    small, large = results[0], results[-1]
    rows = []
    for name in small["rows"]:
        if name == "GET /account":
            continue
        before, after = small["rows"][name], large["rows"][name]
        ratio = after["rps"] / before["rps"] if before["rps"] else None
        small_yardstick = small["rows"]["GET /account"]["rps"]
        yardstick = large["rows"]["GET /account"]["rps"] / small_yardstick if small_yardstick else None
        rows.append({
            "page": name, "small_rps": before["rps"], "large_rps": after["rps"],
            "ratio": None if ratio is None else round(ratio, 3),
            "normalised_ratio": None if ratio is None or not yardstick else round(ratio / yardstick, 3),
            "small_p50_ms": before["p50_ms"], "large_p50_ms": after["p50_ms"],
            "small_p99_ms": before["p99_ms"], "large_p99_ms": after["p99_ms"],
            "small_alone_ms": before["alone_ms"], "large_alone_ms": after["alone_ms"],
            "errors": before["errors"] + after["errors"],
            "pass": ratio is not None and ratio >= 1 - TOLERANCE and before["errors"] + after["errors"] == 0,
        })
    return rows


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _table(header: tuple[str, ...], lines: list[tuple[str, ...]], *, left: int) -> str:
    """Column `left` (a name) aligned left, the figures right."""
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]

    def render(cells: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(width) if i == left else cell.rjust(width)
                         for i, (cell, width) in enumerate(zip(cells, widths, strict=True)))

    return "\n".join([render(header), "  ".join("-" * width for width in widths), *map(render, lines)])


def print_report(results: list[dict], compared: list[dict]) -> None:
    print()
    print(_table(("rows", "page", "req/s", "p50 ms", "p99 ms", "errors", "alone ms"), [
        (f"{result['size']:,}", name, _fmt(row["rps"], 1), _fmt(row["p50_ms"]), _fmt(row["p99_ms"]),
         f"{row['errors']:,}", _fmt(row["alone_ms"]))
        for result in results for name, row in result["rows"].items()], left=1))
    small, large = results[0]["size"], results[-1]["size"]
    print(f"\n{large:,} vs {small:,} rows: the req/s ratio is the verdict (PASS at >= {1 - TOLERANCE:.2f}); "
          "'normalised' divides it by GET /account's own ratio (the machine's drift between the two sizes); "
          "'alone' is one client on an idle server")
    print(_table(("page", "req/s", "ratio", "normalised", "p50 ms", "p99 ms", "alone ms", "verdict"), [
        (row["page"], f"{_fmt(row['small_rps'], 1)} -> {_fmt(row['large_rps'], 1)}", _fmt(row["ratio"]),
         _fmt(row["normalised_ratio"]), f"{_fmt(row['small_p50_ms'])} -> {_fmt(row['large_p50_ms'])}",
         f"{_fmt(row['small_p99_ms'])} -> {_fmt(row['large_p99_ms'])}",
         f"{_fmt(row['small_alone_ms'])} -> {_fmt(row['large_alone_ms'])}", "PASS" if row["pass"] else "FAIL")
        for row in compared], left=0))
    print()
    for result in results:
        for name, plan in result["plans"].items():
            print(f"EXPLAIN (ANALYZE, BUFFERS) at {result['size']:,}: {name}")
            print("\n".join(f"    {line}" for line in plan))


# --- Run -------------------------------------------------------------------------------------------------------------
def drop_database() -> None:
    with psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE)))


def run(args: argparse.Namespace) -> list[dict]:
    env = service_env(DATABASE, REDIS_DBS)
    print(f"setting up: database {DATABASE}, migrate, bench merchant and test key, {NOISE_MERCHANTS} other "
          "merchants", flush=True)
    recreate_database(DATABASE)
    pair = prepare_data(env)
    start_django(env)
    noise = create_noise_merchants(NOISE_MERCHANTS)
    close_django_connections()
    config = ServerConfig(workers=args.workers, worker_class="sync", threads=1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    results = []
    have: dict[str, int] = {}
    with psycopg.connect(DSN, autocommit=True, connect_timeout=10) as conn:
        conn.execute("SET synchronous_commit = off")  # a bulk load: no need to wait for each chunk's WAL flush
        conn.execute("SET maintenance_work_mem = '256MB'")
        bench = bench_merchant_id(conn)
        for size in args.sizes:
            print(f"growing to {size:,} charges of the bench merchant (+{args.noise:g}x for the others)", flush=True)
            load_seconds = grow(conn, bench=bench, noise=noise, have=have, size=size, noise_share=args.noise)
            server = Gunicorn(config, env, RESULTS / "list_scaling_gunicorn.log")
            try:
                server.start()
                paths = pages(conn, ApiClient(server.port, pair), bench=bench, size=size)
                rows = measure_size(server, pair, paths, args)
            finally:
                server.stop()
            plans = {name: explain(pair, path) for name, path in paths.items()}
            close_django_connections()
            results.append({"size": size, "load_seconds": round(load_seconds, 1), "paths": paths, "rows": rows,
                            "plans": plans})
    return results


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    try:
        results = run(args)
        compared = comparison(results)
        print_report(results, compared)
        (RESULTS / "list_scaling.json").write_text(json.dumps({
            "meta": {"finishedAt": datetime.now(UTC).isoformat(timespec="seconds"), "sizes": args.sizes,
                     "noise": args.noise, "duration": args.duration, "rounds": args.rounds,
                     "concurrency": args.concurrency, "workers": args.workers, "cpus": os.cpu_count()},
            "comparison": compared, "results": results}, indent=2, default=str) + "\n")
    except KeyboardInterrupt:
        print("\ninterrupted; gunicorn stopped", file=sys.stderr)
        return 130
    except HarnessError as error:
        print(f"list scaling bench failed: {error}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        return 2
    finally:
        if not args.keep:
            try:
                drop_database()
            except psycopg.Error as error:
                print(f"could not drop {DATABASE}: {error}", file=sys.stderr)
    print(f"\nwritten to {(RESULTS / 'list_scaling.json').relative_to(ROOT)} in {time.monotonic() - started:.0f}s")
    failed = any(not row["pass"] for row in compared)
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
