"""Who waits on whom: samples a database's backends every few milliseconds while a bench runs, and prints, per kind
of client process (gunicorn, the Celery worker, other), the average number of its backends waiting on a lock held by
each kind, idle inside a transaction, or active (on CPU or waiting on I/O).

    .venv/bin/python bench/lock_waits.py DATABASE [--seconds 10] [--interval 0.002]

Run it beside `bench/payouts_e2e.py` (database `pagamentos_bench_e2e`) during a phase with the worker running, then
during one without: "gunicorn waits on celery" is the API's time spent queued behind a lock the worker holds (Decision
117 measured 0.108 of a web backend before the worker's ledger lock was cut to its write, 0.080 after). A backend's
client process is found from its TCP port (`ss -tnp`); the sampler's own queries cost some CPU, so run it on a
phase whose throughput is not the figure being read.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import time
from pathlib import Path

import psycopg

_SOCKET = re.compile(r"127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:5432\s+users:\(\(\"[^\"]+\",pid=(\d+)")


def client_kinds() -> dict[int, str]:
    """Each local client port connected to PostgreSQL: the kind of process holding it."""
    kinds = {}
    listing = subprocess.run(["ss", "-tnpH"], capture_output=True, text=True, check=False).stdout
    for port, pid in _SOCKET.findall(listing):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_text()
        except OSError:
            continue
        kinds[int(port)] = "celery" if "celery" in command else "gunicorn" if "gunicorn" in command else "other"
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("database")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=0.002)
    args = parser.parse_args()
    counts: collections.Counter = collections.Counter()
    samples = 0
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        kinds = client_kinds()
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            rows = conn.execute(
                "SELECT pid, client_port, state, wait_event_type, pg_blocking_pids(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()", [args.database]).fetchall()
            ports = {pid: port for pid, port, *_ in rows}
            for _, port, state, wait, blockers in rows:
                kind = kinds.get(port, "other")
                if wait == "Lock" and blockers:
                    counts[f"{kind} waits on {kinds.get(ports.get(blockers[0]), 'other')}"] += 1
                elif state == "idle in transaction":
                    counts[f"{kind} idle in transaction"] += 1
                elif state == "active":
                    counts[f"{kind} active ({wait or 'CPU'})"] += 1
            samples += 1
            if samples % 500 == 0:
                kinds = client_kinds()  # connections opened since
            time.sleep(args.interval)
    print(f"{samples} samples of {args.database}; average backends in each state:")
    for what, count in counts.most_common():
        print(f"  {count / samples:6.3f}  {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
