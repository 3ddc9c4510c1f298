"""The quick start's payouts (`make run`): web and worker are separate processes on the embedded default (SQLite, the
file broker, no Redis), so the dispatch flag the web process sets must be one the worker can clear. Once it could
not, a payout made within a minute of another waited for the reconciliation job (issue 16).

No scheduler runs here: the reconciliation job cannot rescue a payout whose dispatch message was never sent.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from accounts.management.commands.runlocal import LOCAL_ENVIRONMENT

# Well under the reconciliation job's interval (20 s), which does not even run here.
QUICKLY = 10.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class QuickStart:
    """`manage.py runlocal`'s web server and worker, started apart, on a LOCAL_DIR of their own."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        inherited = {k: v for k, v in os.environ.items()
                     if k not in ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL", "SECRET_KEY")}
        self.environment = {**inherited, **LOCAL_ENVIRONMENT, "LOCAL_DIR": str(folder),
                            "PUBLIC_BASE_URL": f"http://127.0.0.1:{self.port}", "SIMULATOR_AUTO_CONFIRM_SECONDS": "1",
                            "LOG_LEVEL": "WARNING"}
        self.processes: list[subprocess.Popen] = []

    def manage(self, *args: str) -> str:
        return subprocess.run([sys.executable, "manage.py", *args], env=self.environment, cwd=settings.BASE_DIR,
                              check=True, capture_output=True, text=True).stdout

    def start(self, name: str, *args: str) -> None:
        log = open(self.folder / f"{name}.log", "ab")  # closed when the test process ends
        self.processes.append(subprocess.Popen([sys.executable, *args], env=self.environment, cwd=settings.BASE_DIR,
                                               stdout=log, stderr=subprocess.STDOUT))

    def stop(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait(timeout=10)

    def logs(self) -> str:
        lines = (line for p in sorted(self.folder.glob("*.log")) for line in p.read_text(errors="replace").splitlines()
                 if '"GET /payout/' not in line)  # not the polling
        return "\n".join(list(lines)[-60:])


@pytest.fixture
def quickstart(tmp_path):
    running = QuickStart(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def call(quickstart: QuickStart, credentials: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{quickstart.port}{path}", method=method,
                                     data=json.dumps(body).encode() if body else None,
                                     headers={"Authorization": credentials, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def wait_completed(quickstart: QuickStart, credentials: str, payout_id: str) -> tuple[dict, float]:
    started = time.monotonic()
    while time.monotonic() - started < 30:
        body = call(quickstart, credentials, "GET", f"/payout/{payout_id}")
        if body["status"] == "COMPLETED":
            return body, time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"payout {payout_id} is still {body['status']} after 30 s\n{quickstart.logs()}")


def test_two_payouts_a_second_apart_both_complete_quickly_with_web_and_worker_apart(quickstart):
    quickstart.manage("migrate", "--verbosity", "0")
    demo = json.loads(quickstart.manage("seed_demo", "--json").strip().splitlines()[-1])
    credentials = "Basic " + base64.b64encode(f"{demo['publicKey']}:{demo['secretKey']}".encode()).decode()
    quickstart.start("worker", "-m", "celery", "-A", "config", "worker", "--pool", "threads", "--concurrency", "4",
                     "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat")
    quickstart.start("web", "manage.py", "runserver", f"127.0.0.1:{quickstart.port}", "--noreload")
    deadline = time.monotonic() + 30
    while socket.socket().connect_ex(("127.0.0.1", quickstart.port)) != 0:
        assert time.monotonic() < deadline, quickstart.logs()
        time.sleep(0.2)
    time.sleep(2)  # the worker's start-up dispatch (payouts_resume) has come and gone

    finished = []
    for n in (1, 2):  # the second within seconds of the first, after the worker listed the first
        created = call(quickstart, credentials, "POST", "/payout",
                       {"amount": 1_000 + n, "pixKeyType": "EMAIL", "pixKey": f"payee{n}@example.com",
                        "referenceId": f"quick-{n}"})
        body, seconds = wait_completed(quickstart, credentials, created["id"])
        assert seconds < QUICKLY, (n, seconds)
        finished.append(body)

    assert [{k: body[k] for k in ("amount", "status", "pixKeyType", "pixKey", "referenceId")} for body in finished] == [
        {"amount": 1_001, "status": "COMPLETED", "pixKeyType": "EMAIL", "pixKey": "payee1@example.com",
         "referenceId": "quick-1"},
        {"amount": 1_002, "status": "COMPLETED", "pixKeyType": "EMAIL", "pixKey": "payee2@example.com",
         "referenceId": "quick-2"},
    ]
    assert not list((quickstart.folder / "flags").glob("*"))  # the worker cleared the web process's flag
