"""Payouts under concurrency through the real HTTP stack (SPEC §4.3, §1.3, §5): gunicorn with several processes and
threads serving the test database, hit by hundreds of simultaneous requests.

Whatever the interleaving: the available balance never goes below zero, exactly as many payouts are accepted as the
balance pays for, an Idempotency-Key or a referenceId makes one payout whatever the number of racers, and the ledger
passes `ledger_check`.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.db.models import Sum

from config.celery import app as celery_app
from payments.ledger import selectors as ledger_selectors
from payments.ledger import services as ledger
from payments.management.commands.ledger_check import Command as LedgerCheck
from payments.models import AccountKind, LedgerAccount, LedgerEntry, LedgerTransaction, Payout, Refund, RefundStatus
from tests.conftest import broker_redis, run_in_threads, subprocess_database_url
from tests.factories import ApiKeyFactory, MerchantFactory, UserFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]  # real gunicorn or Celery processes

CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
TEST_CARD = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12",
             "expirationYear": "2099", "cvv": "123"}


# --- The server ------------------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """gunicorn serving the test database, started and stopped as a process group."""

    def __init__(self, environment: dict):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(tempfile.mkdtemp(prefix="gunicorn-test-")) / "gunicorn.log"
        log = open(self.log_path, "ab")  # closed when the test process ends
        self.process = subprocess.Popen(
            [str(Path(settings.BASE_DIR) / ".venv/bin/gunicorn"), "config.wsgi:application",
             "--bind", f"127.0.0.1:{self.port}", "--workers", "3", "--threads", "4", "--worker-class", "gthread",
             "--timeout", "60", "--graceful-timeout", "2", "--backlog", "1024"],
            env=environment, cwd=settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_healthy(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited with {self.process.returncode}:\n{self.logs()}")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise AssertionError(f"gunicorn did not become healthy:\n{self.logs()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]


@pytest.fixture(scope="module")
def server(django_db_setup):
    """One server for the module, on the test database (whose name is known once `django_db_setup` created it);
    the transactional tests commit their rows, so it sees them, and empty the tables after each test."""
    environment = {
        **os.environ,
        "DATABASE_URL": subprocess_database_url(),
        "CACHE_URL": os.environ.get("CACHE_URL", ""),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "SECRET_KEY": settings.SECRET_KEY,  # API key digests made here must match there
        "API_KEY_DIGEST_KEY": settings.API_KEY_DIGEST_KEY,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "API_RATE_LIMIT": "100000",
        "LOG_LEVEL": "WARNING",
    }
    broker = broker_redis()
    broker.flushdb()  # the payout tasks enqueued here are not under test: no worker runs them
    running = Server(environment)
    try:
        running.wait_healthy()
        yield running
    finally:
        running.stop()
        celery_app.control.purge()
        broker.flushdb()


class Client:
    """One key pair's view of the API, over real HTTP; safe to use from many threads (a connection per request)."""

    def __init__(self, server: Server, public_key: str, secret_key: str):
        self.url = server.url
        token = base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}"}

    def get(self, path: str) -> requests.Response:
        return requests.get(self.url + path, headers=self.headers, timeout=60)

    def post(self, path: str, body: dict, idempotency_key: str | None = None) -> requests.Response:
        headers = dict(self.headers)
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return requests.post(self.url + path, json=body, headers=headers, timeout=60)


@pytest.fixture
def merchant(transactional_db):
    merchant = MerchantFactory()
    # Round numbers: a charge's net is its amount (the payout fee is 0 by default).
    merchant.pix_fee_bps = merchant.card_fee_bps = merchant.card_fee_fixed = merchant.boleto_fee_fixed = 0
    merchant.payout_fee_fixed = 0
    merchant.save()
    return merchant


@pytest.fixture
def client(server, merchant) -> Client:
    api_key, secret = ApiKeyFactory.with_secret(merchant=merchant, livemode=False)
    return Client(server, api_key.public_key, secret)


# --- Helpers ---------------------------------------------------------------------------------------------------------
def fund(merchant, amount: int) -> None:
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=amount, reason="test: fund the balance",
                               staff=UserFactory(is_staff=True))


def payout_body(amount: int, reference: str, **extra) -> dict:
    return {"amount": amount, "pixKey": str(uuid.uuid4()), "pixKeyType": "EVP", "referenceId": reference, **extra}


def card_charge(client: Client, amount: int, reference: str) -> dict:
    body = {"paymentMethod": "CREDIT_CARD", "amount": amount, "referenceId": reference, "payerIp": "203.0.113.9",
            "isPhysicalProduct": False, "customer": CUSTOMER, "card": TEST_CARD,
            "items": [{"title": "Caneca", "quantity": 1, "unitPrice": amount}]}
    response = client.post("/payin", body)
    assert response.status_code == 201, response.text
    charge = response.json()
    assert charge["status"] == "PAID", charge
    return charge


def available(merchant) -> int:
    return ledger_selectors.balance_get(merchant=merchant, livemode=False).available


def available_entries(merchant) -> list[int]:
    account = LedgerAccount.objects.get(merchant=merchant, livemode=False, kind=AccountKind.AVAILABLE)
    return list(LedgerEntry.objects.filter(account=account).order_by("pk").values_list("balance_after", flat=True))


def error_of(response: requests.Response) -> dict:
    error = response.json()["error"]
    error.pop("requestId")
    return error


def statuses(responses: list) -> Counter:
    for response in responses:
        assert isinstance(response, requests.Response), response  # an exception in a thread, or a timeout
    return Counter(response.status_code for response in responses)


INSUFFICIENT = {"type": "invalid_request_error", "code": "insufficient_balance", "message": "Insufficient balance",
                "param": None, "details": []}


class BalanceWatcher:
    """Reads GET /balance in a loop while a race runs, and keeps the lowest `available` it saw."""

    def __init__(self, client: Client):
        self.client = client
        self.seen: list[int] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                response = self.client.get("/balance")
            except requests.RequestException as exc:
                self.failures.append(repr(exc))
                continue
            if response.status_code != 200:
                self.failures.append(f"{response.status_code} {response.text[:200]}")
                continue
            self.seen.append(response.json()["available"])

    def __enter__(self) -> BalanceWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


# --- Tests -----------------------------------------------------------------------------------------------------------
def test_200_simultaneous_payouts_never_overdraw_a_balance_of_10000(client, merchant, server):
    fund(merchant, 10_000)

    with BalanceWatcher(client) as watcher:
        responses = run_in_threads(200, lambda i: client.post("/payout", payout_body(70, f"race-{i}")))

    assert statuses(responses) == {201: 142, 400: 58}, server.logs()
    assert all(error_of(r) == INSUFFICIENT for r in responses if r.status_code == 400)
    created = [r.json() for r in responses if r.status_code == 201]
    assert {(p["status"], p["amount"], p["fee"]) for p in created} == {("PENDING", 70, 0)}
    balance = client.get("/balance").json()
    assert balance == {"available": 60, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}
    assert Payout.objects.filter(merchant=merchant).count() == 142
    assert {p["id"] for p in created} == {str(pk) for pk in Payout.objects.values_list("pk", flat=True)}
    assert LedgerTransaction.objects.filter(merchant=merchant, object_type="payout").count() == 142
    assert min(available_entries(merchant)) >= 0
    assert watcher.failures == [] and watcher.seen and min(watcher.seen) >= 0
    assert LedgerCheck().inspect()[0] == []


def test_40_simultaneous_payouts_with_one_idempotency_key_make_one_payout(client, merchant, server):
    fund(merchant, 10_000)
    body = payout_body(1_000, "same-key")

    responses = run_in_threads(40, lambda i: client.post("/payout", body, idempotency_key="payout-key-1"))

    counts = statuses(responses)
    print(f"one Idempotency-Key, 40 racers: {dict(counts)}")
    assert set(counts) <= {201, 409}, (counts, server.logs())
    assert counts[201] >= 1
    created = [r for r in responses if r.status_code == 201]
    assert len({r.json()["id"] for r in created}) == 1
    assert all(r.json() == created[0].json() for r in created)  # a replay is the stored body (jsonb: key order aside)
    assert sum(r.headers.get("Idempotent-Replayed") != "true" for r in created) == 1
    assert all(r.headers.get("Idempotent-Replayed") in (None, "true") for r in created)
    in_use = [error_of(r) for r in responses if r.status_code == 409]
    assert all(e["code"] == "idempotency_key_in_use" and e["type"] == "conflict" for e in in_use), in_use
    payout = Payout.objects.get(merchant=merchant)
    assert str(payout.pk) == created[0].json()["id"]
    assert LedgerTransaction.objects.filter(merchant=merchant, object_type="payout").count() == 1
    assert available(merchant) == 9_000
    replay = client.post("/payout", body, idempotency_key="payout-key-1")
    assert (replay.status_code, replay.headers["Idempotent-Replayed"], replay.json()["id"]) == (
        201, "true", str(payout.pk))
    assert LedgerCheck().inspect()[0] == []


def test_payouts_racing_refunds_on_one_balance_never_take_it_below_zero(client, merchant, server):
    charges = [card_charge(client, 10_000, "order-big")] + [card_charge(client, 3_000, f"order-{n}")
                                                             for n in range(3)]
    start = available(merchant)
    assert start == 19_000
    # 30 payouts of 700 (21,000) and 25 refunds of 500 (12,500): together almost twice the balance.
    work = [("payout", 700, None)] * 30 + [("refund", 500, charges[0]["id"])] * 10
    work += [("refund", 500, charge["id"]) for charge in charges[1:] for _ in range(5)]

    def fire(i: int) -> requests.Response:
        kind, amount, charge_id = work[i]
        if kind == "payout":
            return client.post("/payout", payout_body(amount, f"race-{i}"))
        return client.post(f"/payin/{charge_id}/refunds", {"amount": amount, "reason": "race"})

    with BalanceWatcher(client) as watcher:
        responses = run_in_threads(len(work), fire)

    counts = statuses(responses)
    assert set(counts) <= {201, 400}, (counts, server.logs())
    assert all(error_of(r) == INSUFFICIENT for r in responses if r.status_code == 400)
    paid_out = sum(amount for (kind, amount, _), r in zip(work, responses, strict=True)
                   if kind == "payout" and r.status_code == 201)
    refunded = sum(amount for (kind, amount, _), r in zip(work, responses, strict=True)
                   if kind == "refund" and r.status_code == 201)
    end = available(merchant)
    print(f"payouts+refunds race: {counts}, paid out {paid_out}, refunded {refunded}, left {end}, "
          f"lowest balance read {min(watcher.seen)} over {len(watcher.seen)} reads")
    assert counts[400] >= 1  # the demand exceeded the balance
    assert 0 <= end < 700  # and whatever was refused, the balance could not have paid for it
    assert start - end == paid_out + refunded
    assert Payout.objects.filter(merchant=merchant).aggregate(t=Sum("amount"))["t"] == paid_out
    assert Refund.objects.filter(merchant=merchant, status=RefundStatus.SUCCEEDED).aggregate(
        t=Sum("amount"))["t"] == refunded
    assert min(available_entries(merchant)) >= 0
    assert watcher.failures == [] and watcher.seen and min(watcher.seen) >= 0
    assert client.get("/balance").json()["available"] == end
    assert LedgerCheck().inspect()[0] == []


def test_50_simultaneous_payouts_with_one_reference_id_make_one_payout(client, merchant, server):
    fund(merchant, 100_000)

    responses = run_in_threads(50, lambda i: client.post("/payout", payout_body(100, "invoice-42"),
                                                         idempotency_key=f"key-{i}"))

    assert statuses(responses) == {201: 1, 409: 49}, server.logs()
    created = next(r.json() for r in responses if r.status_code == 201)
    for response in responses:
        if response.status_code == 409:
            assert error_of(response) == {
                "type": "conflict", "code": "duplicate_reference_id",
                "message": "A payout with this referenceId already exists", "param": "referenceId",
                "details": [{"param": "referenceId", "code": "duplicate_reference_id",
                             "message": "A payout with this referenceId already exists.",
                             "existingId": created["id"]}]}
    assert list(Payout.objects.filter(merchant=merchant).values_list("pk", flat=True)) == [uuid.UUID(created["id"])]
    assert LedgerTransaction.objects.filter(merchant=merchant, object_type="payout").count() == 1
    assert available(merchant) == 100_000 - 100
    assert LedgerCheck().inspect()[0] == []


def test_payouts_racing_cancels_on_one_balance_never_take_it_below_zero(client, merchant, server):
    fund(merchant, 10_000)
    pending = [client.post("/payout", payout_body(200, f"early-{n}")).json()["id"] for n in range(40)]
    assert available(merchant) == 2_000
    # 40 cancels give back 8,000 while 40 new payouts of 250 ask for 10,000.

    def fire(i: int) -> requests.Response:
        if i % 2:
            return client.post(f"/payout/{pending[i // 2]}/cancel", {})
        return client.post("/payout", payout_body(250, f"late-{i}"))

    with BalanceWatcher(client) as watcher:
        responses = run_in_threads(80, fire)

    cancels, creations = responses[1::2], responses[0::2]
    assert statuses(cancels) == {200: 40}, server.logs()
    assert {r.json()["status"] for r in cancels} == {"CANCELED"}
    counts = statuses(creations)
    assert set(counts) <= {201, 400}, (counts, server.logs())
    assert all(error_of(r) == INSUFFICIENT for r in creations if r.status_code == 400)
    assert available(merchant) == 10_000 - 250 * counts[201]
    assert Payout.objects.filter(merchant=merchant, status="PENDING").aggregate(t=Sum("amount"))["t"] == (
        250 * counts[201])
    assert min(available_entries(merchant)) >= 0
    assert watcher.failures == [] and watcher.seen and min(watcher.seen) >= 0
    assert LedgerCheck().inspect()[0] == []
