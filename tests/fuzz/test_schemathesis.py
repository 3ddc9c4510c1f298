"""Schema fuzzing: schemathesis against the running service and its own /openapi.json (issue 7).

gunicorn serves the test database (as in tests/payments/payouts/test_payout_concurrency.py) to a KYC-approved merchant
with a funded test balance and a few objects of each kind; schemathesis then runs every operation of the schema through
all its phases (coverage, fuzzing, stateful) with every check: no 5xx, status codes, content types, headers and bodies
as documented, valid data accepted and invalid data refused, no operation that ignores authentication, no resource that
disappears after it was created. A finding is fixed in the code or in the schema, never by switching a check off.

`tests/fuzz/hooks.py` supplies what the schema can only describe (check digits, a card token, a cursor, ...).
The run is deterministic for the data it draws (a fixed seed); the object ids and timestamps the service makes are not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests
from django.conf import settings

from config.celery import app as celery_app
from payments.ledger import services as ledger
from payments.models import CardToken
from payments.reference import glossary as reference
from tests.conftest import broker_redis, subprocess_database_url
from tests.factories import ApiKeyFactory, MerchantFactory, UserFactory
from tests.payments.payouts.test_payout_concurrency import Client, Server

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 20261120
EXAMPLES_PER_OPERATION = 40
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")

CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
ADDRESS = {"street": "Avenida Paulista", "number": "1000", "zipCode": "01310-100", "city": "São Paulo", "state": "SP"}
ITEMS = [{"title": "Caneca", "quantity": 1, "unitPrice": 10_000}]


@pytest.fixture(scope="module")
def server(django_db_setup):
    environment = {
        **os.environ,
        "DATABASE_URL": subprocess_database_url(),
        "CACHE_URL": os.environ.get("CACHE_URL", ""),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "SECRET_KEY": settings.SECRET_KEY,
        "API_KEY_DIGEST_KEY": settings.API_KEY_DIGEST_KEY,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
        # Thousands of requests from one key and one address, a good part of them without valid credentials: the
        # limits are tested elsewhere, and here they would only turn the run into 429s.
        "API_RATE_LIMIT": "100000",
        "API_AUTH_FAILURES_PER_MINUTE": "1000000",
    }
    broker = broker_redis()
    broker.flushdb()  # the tasks the requests enqueue are not under test: no worker runs them
    running = Server(environment)
    try:
        running.wait_healthy()
        yield running
    finally:
        running.stop()
        celery_app.control.purge()
        broker.flushdb()


def _created(response: requests.Response) -> dict:
    assert response.status_code == 201, response.text
    return response.json()


def _objects(client: Client) -> dict:
    """A charge of each method, two payouts and the events and statement lines they make, through the API: ids for
    the path parameters, a card token, and a second page (so a cursor) in every list."""
    base = {"amount": 10_000, "payerIp": "203.0.113.9", "isPhysicalProduct": False, "customer": CUSTOMER,
            "items": ITEMS}
    card = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12",
            "expirationYear": "2099", "cvv": "123"}
    payins = [
        _created(client.post("/payin", {**base, "paymentMethod": "PIX", "referenceId": "fuzz-pix"})),
        _created(client.post("/payin", {**base, "paymentMethod": "CREDIT_CARD", "referenceId": "fuzz-card",
                                        "card": card})),
        _created(client.post("/payin", {**base, "paymentMethod": "BOLETO", "referenceId": "fuzz-boleto",
                                        "customer": {**CUSTOMER, "phone": "11987654321", "address": ADDRESS}})),
    ]
    # The reference's examples (sent as they are by the examples phase) charge a card saved under a documented token.
    saved = CardToken.objects.get(token=payins[1]["card"]["token"])
    saved.token = reference.CARD_TOKEN
    saved.save(force_insert=True)
    payouts = [_created(client.post("/payout", {"amount": 1_000, "pixKey": str(uuid.uuid4()), "pixKeyType": "EVP",
                                                "referenceId": f"fuzz-payout-{n}"})) for n in range(2)]
    for n in range(2):  # two refunds of the card charge: its refund list has a second page too
        _created(client.post(f"/payin/{payins[1]['id']}/refunds", {"amount": 1_000, "reason": f"fuzz-{n}"}))
    # Two unmatched payments (a Pix naming no charge) and two disputes (the card charge, the Pix once paid).
    unmatched = [_created(client.post("/sandbox/pix/receive", {"amount": 500 + n})) for n in range(2)]
    assert client.post(f"/sandbox/payin/{payins[0]['id']}/simulate", {"action": "pay"}).status_code == 200
    for payin, action in ((payins[1], "chargeback"), (payins[0], "med")):
        assert client.post(f"/sandbox/payin/{payin['id']}/simulate", {"action": action}).status_code == 200
    disputes = client.get("/disputes").json()["data"]
    assert len(disputes) == 2, disputes
    cursors = {}
    lists = {"/payin": "/payin", "/payout": "/payout", "/events": "/events",
             "/balance/transactions": "/balance/transactions",
             "/payin/{payin_id}/refunds": f"/payin/{payins[1]['id']}/refunds",
             "/unmatched-payments": "/unmatched-payments", "/disputes": "/disputes"}
    for path, url in lists.items():
        page = client.get(f"{url}?limit=1").json()
        assert page["nextCursor"], (path, page)
        cursors[path] = page["nextCursor"]
    events = client.get("/events?limit=100").json()["data"]
    return {
        "FUZZ_CARD_TOKEN": payins[1]["card"]["token"],
        "FUZZ_CURSORS": cursors,
        "FUZZ_IDS": {"payin_id": [p["id"] for p in payins], "payout_id": [p["id"] for p in payouts],
                     "event_id": [e["id"] for e in events], "unmatched_id": [u["id"] for u in unmatched],
                     "dispute_id": [d["id"] for d in disputes]},
    }


@pytest.fixture
def merchant(transactional_db):
    merchant = MerchantFactory()  # KYC approved
    merchant.payout_daily_max = 10**12  # the day's total is not under test; each payout's maximum is
    merchant.save()
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=10**11, reason="fuzz: fund the balance",
                               staff=UserFactory(is_staff=True))
    return merchant


def test_every_operation_conforms_to_the_openapi_schema_under_fuzzing(server, merchant):
    api_key, secret = ApiKeyFactory.with_secret(merchant=merchant, livemode=False)
    objects = _objects(Client(server, api_key.public_key, secret))
    environment = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.fuzz.hooks", "FUZZ_BASE_URL": server.url,
                   "FUZZ_AUTH": f"{api_key.public_key}:{secret}",
                   **{name: value if isinstance(value, str) else json.dumps(value) for name, value in objects.items()}}

    result = subprocess.run(
        [str(SCHEMATHESIS), "--config-file", str(Path(__file__).with_name("schemathesis.toml")),
         "run", f"{server.url}/openapi.json",
         "--checks", "all", "--max-examples", str(EXAMPLES_PER_OPERATION), "--seed", str(SEED),
         "--auth", f"{api_key.public_key}:{secret}", "--workers", "1", "--request-timeout", "30",
         "--generation-database", "none", "--no-color"],
        cwd=settings.BASE_DIR, env=environment, capture_output=True, text=True, timeout=900)

    print(result.stdout[-3000:])
    assert result.returncode == 0, f"{result.stdout[-30000:]}\n{result.stderr[-5000:]}\n--- server:\n{server.logs()}"
