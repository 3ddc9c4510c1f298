"""The servers under test and what they run on: databases, Redis, manage.py, gunicorn, a plain JSON client.

Shared by `python -m bench` and the soak test (tests/soak/soak.py). Only HTTP and manage.py commands reach the
service, so the same code drives this tree, another revision's tree (`--compare`) and the textbook peer. Every wait
is bounded: subprocess calls have timeouts, gunicorn is waited for with a deadline and stopped with SIGKILL on its
process group when a graceful stop takes too long; a child gets SIGTERM if the harness dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import base64
import ctypes
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
PYTHON = Path(sys.executable)  # the same interpreter (and packages) serves every tree
HOST = "127.0.0.1"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/pagamentos"
COMMAND_TIMEOUT = 300  # migrate on a cold, busy machine is the slowest step
HEALTH_TIMEOUT = 60
STOP_TIMEOUT = 15


class HarnessError(Exception):
    """The bench could not run (as opposed to: it ran and a bound was missed)."""


@dataclass(frozen=True)
class KeyPair:
    public_key: str
    secret_key: str

    @property
    def basic(self) -> str:
        return "Basic " + base64.b64encode(f"{self.public_key}:{self.secret_key}".encode()).decode()


def database_url(name: str, base: str | None = None) -> str:
    """`base` (default: DATABASE_URL, else the local server) with its database name replaced by `name`."""
    parts = urlsplit(base or os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL)
    if parts.scheme not in ("postgres", "postgresql", "pgsql"):
        raise HarnessError(f"DATABASE_URL must name a PostgreSQL server, not {parts.scheme}://")
    return urlunsplit(parts._replace(path=f"/{name}"))


def service_env(db_url: str, cache_url: str = "", broker_url: str = "") -> dict[str, str]:
    """The environment of every manage.py, gunicorn and Celery process of a tree: production backends, quiet logs, a
    rate limit no run reaches (so 429s never stand in for work), one throwaway SECRET_KEY (the API key digests derive
    from it: createapikey and gunicorn must share it), and plain-HTTP loopback webhook targets allowed (the receiver
    of the webhook figure)."""
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": db_url,
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",  # no request logs: they would measure the log handler
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "API_RATE_LIMIT": "1000000",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
        "WEBHOOKS_ALLOW_HTTP": "true",
        "PYTHONUNBUFFERED": "1",
    })
    env.update({name: value for name, value in (("CACHE_URL", cache_url), ("CELERY_BROKER_URL", broker_url)) if value})
    env.pop("API_KEY_DIGEST_KEY", None)
    return env


# --- Databases and Redis ----------------------------------------------------------------------------------------------
def connect(url: str, *, admin: bool = False) -> psycopg.Connection:
    """Autocommit, given up after 10 s; `admin`: to the server's `postgres` database instead."""
    return psycopg.connect(database_url("postgres", url) if admin else url, autocommit=True, connect_timeout=10)


def recreate_database(url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    try:
        with connect(url, admin=True) as conn:
            # FORCE ends the sessions a crashed earlier run may have left behind.
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as error:
        raise HarnessError(f"cannot recreate database {name}: {error}") from error


def vacuum_analyze(url: str) -> None:
    """What autovacuum does on a live database (this machine's PostgreSQL may run without it): without statistics,
    a table analyzed while empty stays "empty" to the planner, and a list page or a foreign-key check is planned as a
    scan of every row."""
    try:
        with connect(url) as conn:
            conn.execute("VACUUM (ANALYZE)")
    except psycopg.Error as error:
        raise HarnessError(f"cannot vacuum {url}: {error}") from error


def flush_redis(url: str) -> None:
    """Empty one Redis database: a key an earlier run left (a blocked IP, a queued message) must not leak in."""
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=5).flushdb()
    except redis.RedisError as error:
        raise HarnessError(f"cannot empty Redis {url}: {error}") from error


# --- manage.py -------------------------------------------------------------------------------------------------------
def manage(env: dict[str, str], *args: str, cwd: Path = ROOT) -> str:
    """One manage.py command of the tree (or project) at `cwd`: its stdout, or a HarnessError with its stderr."""
    try:
        done = subprocess.run([str(PYTHON), "manage.py", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as error:
        raise HarnessError(f"manage.py {args[0]} took over {COMMAND_TIMEOUT}s") from error
    if done.returncode != 0:
        raise HarnessError(f"manage.py {args[0]} in {cwd} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def last_json(output: str, what: str) -> dict:
    try:
        return json.loads(output.strip().splitlines()[-1])
    except (IndexError, ValueError) as error:
        raise HarnessError(f"{what} printed no JSON: {output[-500:]!r}") from error


def merchant_create(env: dict[str, str], root: Path, email: str) -> KeyPair:
    """An approved merchant and a test key pair, with the tree's own operator commands."""
    manage(env, "createmerchant", "--email", email, f"--password={secrets.token_urlsafe(16)}", "--name", "Bench",
           "--approve", cwd=root)
    made = last_json(manage(env, "createapikey", "--email", email, "--mode", "test", "--label", "bench", cwd=root),
                     "createapikey")
    return KeyPair(made["publicKey"], made["secretKey"])


# --- Processes -------------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def stop_with_parent() -> None:
    """In a child before exec: SIGTERM when the harness dies, even by SIGKILL, so nothing it started outlives it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass  # not glibc Linux: the harness's finally blocks remain the only stop


def spawn(command: list[str], env: dict[str, str], log_path: Path, cwd: Path = ROOT) -> subprocess.Popen:
    """A process in a session of its own (Ctrl-C reaches only the harness, which stops it in order)."""
    with log_path.open("ab") as log:
        return subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=stop_with_parent)


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL a process started in its own session and everything it forked."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def stop(process: subprocess.Popen | None, grace: float = STOP_TIMEOUT) -> None:
    """SIGTERM the process group, SIGKILL it if it has not ended within `grace` seconds."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    finally:  # also on a second Ctrl-C while waiting
        if process.poll() is None:
            kill_group(process)


class Gunicorn:
    """gunicorn serving `app` from `root` with that tree's gunicorn.conf.py (sync workers, cores + 1; WEB_CONCURRENCY
    or `workers` override the count), on a free port of 127.0.0.1. `chdir`: where `app` is imported from (the peer's
    bench/peer)."""

    def __init__(self, root: Path, env: dict[str, str], log_path: Path, *, app: str = "config.wsgi:application",
                 chdir: Path | None = None, workers: int | None = None):
        self.root, self.env, self.log_path, self.app, self.chdir = root, env, log_path, app, chdir
        self.workers = workers
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        config = self.root / "gunicorn.conf.py"  # the tree's own (the peer, served from this tree: this tree's)
        command = [str(PYTHON), "-m", "gunicorn", "--config", str(config if config.exists() else ROOT / config.name),
                   self.app, "--bind", f"{HOST}:{self.port}", "--log-level", "warning", "--graceful-timeout", "5",
                   "--no-control-socket"]  # gunicorn 27 would otherwise create ~/.gunicorn/gunicorn.ctl
        if self.chdir:
            command += ["--chdir", str(self.chdir)]
        if self.workers:
            command += ["--workers", str(self.workers)]
        if Path("/dev/shm").is_dir():
            command += ["--worker-tmp-dir", "/dev/shm"]  # the workers' heartbeat file: off the disk
        return command

    def start(self) -> None:
        self.log_path.write_bytes(b"")
        self.process = spawn(self.command(), self.env, self.log_path, cwd=self.root)
        deadline = time.monotonic() + HEALTH_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise HarnessError(f"gunicorn exited with {self.process.returncode}:\n{self.log_tail()}")
            if self.health() == 200:
                return
            time.sleep(0.2)
        raise HarnessError(f"gunicorn not healthy after {HEALTH_TIMEOUT}s:\n{self.log_tail()}")

    def health(self) -> int | None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=5)
        try:
            conn.request("GET", "/health")
            return conn.getresponse().status
        except OSError:
            return None
        finally:
            conn.close()

    def stop(self) -> None:
        stop(self.process)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no gunicorn log)"


class ApiClient:
    """Plain JSON requests with a key pair: for setups, never for measuring (that is bench/load.py's)."""

    def __init__(self, port: int, pair: KeyPair):
        self.port = port
        self.headers = {"Authorization": pair.basic, "Accept": "application/json", "Content-Type": "application/json"}

    def request_json(self, method: str, path: str, body: object = None, *, expect: int = 200) -> dict:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=self.headers)
            response = conn.getresponse()
            status, text = response.status, response.read().decode(errors="replace")
        except OSError as error:
            raise HarnessError(f"{method} {path}: {error}") from error
        finally:
            conn.close()
        if status != expect:
            raise HarnessError(f"{method} {path} answered {status}, not {expect}: {text[:1000]}")
        return json.loads(text)

    def post_json(self, path: str, body: object, *, expect: int = 201) -> dict:
        return self.request_json("POST", path, body, expect=expect)

    def get_json(self, path: str, *, expect: int = 200) -> dict:
        return self.request_json("GET", path, expect=expect)
