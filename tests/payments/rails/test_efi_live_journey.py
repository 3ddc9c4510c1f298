"""Live mode on the Efí rail end to end, with real processes: gunicorn serving the API and Efí's notification route,
a Celery worker sending payouts, and the management commands an operator runs, all on the pytest-django PostgreSQL
database and Redis, talking over mutual TLS to the fake Efí of `efi_fake` (which runs in this process and notifies
the web process over real HTTP).

The journey: `rail_setup` registers the notification URL; a charge is paid at the bank and partly refunded; a payout
completes and one fails; a payout whose send the bank answers 500 stays PROCESSING until reconciliation asks under
the same idEnvio (never sending it again); a forged notification moves nothing; a notification Efí never delivered is
found by `rail_reconcile`; and `ledger_check` passes on the result.
"""

from __future__ import annotations

import base64
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings

from config.celery import app as celery_app
from payments.payouts.sending import payouts_reconcile
from tests.conftest import broker_redis, subprocess_database_url
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.payins.test_payin_api import payin_body
from tests.payments.payouts.test_payout_api import CPF, fund
from tests.payments.rails.conftest import efi_settings
from tests.payments.rails.efi_fake import DEVOLVIDO, NAO_REALIZADO, PAYER_ISPB, REALIZADO, FakeEfi

pytestmark = pytest.mark.django_db(transaction=True)

PIX_KEY = "journey-key@example.com"
FUNDED = 100_000
POLL_SECONDS = 15.0
LOG_TAIL_LINES = 40


# --- Processes -------------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def gunicorn_options() -> list[str]:
    """gunicorn 27 opens a control socket at one path per user (~/.gunicorn/gunicorn.ctl) that every server on the
    machine would share: none for this one, where the option exists."""
    from gunicorn.config import KNOWN_SETTINGS

    if any(setting.name == "control_socket_disable" for setting in KNOWN_SETTINGS):
        return ["--no-control-socket"]
    return []


def database_url() -> str:
    """The pytest-django test database (created by now) as the subprocesses' DATABASE_URL."""
    return subprocess_database_url()


@dataclass
class Stack:
    """The web process and the worker, run as their own process groups, with their logs in `directory`."""

    environment: dict[str, str]
    directory: Path
    base_url: str
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def spawn(self, name: str, *arguments: str) -> None:
        with open(self.directory / f"{name}.log", "ab") as log:  # the child keeps its own descriptor
            self.processes[name] = subprocess.Popen(
                [sys.executable, *arguments], env=self.environment, cwd=django_settings.BASE_DIR, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)

    def logs(self) -> str:
        """The last lines of every process's log, to make a failure readable."""
        parts = []
        for path in sorted(self.directory.glob("*.log")):
            lines = path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
            parts.append(f"--- {path.name} (last {len(lines)} lines) ---\n" + "\n".join(lines))
        exited = {name: p.returncode for name, p in self.processes.items() if p.poll() is not None}
        return "\n".join(parts) + (f"\n--- exited: {exited}" if exited else "")

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(f"{name} exited with {process.returncode}\n{self.logs()}")

    def wait_until_serving(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                if requests.get(f"{self.base_url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the web process did not answer /health within {timeout} s\n{self.logs()}")

    def manage(self, *arguments: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """`python manage.py ...` with the processes' environment, as an operator runs it on the machine."""
        return subprocess.run([sys.executable, "manage.py", *arguments], env=self.environment,
                              cwd=django_settings.BASE_DIR, capture_output=True, text=True, timeout=timeout,
                              check=False)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture
def fake(certificates) -> Iterator[FakeEfi]:
    """The fake Efí, notifying over real HTTP (its default transport) whatever URL `rail_setup` registers."""
    running = FakeEfi(certificates, pix_key=PIX_KEY).start()
    try:
        yield running
    finally:
        running.stop()
    assert running.errors == [], running.errors  # the fake itself never broke


@pytest.fixture
def stack(fake, transactional_db, tmp_path) -> Iterator[Stack]:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CACHE_URL": os.environ.get("CACHE_URL", ""),
        "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
        "SECRET_KEY": django_settings.SECRET_KEY,  # API key digests made here must match there
        "API_KEY_DIGEST_KEY": django_settings.API_KEY_DIGEST_KEY,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "PUBLIC_BASE_URL": base_url,
        "PAYMENTS_RAIL": "efi",
        "EFI_BASE_URL": fake.url,
        "EFI_CLIENT_ID": fake.client_id,
        "EFI_CLIENT_SECRET": fake.client_secret,
        "EFI_CERT_FILE": str(fake.certificates.client_file),
        "EFI_CA_FILE": str(fake.certificates.ca_file),
        "EFI_TIMEOUT_SECONDS": "3",
        "EFI_WEBHOOK_SECRET": secrets.token_urlsafe(24),  # 32 URL-safe characters
        "PIX_KEY": fake.pix_key,
        "SIMULATOR_AUTO_CONFIRM_SECONDS": "1",  # the countdown before a worker asks about a pending send again
        "API_RATE_LIMIT": "1000000",
        "LOG_LEVEL": "WARNING",
        "CONN_MAX_AGE": "0",
    }
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    broker = broker_redis()
    broker.flushdb()
    running = Stack(environment=environment, directory=tmp_path, base_url=base_url)
    try:
        running.spawn("worker", "-m", "celery", "-A", "config", "worker", "--pool", "threads", "--concurrency", "4",
                      "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat")
        running.spawn("web", "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
                      "--workers", "2", "--timeout", "30", "--graceful-timeout", "2", *gunicorn_options())
        running.wait_until_serving()
        yield running
    finally:
        running.stop()
        celery_app.control.purge()
        broker.flushdb()


# --- The API over HTTP -----------------------------------------------------------------------------------------------
class Api:
    """A live key pair's view of the API through the web process."""

    def __init__(self, stack: Stack, public_key: str, secret: str):
        self.stack = stack
        self.session = requests.Session()
        self.session.headers["Authorization"] = "Basic " + base64.b64encode(f"{public_key}:{secret}".encode()).decode()

    def call(self, method: str, path: str, expected: int, body: dict | None = None) -> dict:
        response = self.session.request(method, self.stack.base_url + path, json=body, timeout=30)
        assert response.status_code == expected, (
            f"{method} {path}: {response.status_code} {response.text[:2000]}\n{self.stack.logs()}")
        return response.json()

    def get(self, path: str) -> dict:
        return self.call("GET", path, 200)

    def post(self, path: str, body: dict, expected: int = 201) -> dict:
        return self.call("POST", path, expected, body)

    def available(self) -> int:
        return self.get("/balance")["available"]


def wait_for(what: str, read: Callable[[], Any], done: Callable[[Any], bool], stack: Stack,
             timeout: float = POLL_SECONDS) -> Any:
    """Read until `done(value)`; on timeout fail with the last value and the processes' logs."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last: {value!r}\n{stack.logs()}")
        stack.check_alive()
        time.sleep(0.1)


def requests_to(fake: FakeEfi, method: str, path: str) -> list[dict]:
    return [entry for entry in list(fake.requests_log) if entry["method"] == method and entry["path"] == path]


def log_of(stack: Stack, name: str) -> str:
    return (stack.directory / f"{name}.log").read_text(errors="replace")


# --- The journey -----------------------------------------------------------------------------------------------------
@pytest.mark.slow  # gunicorn, a Celery worker and beat against the fake bank
def test_the_live_journey_through_efi_with_real_processes(stack, fake, settings):
    secret = stack.environment["EFI_WEBHOOK_SECRET"]
    notification_url = f"{stack.base_url}/rails/efi/webhook/{secret}?ignorar="
    merchant = MerchantFactory()
    api_key, api_secret = ApiKeyFactory.with_secret(merchant=merchant, livemode=True)
    fund(merchant, FUNDED, livemode=True)
    api = Api(stack, api_key.public_key, api_secret)
    fake.auto_settle_seconds = 0.5  # sends and devoluções settle by themselves, and the bank notifies

    # 1. The operator registers our notification URL for the platform's Pix key.
    setup = stack.manage("rail_setup")
    assert setup.returncode == 0, f"{setup.stdout}\n{setup.stderr}"
    assert setup.stdout == (f"registered {stack.base_url}/rails/efi/webhook/<EFI_WEBHOOK_SECRET>?ignorar= "
                            f"for Pix key {PIX_KEY}\n")
    assert secret not in setup.stdout + setup.stderr
    assert fake.webhooks[PIX_KEY]["webhookUrl"] == notification_url
    assert fake.webhook_skip_mtls_checking[PIX_KEY] == "true"
    assert api.available() == FUNDED

    # 2. A charge is a cob at the bank; paid there, the bank notifies us; a partial refund is a devolução.
    charge = api.post("/payin", payin_body("PIX", referenceId="journey-charge"))
    txid = charge["pix"]["txid"]
    assert (charge["status"], charge["livemode"]) == ("PENDING", True)
    assert charge["pix"]["qrcode"] == fake.cobs[txid]["pixCopiaECola"]
    e2eid = fake.pay(txid)
    assert fake.deliveries[-1]["url"] == notification_url + "/pix"
    assert fake.deliveries[-1]["status"] == 200, fake.deliveries[-1]
    wait_for("the charge to be PAID", lambda: api.get(f"/payin/{charge['id']}")["status"], lambda s: s == "PAID",
             stack)
    assert requests_to(fake, "GET", f"/v2/pix/{e2eid}")  # confirmed with the bank before the money moved
    available = FUNDED + charge["amount"] - charge["fee"]
    assert api.available() == available

    refund = api.post(f"/payin/{charge['id']}/refunds", {"amount": 2000})
    assert (refund["status"], refund["amount"]) == ("PENDING", 2000)
    available -= 2000
    assert api.available() == available  # held from the moment it is asked for
    refunds = wait_for("the refund to succeed", lambda: api.get(f"/payin/{charge['id']}/refunds")["data"],
                       lambda data: [r["status"] for r in data] == ["SUCCEEDED"], stack)
    assert refunds[0]["id"] == refund["id"]
    assert api.get(f"/payin/{charge['id']}")["status"] == "PARTIALLY_REFUNDED"
    assert fake.devolucoes[e2eid][refund["id"].replace("-", "")]["status"] == DEVOLVIDO
    assert api.available() == available

    # 3. Payouts: the worker sends each under its id; the bank settles and notifies.
    sent = api.post("/payout", {"amount": 1234, "pixKey": CPF, "pixKeyType": "CPF", "referenceId": "journey-ok"})
    assert sent["status"] == "PENDING"
    available -= sent["amount"] + sent["fee"]
    assert api.available() == available
    completed = wait_for("the payout to complete", lambda: api.get(f"/payout/{sent['id']}"),
                         lambda p: p["status"] == "COMPLETED", stack)
    id_envio = sent["id"].replace("-", "")
    assert [r["status"] for r in requests_to(fake, "PUT", f"/v3/gn/pix/{id_envio}")] == [201]
    assert fake.sends[id_envio]["status"] == REALIZADO
    assert completed["externalId"] == fake.sends[id_envio]["endToEndId"]
    assert api.available() == available

    refused = api.post("/payout", {"amount": 4321, "pixKey": "x@fail.example.com", "pixKeyType": "EMAIL",
                                   "referenceId": "journey-refused"})
    failed = wait_for("the payout to fail", lambda: api.get(f"/payout/{refused['id']}"),
                      lambda p: p["status"] == "FAILED", stack)
    assert failed["failureCode"] == "rejected_by_bank"
    assert fake.sends[refused["id"].replace("-", "")]["status"] == NAO_REALIZADO
    assert api.available() == available  # the money came back

    # 4. The bank makes a send, then answers 500: unknown outcome, so the payout stays PROCESSING until
    # reconciliation asks under the same idEnvio; it is never sent again.
    fake.auto_settle_seconds = None
    fake.fail_next("PUT", "/v3/gn/pix/", mode="after", status=500)
    log_length = len(fake.requests_log)
    midway = api.post("/payout", {"amount": 777, "pixKey": CPF, "pixKeyType": "CPF", "referenceId": "journey-500"})
    id_envio = midway["id"].replace("-", "")
    available -= midway["amount"] + midway["fee"]
    wait_for("the worker to get the 500",
             lambda: [r["status"] for r in requests_to(fake, "PUT", f"/v3/gn/pix/{id_envio}")],
             lambda statuses: statuses == [500], stack)
    wait_for("the worker to log the rail error", lambda: "payments.payout_rail_error" in log_of(stack, "worker"),
             bool, stack)
    assert api.get(f"/payout/{midway['id']}")["status"] == "PROCESSING"
    efi_settings(settings, fake)  # this process asks the same bank as the worker would
    settings.EFI_WEBHOOK_SECRET = secret
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 1

    assert payouts_reconcile(older_than=timedelta(0)) == 1  # the bank has it, still EM_PROCESSAMENTO
    assert api.get(f"/payout/{midway['id']}")["status"] == "PROCESSING"
    assert fake.settle() == 1
    wait_for("the payout to complete after reconciliation", lambda: api.get(f"/payout/{midway['id']}")["status"],
             lambda s: s == "COMPLETED", stack)
    assert fake.sends_created[id_envio] == 1
    puts = [r for r in fake.requests_log[log_length:] if r["method"] == "PUT" and r["path"].startswith("/v3/gn/pix/")]
    assert [r["path"] for r in puts] == [f"/v3/gn/pix/{id_envio}"] and fake.send_attempts[id_envio] == 1
    assert api.available() == available

    # 5. A notification naming a Pix the bank never saw moves nothing; one without our secret is refused.
    pending = api.post("/payin", payin_body("PIX", referenceId="journey-forged"))
    now = datetime.now(UTC)
    forged_e2eid = f"E{PAYER_ISPB}{now:%Y%m%d%H%M}{secrets.token_hex(6)[:11]}"
    forged = {"pix": [{"endToEndId": forged_e2eid, "txid": pending["pix"]["txid"], "valor": "50.00",
                       "horario": now.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "chave": PIX_KEY}]}
    answer = requests.post(f"{stack.base_url}/rails/efi/webhook/{secret}/pix", json=forged, timeout=30)
    assert (answer.status_code, answer.json()) == (200, {"confirmed": 0, "applied": 0}), stack.logs()
    assert [r["status"] for r in requests_to(fake, "GET", f"/v2/pix/{forged_e2eid}")] == [404]
    wrong = requests.post(f"{stack.base_url}/rails/efi/webhook/{secrets.token_urlsafe(24)}/pix", json=forged,
                          timeout=30)
    assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "permission_denied", wrong.text
    assert api.get(f"/payin/{pending['id']}")["status"] == "PENDING"
    assert api.available() == available

    # 6. A payment whose notification never arrived is found by rail_reconcile.
    lost = api.post("/payin", payin_body("PIX", referenceId="journey-lost"))
    fake.drop_notifications = True
    lost_e2eid = fake.pay(lost["pix"]["txid"])
    assert fake.deliveries[-1]["dropped"]
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        assert api.get(f"/payin/{lost['id']}")["status"] == "PENDING"
        time.sleep(0.2)
    reconciled = stack.manage("rail_reconcile")
    assert reconciled.returncode == 0, f"{reconciled.stdout}\n{reconciled.stderr}\n{stack.logs()}"
    assert "received=1" in reconciled.stdout.split(), reconciled.stdout
    paid = api.get(f"/payin/{lost['id']}")
    assert paid["status"] == "PAID", paid
    assert requests_to(fake, "GET", "/v2/pix")  # listed the Pix received
    available += lost["amount"] - lost["fee"]
    assert api.available() == available
    assert lost_e2eid in fake.received

    # 7. Every notification the bank delivered was taken; the books balance.
    assert [d["status"] for d in fake.deliveries if not d["dropped"]] == [200] * sum(
        not d["dropped"] for d in fake.deliveries), fake.deliveries
    check = stack.manage("ledger_check")
    assert check.returncode == 0, f"{check.stdout}\n{check.stderr}"
    stack.check_alive()
