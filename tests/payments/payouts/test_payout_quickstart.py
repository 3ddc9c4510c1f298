"""The quick start itself (`make run`): `tools/localservices.py` starts an embedded PostgreSQL and Redis for a fresh
LOCAL_DIR, `manage.py runlocal` migrates, seeds the demo merchant and runs web, worker and scheduler, and two payouts a
second apart both complete within seconds. Once, a payout made within a minute of another waited for the
reconciliation job (issue 16): the dispatch flag the web process sets must be one the worker can clear.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow

# Well under the reconciliation job's interval (20 s).
QUICKLY = 10.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class QuickStart:
    """`make run`'s command, on a LOCAL_DIR of its own and with no service URL: everything embedded."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        inherited = {k: v for k, v in os.environ.items()
                     if k not in ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL", "SECRET_KEY")}
        self.environment = {**inherited, "LOCAL_DIR": str(folder), "SIMULATOR_AUTO_CONFIRM_SECONDS": "1",
                            "LOG_LEVEL": "WARNING", "PORT": str(self.port)}
        self.log = folder / "run.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "tools/localservices.py", sys.executable, "manage.py", "runlocal"],
                env=self.environment, cwd=settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT)

    def manage(self, *args: str) -> str:
        """A management command beside the running service: the settings' defaults are its embedded servers."""
        return subprocess.run([sys.executable, "manage.py", *args], env={**self.environment, "DEBUG": "true"},
                              cwd=settings.BASE_DIR, check=True, capture_output=True, text=True).stdout

    def stop(self) -> int | None:
        if self.process is None:
            return None
        self.process.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout=10)

    def logs(self) -> str:
        lines = [line for line in self.log.read_text(errors="replace").splitlines() if '"GET /payout/' not in line]
        return "\n".join(lines[-60:])


@pytest.fixture
def quickstart():
    folder = Path(tempfile.mkdtemp(prefix="qs-"))  # short: the servers' Unix sockets live in it
    running = QuickStart(folder)
    try:
        yield running
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


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


def test_make_runs_command_serves_payouts_that_complete_quickly_and_stops_its_servers(quickstart):
    quickstart.start()
    deadline = time.monotonic() + 90  # a first run initialises PostgreSQL's data directory
    while socket.socket().connect_ex(("127.0.0.1", quickstart.port)) != 0:
        assert time.monotonic() < deadline and quickstart.process.poll() is None, quickstart.logs()
        time.sleep(0.3)
    demo = json.loads(quickstart.manage("seed_demo", "--json").strip().splitlines()[-1])  # finds the seeded one
    credentials = "Basic " + base64.b64encode(f"{demo['publicKey']}:{demo['secretKey']}".encode()).decode()
    time.sleep(2)  # the worker's start-up dispatch (payouts_resume) has come and gone

    finished = []
    for n in (1, 2):  # the second within seconds of the first, after the worker listed the first
        created = call(quickstart, credentials, "POST", "/payout",
                       {"amount": 1_000 + n, "pixKeyType": "EMAIL", "pixKey": f"payee{n}@example.com",
                        "referenceId": f"quick-{n}"})
        body, seconds = wait_completed(quickstart, credentials, created["id"])
        assert seconds < QUICKLY, (n, seconds)
        finished.append(body)
    exit_code = quickstart.stop()

    assert [{k: body[k] for k in ("amount", "status", "pixKeyType", "pixKey", "referenceId")} for body in finished] == [
        {"amount": 1_001, "status": "COMPLETED", "pixKeyType": "EMAIL", "pixKey": "payee1@example.com",
         "referenceId": "quick-1"},
        {"amount": 1_002, "status": "COMPLETED", "pixKeyType": "EMAIL", "pixKey": "payee2@example.com",
         "referenceId": "quick-2"},
    ]
    assert exit_code == 0, quickstart.logs()
    # The e-mails it sends are files, and the banner says where (issue 37, item 19).
    assert f"E-mails:    written to {quickstart.folder.resolve() / 'mail'}/" in quickstart.log.read_text()
    assert not (quickstart.folder / "postgres" / "postmaster.pid").exists()  # Ctrl-C stopped PostgreSQL too
