"""Issue 38 (g): live cards and bolix end to end with real processes: gunicorn serving the API and the Charges API's
notification route, a Celery worker, and the operator's commands, on the test database, against the fake Charges API
of `efi_charges_fake` (in this process), whose form-POST notifications reach the web process over real HTTP.

The journey: a card paid in 3 installments; a refused card; a card whose /pay answer is lost (and its notifications
too) resolved once by `rail_reconcile` without a second /pay; a bolix paid by Pix then by barcode (one PAID, one
DUPLICATE held); a partial refund confirmed by Efí's notification; a chargeback won and one lost; `ledger_check` clean.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.conf import settings as django_settings

from config.celery import app as celery_app
from payments.models import Payin
from tests.conftest import broker_redis
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.payins.test_payin_api import ADDRESS_IN, payin_body
from tests.payments.payouts.test_payout_api import fund
from tests.payments.rails.conftest import NO_PIX_API
from tests.payments.rails.efi_charges_fake import FakeEfiCharges
from tests.payments.rails.test_efi_live_journey import Api, Stack, database_url, free_port, gunicorn_options, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FUNDED = 50_000
CARD_FEE = 1197 + 39  # 3.99% of R$ 300.00, + 39
BOLETO_FEE = 349


@pytest.fixture
def fake(certificates) -> Iterator[FakeEfiCharges]:
    running = FakeEfiCharges(certificates).start()  # notifies over real HTTP (its default transport)
    try:
        yield running
    finally:
        running.stop()
    assert running.errors == [], running.errors


@pytest.fixture
def stack(fake, transactional_db, tmp_path) -> Iterator[Stack]:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CACHE_URL": os.environ.get("CACHE_URL", ""),
        "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
        "SECRET_KEY": django_settings.SECRET_KEY,
        "API_KEY_DIGEST_KEY": django_settings.API_KEY_DIGEST_KEY,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "PUBLIC_BASE_URL": base_url,
        "PAYMENTS_RAIL": "efi",
        "EFI_BASE_URL": NO_PIX_API,  # the Pix API is not part of this journey
        "EFI_CHARGES_BASE_URL": fake.url,
        "EFI_CLIENT_ID": fake.client_id,
        "EFI_CLIENT_SECRET": fake.client_secret,
        "EFI_CA_FILE": str(fake.certificates.ca_file),
        "EFI_PAYEE_CODE": "journey-payee-code",
        "EFI_TIMEOUT_SECONDS": "3",
        "EFI_WEBHOOK_SECRET": secrets.token_urlsafe(24),
        "CARD_SETTLEMENT_DAYS": "0",  # card money available at once: the refund and the chargebacks need it
        "BOLETO_FINE_BPS": "200",
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


def card(token: str, *, installments: int = 1, reference: str = "journey-card") -> dict:
    body = payin_body("CREDIT_CARD", amount=30_000, referenceId=reference,
                      items=[{"title": "Bicicleta", "quantity": 1, "unitPrice": 30_000}])
    body["customer"]["address"] = dict(ADDRESS_IN)
    body["card"] = {"token": token, "installments": installments}
    return body


def charge_id(charge: dict) -> int:
    return Payin.objects.get(pk=charge["id"]).rail_charge_id


@pytest.mark.slow  # gunicorn and a Celery worker against the fake Charges API
def test_live_cards_and_bolix_through_efi_with_real_processes(stack, fake):
    merchant = MerchantFactory()
    key, secret = ApiKeyFactory.with_secret(merchant=merchant, livemode=True)
    fund(merchant, FUNDED, livemode=True)
    api = Api(stack, key.public_key, secret)
    available = FUNDED

    # 1. A card in 3 installments: Efí's charge, then /pay with the browser's token; Efí's notifications agree.
    paid = api.post("/payin", card(fake.card_token(outcome="paid"), installments=3))
    assert (paid["status"], paid["card"]["installments"], paid["card"]["installmentValue"]) == ("PAID", 3, 10_000)
    available += 30_000 - CARD_FEE
    assert api.available() == available
    assert fake.pays[charge_id(paid)] == 1

    # 2. A refused card: FAILED with Efí's reason; no money.
    refused = api.post("/payin", card(fake.card_token(outcome="unpaid", reason="Saldo insuficiente."),
                                      reference="journey-refused"))
    assert (refused["status"], refused["failureCode"], refused["failureMessage"]) == (
        "FAILED", "insufficient_funds", "Saldo insuficiente.")
    assert api.available() == available

    # 3. /pay done at Efí, its answer lost and every notification with it: PROCESSING (202) until reconciliation
    # reads the charge; /pay is never asked again.
    fake.drop_notifications = True
    fake.fail_next("POST", "/v1/charge/", mode="drop")
    lost = api.call("POST", "/payin", 202, card(fake.card_token(outcome="paid"), reference="journey-lost"))
    assert lost["status"] == "PROCESSING"
    Payin.objects.filter(pk=lost["id"]).update(created_at=Payin.objects.get(pk=lost["id"]).created_at
                                               - timedelta(minutes=5))
    for _ in range(2):
        reconciled = stack.manage("rail_reconcile")
        assert reconciled.returncode == 0, f"{reconciled.stdout}\n{reconciled.stderr}\n{stack.logs()}"
    assert api.get(f"/payin/{lost['id']}")["status"] == "PAID"
    assert fake.pays[charge_id(lost)] == 1
    available += 30_000 - CARD_FEE
    assert api.available() == available
    fake.drop_notifications = False

    # 4. A bolix paid by Pix, then again by its barcode: one PAID, one DUPLICATE held for the merchant.
    bolix = api.post("/payin", payin_body("BOLETO", amount=10_000, referenceId="journey-bolix"))
    assert bolix["boleto"]["pix"]["qrcode"] and bolix["boleto"]["pdfUrl"]
    fake.pay_billet(charge_id(bolix), by="pix")
    fake.pay_billet(charge_id(bolix), by="barcode")
    assert [d["status"] for d in fake.deliveries[-2:]] == [200, 200], fake.deliveries[-2:]
    assert api.get(f"/payin/{bolix['id']}")["boleto"]["paidAmount"] == 10_000
    unmatched = api.get("/unmatched-payments")["data"]
    assert [(u["kind"], u["amount"], u["status"]) for u in unmatched] == [("DUPLICATE", 10_000, "HELD")]
    available += 10_000 - BOLETO_FEE
    assert api.available() == available

    # 5. A partial refund of the first card: PENDING until Efí's notification confirms it.
    refund = api.post(f"/payin/{paid['id']}/refunds", {"amount": 5_000})
    assert refund["status"] in ("PENDING", "SUCCEEDED")  # Efí notifies as it answers
    available -= 5_000
    wait_for("the refund to be confirmed", lambda: api.get(f"/payin/{paid['id']}/refunds")["data"][0]["status"],
             lambda status: status == "SUCCEEDED", stack)
    assert api.get(f"/payin/{paid['id']}")["status"] == "PARTIALLY_REFUNDED"
    assert api.available() == available

    # 6. Chargebacks: one won, one lost, each following Efí's status.
    won = api.post("/payin", card(fake.card_token(outcome="paid"), reference="journey-won"))
    lost_case = api.post("/payin", card(fake.card_token(outcome="paid"), reference="journey-lost-case"))
    available += 2 * (30_000 - CARD_FEE)
    for charge, outcome in ((won, True), (lost_case, False)):
        fake.contest(charge_id(charge))
        fake.chargeback(charge_id(charge), won=outcome)
    disputes = {d["payinId"]: d["status"] for d in api.get("/disputes")["data"]}
    assert disputes == {won["id"]: "WON", lost_case["id"]: "LOST"}
    assert api.get(f"/payin/{lost_case['id']}")["status"] == "CHARGEBACK"
    available -= 30_000
    assert api.available() == available

    # 7. Every notification Efí delivered was taken; the books balance.
    assert all(d["status"] == 200 for d in fake.deliveries if not d["dropped"]), fake.deliveries
    check = stack.manage("ledger_check")
    assert check.returncode == 0, f"{check.stdout}\n{check.stderr}"
    stack.check_alive()
