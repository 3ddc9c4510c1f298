"""The service under test: a fresh PostgreSQL database, a merchant with a test key pair, and gunicorn on 127.0.0.1.

Everything here is bounded: every subprocess call has a timeout, gunicorn is waited for with a deadline, and
`Gunicorn.stop()` ends with SIGKILL on the whole process group if a graceful stop does not finish in time.
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
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
GUNICORN = ROOT / ".venv" / "bin" / "gunicorn"
HOST = "127.0.0.1"
DATABASE = "pagamentos_bench"
# The textbook peer (bench/peer/, `run.py --peer`): its own Django project and database.
PEER_DIR = ROOT / "bench" / "peer"
PEER_DATABASE = "pagamentos_bench_peer"
PEER_WSGI = "textbook.wsgi:application"
ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
MERCHANT_EMAIL = "bench@example.com"
COMMAND_TIMEOUT = 300  # migrate on a cold machine is the slowest step
HEALTH_TIMEOUT = 60
STOP_TIMEOUT = 15
PR_SET_PDEATHSIG = 1


class HarnessError(Exception):
    """The bench could not run (as opposed to: it ran and a target was missed)."""


@dataclass(frozen=True)
class ServerConfig:
    workers: int
    worker_class: str
    threads: int
    wsgi: str = "config.wsgi:application"  # bench/floor.py's application with --floor
    chdir: str | None = None  # gunicorn's --chdir: where `wsgi` is imported from (the peer's bench/peer)

    def describe(self) -> str:
        threads = f" x {self.threads} threads" if self.worker_class == "gthread" else ""
        return f"gunicorn {self.workers} {self.worker_class} workers{threads}"


@dataclass(frozen=True)
class KeyPair:
    public_key: str
    secret_key: str


def service_env(database: str | None = None, redis_dbs: tuple[int, int] = (3, 4)) -> dict[str, str]:
    """The environment of every manage.py and gunicorn process: production-like backends, quiet logs, and a rate
    limit far above what the bench can send, so 429s never stand in for real work. Another bench passes its own
    database and Redis databases (cache, broker), so it never shares state with this one; without one, DATABASE
    as it is when called (webhook_delivery.py sets it)."""
    database = database or DATABASE
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}",
        "CACHE_URL": f"redis://127.0.0.1:6379/{redis_dbs[0]}",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:6379/{redis_dbs[1]}",
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",  # request logs off: they would measure the log handler, not the API
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "API_RATE_LIMIT": "1000000",
        # One throwaway key per run, shared by createapikey and gunicorn (the API key digest derives from it), and
        # never the checkout's own .local/secret_key.
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PYTHONUNBUFFERED": "1",
    })
    env.pop("API_KEY_DIGEST_KEY", None)
    return env


# --- Database and data -----------------------------------------------------------------------------------------------
def recreate_database(database: str | None = None) -> None:
    database = database or DATABASE  # read when called, like service_env's
    try:
        with psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=10) as conn:
            # FORCE ends sessions a crashed earlier run may have left behind.
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    except psycopg.Error as error:
        raise HarnessError(f"cannot recreate database {database}: {error}") from error


def reset_redis(redis_dbs: tuple[int, int] = (3, 4)) -> None:
    """Empty the run's Redis databases: a key an earlier run left there (an IP blocked after the failed
    authentications of a run whose database was dropped under it, a rate counter, queued messages) must not turn
    this run's requests into 429s."""
    import redis

    try:
        for db in redis_dbs:
            redis.Redis(host="127.0.0.1", port=6379, db=db, socket_timeout=5).flushdb()
    except redis.RedisError as error:
        raise HarnessError(f"cannot empty Redis databases {redis_dbs}: {error}") from error


def connect(database: str) -> psycopg.Connection:
    """A connection to one of the bench's databases, in autocommit, given up after 10 s."""
    return psycopg.connect(f"postgresql://postgres@{HOST}:5432/{database}", autocommit=True, connect_timeout=10)


class _Background:
    """A stand-in for what a live installation does beside a load run, in a thread of the harness: `_run` works until
    `_stop` is set, which leaving the `with` block does (and waits up to JOIN_SECONDS for it)."""

    JOIN_SECONDS = 10.0

    def __init__(self, name: str, interval: float):
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(timeout=self.JOIN_SECONDS)

    def _run(self) -> None:
        raise NotImplementedError


class DispatchStandIn(_Background):
    """What the payout worker's dispatch does to the flag the API reads after each payout, for a load run with no
    worker (`run.py` measures the API alone). The flag holds the time its dispatch is due (README, Decision 119); the
    worker deletes it when that message comes due, and until then the payouts of each gunicorn worker ask Redis
    nothing. With no one to delete it, the flag the first payout set stayed for its minute, long past its due time,
    and every later payout asked Redis about it: a round trip that production does not make. Every 10 ms this deletes
    a flag of `redis_dbs` (each side's cache database) whose due time has passed, as the dispatch does first thing; a
    flag without a due time (a tree from before them, under --compare) DELAY seconds after it first saw it, when
    that tree's dispatch would have run. The messages themselves stay unread in the broker, as before.

        with DispatchStandIn([3]):
            ...  # the load
    """

    KEY = "payouts:dispatch"  # payments.payouts.dispatch.DISPATCH_FLAG, in the raw Redis of core.cache
    DELAY = 0.25  # payments.payouts.dispatch.DISPATCH_DELAY_SECONDS

    def __init__(self, redis_dbs: list[int], interval: float = 0.01):
        import redis

        super().__init__("dispatch", interval)
        self.clients = [redis.Redis(host="127.0.0.1", port=6379, db=db, socket_timeout=5) for db in redis_dbs]
        self.cleared = 0

    def _run(self) -> None:
        first_seen: dict[int, float] = {}  # by client: when it first saw the flag without a due time
        while not self._stop.wait(self.interval):
            for index, client in enumerate(self.clients):
                try:
                    held = client.get(self.KEY)
                    if held is None:
                        continue
                    now = time.time()
                    try:
                        due = float(held)
                    except ValueError:
                        due = 0.0
                    if due < 1e9:  # no due time ("1", a tree from before them): DELAY after it was first seen
                        due = first_seen.setdefault(index, now) + self.DELAY
                    if now >= due and client.delete(self.KEY):
                        self.cleared += 1
                        first_seen.pop(index, None)
                except Exception:  # a hiccup of Redis: the next tick tries again
                    continue


class Autovacuum(_Background):
    """What autovacuum does on a live database, while a load runs: every `interval` seconds, VACUUM each table of
    `databases` past autovacuum's vacuum thresholds (dead rows, or rows inserted since its last vacuum), ANALYZE
    each past its analyze threshold, with this server's own autovacuum settings (thresholds, scale factors and the
    vacuum's cost delay). The reference machine's PostgreSQL runs with autovacuum off, and a bench database starts
    empty:
    - without the analyses, a table analyzed while it held no rows (the ledger's transactions) stays "empty" to the
      planner for the whole run, and each backend's foreign-key check of a new ledger entry, planned once as a scan
      of that empty table, read the whole table for every entry as it grew (2.25 against 1.63 ms of PostgreSQL per
      payout in `bench/payouts_e2e.py`); each ANALYZE makes PostgreSQL plan the statements that read it again;
    - without the vacuums, every payout's two status changes leave dead rows no one removes, and the worker's scans
      of the unfinished payouts (a partial index) walked every dead entry: 11,800 buffers and 13.6 ms for a dispatch
      that found nothing, after one run of `bench/payouts_e2e.py`.
    Autovacuum visits a database once a minute (its naptime), which on a live database's large tables is a small
    share of their rows; here the tables are born during the run, so the thresholds are checked every second.

        with Autovacuum([database]):
            ...  # the load
    """

    DUE = """
        SELECT s.schemaname, s.relname,
               s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8
                   + current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0)
               OR s.n_ins_since_vacuum > current_setting('autovacuum_vacuum_insert_threshold')::float8
                   + current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * greatest(c.reltuples, 0),
               s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                   + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)
        FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    """

    JOIN_SECONDS = 60.0  # a VACUUM under way finishes first

    def __init__(self, databases: list[str], interval: float = 1.0):
        super().__init__("autovacuum", interval)
        self.databases = databases

    def _run(self) -> None:
        connections = {}
        try:
            while not self._stop.wait(self.interval):
                for database in self.databases:
                    if database not in connections:
                        connections[database] = self._connect(database)
                    self._pass(connections[database])
        except psycopg.Error as error:  # the figures after this lack current statistics: say so
            print(f"warning: the autovacuum stand-in stopped: {error}", file=sys.stderr, flush=True)
        finally:
            for conn in connections.values():
                conn.close()

    @staticmethod
    def _connect(database: str) -> psycopg.Connection:
        """A connection whose VACUUMs pace themselves as autovacuum's do (a manual VACUUM does not by default)."""
        conn = connect(database)
        conn.execute("SELECT set_config('vacuum_cost_delay', CASE current_setting('autovacuum_vacuum_cost_delay') "
                     "WHEN '-1' THEN current_setting('vacuum_cost_delay') "
                     "ELSE current_setting('autovacuum_vacuum_cost_delay') END, false), "
                     "set_config('vacuum_cost_limit', CASE current_setting('autovacuum_vacuum_cost_limit') "
                     "WHEN '-1' THEN current_setting('vacuum_cost_limit') "
                     "ELSE current_setting('autovacuum_vacuum_cost_limit') END, false)")
        return conn

    def _pass(self, conn: psycopg.Connection) -> None:
        for schema, table, vacuum, analyze in conn.execute(self.DUE).fetchall():
            name = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))
            if vacuum:
                conn.execute(sql.SQL("VACUUM (ANALYZE) {}" if analyze else "VACUUM {}").format(name))
            elif analyze:
                conn.execute(sql.SQL("ANALYZE {}").format(name))


def analyze(database: str | None = None) -> None:
    """ANALYZE every table, as autovacuum soon does on a live database. A database created a minute ago has no
    statistics, and without them PostgreSQL may plan a page of 20 charges as a sort of every charge."""
    database = database or DATABASE
    try:
        with connect(database) as conn:
            conn.execute("ANALYZE")
    except psycopg.Error as error:
        raise HarnessError(f"cannot analyze database {database}: {error}") from error


def manage(env: dict[str, str], *args: str, root: Path = ROOT, cwd: Path | None = None) -> str:
    """Run one manage.py command of the tree at `root` (another one: `run.py --compare`'s worktree), or with that
    tree's Python the manage.py in `cwd` (the peer's); its stdout, or a HarnessError carrying its stderr."""
    try:
        done = subprocess.run([str(root / PYTHON.relative_to(ROOT)), "manage.py", *args], cwd=cwd or root, env=env,
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as error:
        raise HarnessError(f"manage.py {args[0]} took over {COMMAND_TIMEOUT}s") from error
    if done.returncode != 0:
        raise HarnessError(f"manage.py {args[0]} failed ({done.returncode}):\n{done.stderr.strip()[-3000:]}")
    return done.stdout


def prepare_data(env: dict[str, str], root: Path = ROOT) -> KeyPair:
    """Schema, one approved merchant and its test key pair, with the manage.py of the tree at `root`; the secret
    exists only in this process's memory."""
    manage(env, "migrate", "--noinput", "-v", "0", root=root)
    manage(env, "createmerchant", "--email", MERCHANT_EMAIL, f"--password={secrets.token_urlsafe(16)}",
           "--name", "Bench", "--approve", root=root)
    output = manage(env, "createapikey", "--email", MERCHANT_EMAIL, "--mode", "test", "--label", "bench", root=root)
    try:
        pair = json.loads(output.strip().splitlines()[-1])
        return KeyPair(public_key=pair["publicKey"], secret_key=pair["secretKey"])
    except (IndexError, ValueError, KeyError) as error:
        raise HarnessError(f"createapikey printed no key pair: {output[-500:]!r}") from error


def peer_env(database: str = PEER_DATABASE) -> dict[str, str]:
    """The environment of the textbook peer's manage.py and gunicorn (bench/peer/textbook/settings.py)."""
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "textbook.settings",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}",
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECRET_KEY": secrets.token_urlsafe(50),  # the key digests derive from it: one per run, like the service's
        "PYTHONUNBUFFERED": "1",
    })
    env.pop("API_KEY_DIGEST_KEY", None)
    return env


def prepare_peer_data(env: dict[str, str], merchants: int) -> tuple[KeyPair, dict[str, str]]:
    """The peer's schema, its bench merchant with a test key pair and a funded balance, and `merchants` more (the
    values of the many-merchants scenario's `merchant_pairs`)."""
    manage(env, "migrate", "--noinput", "-v", "0", cwd=PEER_DIR)
    output = manage(env, "peer_seed", "--merchants", str(merchants), cwd=PEER_DIR)
    try:
        made = json.loads(output.strip().splitlines()[-1])
        pair = KeyPair(public_key=made["publicKey"], secret_key=made["secretKey"])
    except (IndexError, ValueError, KeyError) as error:
        raise HarnessError(f"peer_seed printed no key pair: {output[-500:]!r}") from error
    return pair, {"merchant_pairs": made["merchantPairs"]}


# --- gunicorn --------------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class Gunicorn:
    """gunicorn in its own session, so Ctrl-C on the terminal reaches only run.py, which then stops it in order.
    It serves the tree at `root`: this one, or `run.py --compare`'s worktree."""

    def __init__(self, config: ServerConfig, env: dict[str, str], log_path: Path, root: Path = ROOT):
        self.config = config
        self.env = env
        self.log_path = log_path
        self.root = root
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        command = [
            str(self.root / GUNICORN.relative_to(ROOT)), self.config.wsgi,
            "--bind", f"{HOST}:{self.port}",
            "--workers", str(self.config.workers),
            "--worker-class", self.config.worker_class,
            "--log-level", "warning",
            "--graceful-timeout", "5",
            "--no-control-socket",  # gunicorn 27 would otherwise create ~/.gunicorn/gunicorn.ctl
        ]
        if self.config.chdir:
            command += ["--chdir", self.config.chdir]
        if self.config.worker_class == "gthread":
            command += ["--threads", str(self.config.threads)]
        if Path("/dev/shm").is_dir():
            command += ["--worker-tmp-dir", "/dev/shm"]  # the workers' heartbeat file: keep it off the disk
        return command

    def start(self) -> None:
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(self.command(), cwd=self.root, env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_stop_with_parent)
        self.wait_healthy()

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise HarnessError(f"gunicorn exited with {self.process.returncode}:\n{self.log_tail()}")
            if self.health_status() == 200:
                return
            time.sleep(0.2)
        raise HarnessError(f"gunicorn not healthy after {HEALTH_TIMEOUT}s:\n{self.log_tail()}")

    def health_status(self) -> int | None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=5)
        try:
            conn.request("GET", "/health")
            return conn.getresponse().status
        except OSError:
            return None
        finally:
            conn.close()

    def worker_pids(self) -> list[int]:
        """The worker processes, for CPU accounting: the children of the gunicorn master."""
        if self.process is None:
            return []
        try:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text()
        except OSError:
            return []
        return [int(pid) for pid in children.split()]

    def stop(self) -> None:
        """SIGTERM (graceful: workers finish their request), then SIGKILL on the group if that takes too long."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        finally:  # also on a second Ctrl-C while waiting
            if self.process.poll() is None:
                kill_group(self.process)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no gunicorn log)"


class ApiClient:
    """Plain requests to the running service with the bench merchant's key pair: for the setups that create data
    before measuring (never for the measuring itself, which is load.py's)."""

    def __init__(self, port: int, pair: KeyPair):
        self.port = port
        token = base64.b64encode(f"{pair.public_key}:{pair.secret_key}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}", "Accept": "application/json",
                        "Content-Type": "application/json"}

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


def _stop_with_parent() -> None:
    """In the child before exec: SIGTERM when run.py dies, even by SIGKILL, so no gunicorn outlives the bench."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass  # not glibc Linux: the finally blocks of run.py remain the only stop


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL a process started with start_new_session=True and everything it forked."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
