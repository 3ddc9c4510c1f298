"""POST /payout, GET /payout/{id} and GET /payout through the HTTP API (SPEC §1, §4, §5, §6): whole response bodies
for each Pix key type and its `payout.created` event, the balance rule to the cent, the per-payout and daily limits
at their boundaries, referenceId uniqueness, Idempotency-Key, lists, validation, webhooks, and that a refused request
leaves nothing behind.

The helpers at the top are shared by `test_payout_lifecycle.py` (processing, failures, cancel, sandbox, reconcile).
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest
from django.utils import timezone

from accounts.models import AccountEvent
from core import cache as shared_cache
from payments.ledger.services import adjustment_create
from payments.models import LedgerAccount, LedgerEntry, LedgerTransaction, Payout, SimulatorOperation
from payments.payouts import dispatch as payout_dispatch
from payments.payouts import sending
from payments.payouts import tasks as payout_tasks
from tests.factories import ApiKeyFactory, MerchantFactory, UserFactory
from tests.payments.helpers import ISO_MS_Z, UUID, envelope, events_of, statement
from webhooks.models import Delivery, Event

# --- Formats and constants -------------------------------------------------------------------------------------------
ISPB = "60746948"  # not the default 00000000: the setting must reach externalId
PUBLIC_IP = "93.184.216.34"
CPF = "52998224725"
WEBHOOK_URL = "https://hooks.example.com/payouts"

# 2025-11-21 01:30 UTC is still 2025-11-20 (22:30) in São Paulo: the daily limit follows São Paulo's calendar.
NOW = datetime(2025, 11, 21, 1, 30, 15, 123456, tzinfo=UTC)

FAILURE_MESSAGES = {
    "pix_key_not_found": "The Pix key does not exist.",
    "rejected_by_bank": "The receiving bank rejected the payout.",
}


# --- Setup shared with test_payout_lifecycle.py ----------------------------------------------------------------------
def payout_test_setup(settings, monkeypatch) -> list:
    """Settings every payout test relies on, webhook hosts that resolve to a public address without the network, and
    Celery messages captured instead of sent (returned: one tuple per message)."""
    settings.API_RATE_LIMIT = 1_000_000  # these tests send many requests a second with one key pair
    settings.PIX_ISPB = ISPB
    settings.FEE_PIX_BPS = 99
    settings.FEE_PAYOUT_FIXED = 0
    settings.PAYOUT_MAX_AMOUNT = 5_000_000
    settings.PAYOUT_DAILY_MAX = 20_000_000
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 2
    settings.SIMULATOR_LATENCY_SECONDS = 0
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    settings.WEBHOOKS_ALLOW_HTTP = False
    monkeypatch.setattr("webhooks.ssrf.resolve", lambda host, port: [PUBLIC_IP])
    sent: list = []
    monkeypatch.setattr(payout_tasks.payout_process, "delay", lambda **kwargs: sent.append(("payout_process", kwargs)))
    monkeypatch.setattr(payout_tasks.payouts_process, "delay",
                        lambda **kwargs: sent.append(("payouts_process", kwargs)))
    monkeypatch.setattr(payout_tasks.payouts_dispatch, "delay",
                        lambda **kwargs: sent.append(("payouts_dispatch", kwargs)))
    monkeypatch.setattr(payout_tasks.payouts_dispatch, "apply_async",
                        lambda kwargs, countdown: sent.append(("payouts_dispatch", kwargs, countdown)))
    monkeypatch.setattr(payout_tasks.payout_reconcile, "apply_async",
                        lambda kwargs, countdown: sent.append(("payout_reconcile", kwargs, countdown)))
    return sent


@pytest.fixture(autouse=True)
def queued(settings, monkeypatch) -> list:
    return payout_test_setup(settings, monkeypatch)


class Clock:
    """`django.utils.timezone.now`, frozen at `now` (freezegun is not installed)."""

    def __init__(self, now: datetime):
        self.now = now

    def advance(self, **delta) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    frozen = Clock(NOW)
    monkeypatch.setattr(timezone, "now", lambda: frozen.now)
    return frozen


@pytest.fixture
def live_api(api_client_for, merchant):
    """A live key pair of the `api` fixture's merchant (KYC approved)."""
    return api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))


@pytest.fixture
def other_merchant(db):
    return MerchantFactory()


@pytest.fixture
def other_api(api_client_for, other_merchant):
    """A test key pair of another merchant."""
    return api_client_for(*ApiKeyFactory.with_secret(merchant=other_merchant, livemode=False))


# --- Money in --------------------------------------------------------------------------------------------------------
def fund(merchant, amount: int, *, livemode: bool = False):
    """Credit exactly `amount` to the merchant's available balance (a staff adjustment); the adjustment."""
    return adjustment_create(merchant=merchant, livemode=livemode, amount=amount, reason="fund", staff=UserFactory())


def fund_by_payin(client, amount: int) -> dict:
    """A PIX charge of `amount`, paid by the payer (sandbox): its net amount becomes available. The paid charge."""
    created = client.post("/payin", {
        "paymentMethod": "PIX", "amount": amount, "referenceId": "order-1", "payerIp": "203.0.113.9",
        "isPhysicalProduct": False, "customer": {"name": "Ana", "document": CPF, "email": "ana@example.com"},
        "items": [{"title": "Caneca", "quantity": 1, "unitPrice": amount}]}, format="json")
    assert created.status_code == 201, created.content
    paid = client.post(f"/sandbox/payin/{created.json()['id']}/simulate", {"action": "pay"}, format="json")
    assert paid.status_code == 200, paid.content
    return paid.json()


# --- Calls -----------------------------------------------------------------------------------------------------------
def payout_body(**fields) -> dict:
    """A valid POST /payout body (a CPF key); `fields` replace or add top-level fields."""
    return {"amount": 5000, "pixKey": CPF, "pixKeyType": "CPF", "referenceId": "payout-1", **fields}


def post_payout(client, **fields):
    return client.post("/payout", payout_body(**fields), format="json")


def create(client, **fields) -> dict:
    """POST /payout that must succeed (201); the body."""
    response = post_payout(client, **fields)
    assert response.status_code == 201, response.content
    return response.json()


def get(client, payout_id: str) -> dict:
    response = client.get(f"/payout/{payout_id}")
    assert response.status_code == 200, response.content
    return response.json()


def balance(client) -> dict:
    response = client.get("/balance")
    assert response.status_code == 200, response.content
    return response.json()


def available(client) -> int:
    return balance(client)["available"]


def line(type: str, amount: int, balance_after: int, *, payout: dict, description: str) -> dict:
    """A statement line (SPEC §5) of a payout, without its id and createdAt."""
    return {"type": type, "amount": amount, "balanceAfter": balance_after, "balance": "available",
            "objectType": "payout", "objectId": payout["id"], "referenceId": payout["referenceId"],
            "description": description}


def funding_line(adjustment, balance_after: int) -> dict:
    return {"type": "adjustment", "amount": adjustment.amount, "balanceAfter": balance_after, "balance": "available",
            "objectType": "adjustment", "objectId": str(adjustment.pk), "referenceId": None, "description": "fund"}


def created_lines(payout: dict, available_before: int) -> list[dict]:
    """The statement lines of a payout's acceptance, newest first: `payout_fee` (if any) after `payout`."""
    after = available_before - payout["amount"]
    lines = [line("payout", -payout["amount"], after, payout=payout,
                  description=f"Pix payout to {payout['pixKeyType']} key")]
    if payout["fee"]:
        lines.insert(0, line("payout_fee", -payout["fee"], after - payout["fee"], payout=payout,
                             description=f"Pix payout to {payout['pixKeyType']} key"))
    return lines


def error(response, status: int, *, type: str, code: str, message: str, param: str | None = None,
          details: list | None = None) -> None:
    """The response is the whole SPEC §1.1 error body, with the response's own request id."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"type": type, "code": code, "message": message, "param": param,
                                         "details": details or [], "requestId": response["X-Request-Id"]}}


def not_found(response) -> None:
    error(response, 404, type="not_found", code="not_found", message="No such payout")


def invalid_state(response, message: str) -> None:
    error(response, 409, type="conflict", code="invalid_state", message=message)


def insufficient_balance(response) -> None:
    error(response, 400, type="invalid_request_error", code="insufficient_balance", message="Insufficient balance")


def validation(response, details: list[dict]) -> None:
    error(response, 400, type="invalid_request_error", code="validation_error",
          message="The request has invalid fields", param=details[0]["param"] if len(details) == 1 else None,
          details=details)


def footprint() -> dict:
    """Counts of everything a payout request can write."""
    return {"payouts": Payout.objects.count(), "movements": LedgerTransaction.objects.count(),
            "entries": LedgerEntry.objects.count(), "events": Event.objects.count(),
            "deliveries": Delivery.objects.count(), "rail": SimulatorOperation.objects.count()}


def ledger_balances(merchant, *, livemode: bool = False) -> dict[str, int]:
    """The balance of each of the merchant's ledger accounts of a mode."""
    return dict(LedgerAccount.objects.filter(merchant=merchant, livemode=livemode).values_list("kind", "balance"))


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- Expected bodies -------------------------------------------------------------------------------------------------
def assert_external_id(payout: dict) -> None:
    """The Pix end-to-end id: E + ISPB + yyyyMMddHHmm (UTC) of createdAt + 11 alphanumerics, 32 characters."""
    match = re.fullmatch(rf"E{ISPB}(\d{{12}})[A-Za-z0-9]{{11}}", payout["externalId"])
    assert match and len(payout["externalId"]) == 32, payout["externalId"]
    assert match.group(1) == parse_iso(payout["createdAt"]).strftime("%Y%m%d%H%M"), payout


def expected_payout(got: dict, *, amount: int = 5000, fee: int = 0, pix_key: str = CPF, pix_key_type: str = "CPF",
                    reference_id: str = "payout-1", status: str = "PENDING", livemode: bool = False,
                    beneficiary_name: str | None = None, beneficiary_document: str | None = None,
                    description: str = "", metadata: dict | None = None, completed: bool = False,
                    failure: str | None = None) -> dict:
    """The whole body of a payout. Generated values (id, externalId, timestamps) are checked for their format, then
    taken from `got`."""
    assert re.fullmatch(UUID, got["id"]), got["id"]
    assert_external_id(got)
    assert re.fullmatch(ISO_MS_Z, got["createdAt"]) and re.fullmatch(ISO_MS_Z, got["updatedAt"]), got
    assert got["createdAt"] <= got["updatedAt"]
    if status == "PENDING":
        assert got["updatedAt"] == got["createdAt"]
    if completed:
        assert re.fullmatch(ISO_MS_Z, got["completedAt"] or ""), got["completedAt"]
        assert got["createdAt"] <= got["completedAt"] <= got["updatedAt"]
    return {
        "id": got["id"], "status": status, "amount": amount, "fee": fee, "currency": "BRL", "pixKey": pix_key,
        "pixKeyType": pix_key_type, "referenceId": reference_id, "externalId": got["externalId"],
        "beneficiaryName": beneficiary_name, "beneficiaryDocument": beneficiary_document,
        "description": description, "metadata": metadata or {}, "livemode": livemode,
        "createdAt": got["createdAt"], "updatedAt": got["updatedAt"],
        "completedAt": got["completedAt"] if completed else None,
        "failureCode": failure, "failureMessage": FAILURE_MESSAGES[failure] if failure else None,
    }


# === 1. The 201 body, GET and payout.created =========================================================================
@pytest.mark.parametrize(("key_type", "sent", "canonical"), [
    ("CPF", "52998224725", "52998224725"),
    ("CNPJ", "11222333000181", "11222333000181"),
    ("CNPJ", "12ABC34501DE35", "12ABC34501DE35"),  # alphanumeric CNPJ (July 2026)
    ("EMAIL", "Ana.Souza@Example.com", "ana.souza@example.com"),
    ("PHONE", "+5511987654321", "+5511987654321"),
    ("PHONE", "5511987654321", "+5511987654321"),
    ("EVP", "123E4567-E89B-42D3-A456-426614174000", "123e4567-e89b-42d3-a456-426614174000"),
])
def test_create_returns_the_whole_payout_for_each_key_type(api, merchant, clock, key_type, sent, canonical):
    fund(merchant, 5000)

    response = post_payout(api, pixKeyType=key_type, pixKey=sent)

    assert response.status_code == 201, response.content
    assert response["Api-Version"] == "2026-11-20"
    got = response.json()
    assert got == expected_payout(got, pix_key=sent, pix_key_type=key_type)  # the key echoed as sent
    assert (got["createdAt"], got["updatedAt"]) == ("2025-11-21T01:30:15.123Z", "2025-11-21T01:30:15.123Z")
    assert got["externalId"][:21] == f"E{ISPB}202511210130"
    assert get(api, got["id"]) == got
    [event] = events_of(api, got["id"])
    assert event == envelope(event, type="payout.created", obj=got, previous_status=None)
    assert event["createdAt"] == got["createdAt"]
    stored = Payout.objects.get()
    assert (stored.pix_key_normalized, stored.local_date) == (canonical, date(2025, 11, 20))  # what the rail gets


def test_create_with_every_optional_field(api, merchant):
    fund(merchant, 100)

    got = create(api, amount=1, referenceId="A-z_0.9:x", beneficiaryName="  Ana Souza  ",
                 beneficiaryDocument="529.982.247-25", description="Saque semanal", metadata={"batch": "7"},
                 webhookUrl=WEBHOOK_URL)

    assert got == expected_payout(got, amount=1, reference_id="A-z_0.9:x", beneficiary_name="Ana Souza",
                                  beneficiary_document=CPF, description="Saque semanal", metadata={"batch": "7"})
    assert get(api, got["id"]) == got
    [event] = events_of(api, got["id"])
    assert event == envelope(event, type="payout.created", obj=got, previous_status=None)


def test_a_payout_and_its_cancel_are_attributed_to_the_key_pair_in_the_audit_log(api, merchant, test_key):
    fund(merchant, 10_000)
    payout = create(api)

    assert api.post(f"/payout/{payout['id']}/cancel").status_code == 200

    entries = AccountEvent.objects.filter(merchant=merchant, obj_type="payout").order_by("id")
    assert [(e.action, e.actor, e.actor_key, e.obj_id, e.after) for e in entries] == [
        ("payout_created", None, test_key[0].public_key, payout["id"], {"amount": 5000, "fee": payout["fee"]}),
        ("payout_canceled", None, test_key[0].public_key, payout["id"], {"status": "CANCELED"}),
    ]



def test_a_refused_payout_leaves_no_audit_entry(api, merchant):
    """The entry is written in the payout's own statement: a payout refused (the balance) leaves neither."""
    response = post_payout(api)

    assert response.status_code == 400 and response.json()["error"]["code"] == "insufficient_balance"
    assert not AccountEvent.objects.filter(obj_type="payout").exists()

def test_an_email_key_with_a_cnpj_beneficiary(api, merchant):
    fund(merchant, 5000)

    got = create(api, pixKeyType="EMAIL", pixKey="financeiro@example.com", beneficiaryDocument="12.abc.345/01de-35")

    assert got == expected_payout(got, pix_key="financeiro@example.com", pix_key_type="EMAIL",
                                  beneficiary_document="12ABC34501DE35")


def test_a_live_payout(live_api, merchant):
    fund(merchant, 5000, livemode=True)

    got = create(live_api)

    assert got == expected_payout(got, livemode=True)
    assert get(live_api, got["id"]) == got
    [event] = events_of(live_api, got["id"])
    assert event == envelope(event, type="payout.created", obj=got, previous_status=None, livemode=True)
    assert (available(live_api), ledger_balances(merchant, livemode=True)["payouts_in_flight"]) == (0, 5000)


def test_a_burst_of_payouts_sends_one_dispatch_message_after_commit(api, merchant, queued,
                                                                    django_capture_on_commit_callbacks):
    """The first payout after the worker last listed sends one message, due a quarter of a second later; the others
    of the burst send none, and go in the same batch. The worker clears the flag before it lists, so the next payout
    after that sends a message again."""
    fund(merchant, 5000)

    with django_capture_on_commit_callbacks(execute=True):
        first = create(api, amount=1000, referenceId="p-1")
    assert queued == [("payouts_dispatch", {}, 0.25)]
    with django_capture_on_commit_callbacks(execute=True):
        second = create(api, amount=1000, referenceId="p-2")
    assert queued == [("payouts_dispatch", {}, 0.25)]

    assert sending.payouts_dispatch() == 2  # the message is due: the worker runs it
    assert queued[1:] == [("payouts_process", {"payout_ids": [first["id"], second["id"]]})]  # one task for both
    with django_capture_on_commit_callbacks(execute=True):
        create(api, amount=1000, referenceId="p-3")
    assert queued[2:] == [("payouts_dispatch", {}, 0.25)]


def test_payouts_that_find_another_processs_flag_set_are_listed_by_the_dispatch_that_clears_it(
        api, merchant, queued, django_capture_on_commit_callbacks):
    """Another process set the flag (and sent the message): these payouts send nothing, and whichever dispatch clears
    the flag next lists them, since each found it set after its commit."""
    fund(merchant, 5000)
    assert shared_cache.flag_set(payout_dispatch.DISPATCH_FLAG, seconds=60)

    created = []
    for number in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            created.append(create(api, amount=1000, referenceId=f"p-{number}")["id"])

    assert queued == []
    assert sending.payouts_dispatch() == 3
    assert queued == [("payouts_process", {"payout_ids": created})]


def test_a_dispatch_message_that_could_not_be_sent_is_tried_again_by_the_next_payout(api, merchant, queued,
                                                                                     monkeypatch,
                                                                                     django_capture_on_commit_callbacks):
    fund(merchant, 5000)

    def broker_down(*args, **kwargs):
        raise OSError("broker down")

    monkeypatch.setattr(payout_tasks.payouts_dispatch, "apply_async", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        got = create(api, amount=1000, referenceId="p-1")
    assert got["status"] == "PENDING"  # accepted all the same: the reconciliation job would start it
    monkeypatch.setattr(payout_tasks.payouts_dispatch, "apply_async",
                        lambda kwargs, countdown: queued.append(("payouts_dispatch", kwargs, countdown)))
    with django_capture_on_commit_callbacks(execute=True):
        create(api, amount=1000, referenceId="p-2")
    assert queued == [("payouts_dispatch", {}, 0.25)]


def test_a_worker_that_starts_sends_a_dispatch_message(queued):
    """Messages a SIGKILLed worker held died with it; a new worker does not wait for the reconciliation job (the crash
    test in test_payout_crash.py kills one mid fan-out)."""
    import gc

    from celery.signals import worker_ready

    try:
        worker_ready.send(sender=None)
    finally:
        gc.unfreeze()  # what the worker's other receiver (config.celery._gc_freeze) did to this process
    assert queued == [("payouts_dispatch", {})]


# === 2. The balance rule ==============================================================================================
def test_exactly_the_available_balance_is_accepted_and_leaves_zero(api, merchant):
    adjustment = fund(merchant, 10_000)

    got = create(api, amount=10_000)

    assert got == expected_payout(got, amount=10_000)
    assert balance(api) == {"available": 0, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}
    assert statement(api) == [*created_lines(got, 10_000), funding_line(adjustment, 10_000)]
    assert ledger_balances(merchant)["payouts_in_flight"] == 10_000


def test_one_cent_short_is_insufficient_balance_and_writes_nothing(api, merchant):
    fund(merchant, 9_999)
    before = footprint()

    response = post_payout(api, amount=10_000)

    insufficient_balance(response)
    assert footprint() == before
    assert available(api) == 9_999


def test_an_unfunded_merchant_cannot_pay_out_a_cent(api):
    insufficient_balance(post_payout(api, amount=1))

    assert footprint()["payouts"] == 0


def test_a_balance_funded_by_a_paid_charge_pays_out_its_net_amount(api):
    fund_by_payin(api, 10_101)  # fee 100 (0.99%), net 10_001
    assert available(api) == 10_001

    insufficient_balance(post_payout(api, amount=10_002))
    got = create(api, amount=10_001)

    assert got == expected_payout(got, amount=10_001)
    assert available(api) == 0


def test_a_payout_fee_is_held_with_the_amount_and_shown_as_its_own_line(api, merchant):
    merchant.payout_fee_fixed = 25
    merchant.save()
    adjustment = fund(merchant, 10_025)

    insufficient_balance(post_payout(api, amount=10_001))  # 10_001 + 25 > 10_025
    got = create(api, amount=10_000)

    assert got == expected_payout(got, amount=10_000, fee=25)
    assert available(api) == 0
    assert statement(api) == [
        line("payout_fee", -25, 0, payout=got, description="Pix payout to CPF key"),
        line("payout", -10_000, 25, payout=got, description="Pix payout to CPF key"),
        funding_line(adjustment, 10_025),
    ]
    assert ledger_balances(merchant)["payouts_in_flight"] == 10_025


def test_the_fee_counts_in_the_balance_rule_to_the_cent(api, merchant):
    merchant.payout_fee_fixed = 25
    merchant.save()
    fund(merchant, 10_024)
    before = footprint()

    insufficient_balance(post_payout(api, amount=10_000))

    assert footprint() == before


def test_test_and_live_balances_are_separate(api, live_api, merchant):
    fund(merchant, 5000, livemode=True)

    insufficient_balance(post_payout(api))
    create(live_api)

    assert (available(api), available(live_api)) == (0, 0)


# === 3. Limits ========================================================================================================
def per_payout_limit(response, maximum: int) -> None:
    error(response, 400, type="invalid_request_error", code="payout_limit_exceeded",
          message="The payout exceeds the merchant's limit", param="amount", details=[
              {"param": "amount", "code": "payout_limit_exceeded",
               "message": f"Must be at most {maximum} cents, this account's maximum per payout."}])


def daily_limit(response, reached: int, daily_max: int) -> None:
    error(response, 400, type="invalid_request_error", code="payout_limit_exceeded",
          message=f"The day's payouts would reach {reached} cents; the daily limit is {daily_max}", param="amount")


def test_the_default_per_payout_maximum_is_five_million_cents(api, merchant):
    fund(merchant, 5_000_001)
    before = footprint()

    per_payout_limit(post_payout(api, amount=5_000_001), 5_000_000)
    assert footprint() == before
    got = create(api, amount=5_000_000)

    assert got["amount"] == 5_000_000
    assert available(api) == 1


def test_a_merchant_per_payout_maximum_replaces_the_default(api, merchant):
    merchant.payout_max_amount = 7_000_000
    merchant.save()
    fund(merchant, 7_000_001)

    per_payout_limit(post_payout(api, amount=7_000_001), 7_000_000)
    got = create(api, amount=7_000_000)

    assert got["amount"] == 7_000_000


def test_a_lower_merchant_per_payout_maximum(api, merchant):
    merchant.payout_max_amount = 1000
    merchant.save()
    fund(merchant, 5000)

    per_payout_limit(post_payout(api, amount=1001), 1000)
    assert create(api, amount=1000)["amount"] == 1000


def test_a_merchant_per_payout_maximum_of_zero_blocks_payouts(api, merchant):
    merchant.payout_max_amount = 0
    merchant.save()
    fund(merchant, 5000)

    response = post_payout(api, amount=1)

    per_payout_limit(response, 0)


def test_the_daily_maximum_at_its_boundary(api, merchant, clock):
    merchant.payout_daily_max = 10_000
    merchant.save()
    fund(merchant, 20_000)

    create(api, amount=6000, referenceId="p-1")
    create(api, amount=4000, referenceId="p-2")
    before = footprint()
    response = post_payout(api, amount=1, referenceId="p-3")

    daily_limit(response, 10_001, 10_000)
    assert footprint() == before
    assert available(api) == 10_000


def test_the_default_daily_maximum(api, merchant, settings):
    settings.PAYOUT_DAILY_MAX = 8000
    fund(merchant, 20_000)

    create(api, amount=8000, referenceId="p-1")

    daily_limit(post_payout(api, amount=1, referenceId="p-2"), 8001, 8000)


def test_failed_and_canceled_payouts_do_not_count_toward_the_day(api, merchant):
    merchant.payout_daily_max = 10_000
    merchant.save()
    fund(merchant, 30_000)
    canceled = create(api, amount=6000, referenceId="p-1")
    failed = create(api, amount=4000, referenceId="p-2")
    assert api.post(f"/payout/{canceled['id']}/cancel").status_code == 200
    assert api.post(f"/sandbox/payout/{failed['id']}/simulate", {"action": "fail"}, format="json").status_code == 200

    got = create(api, amount=10_000, referenceId="p-3")

    assert got["status"] == "PENDING"
    daily_limit(post_payout(api, amount=1, referenceId="p-4"), 10_001, 10_000)


def test_completed_payouts_count_toward_the_day(api, merchant):
    merchant.payout_daily_max = 10_000
    merchant.save()
    fund(merchant, 30_000)
    done = create(api, amount=10_000, referenceId="p-1")
    assert api.post(f"/sandbox/payout/{done['id']}/simulate", {"action": "complete"},
                    format="json").json()["status"] == "COMPLETED"

    daily_limit(post_payout(api, amount=1, referenceId="p-2"), 10_001, 10_000)


def test_the_next_sao_paulo_day_starts_a_new_total(api, merchant, monkeypatch):
    merchant.payout_daily_max = 10_000
    merchant.save()
    fund(merchant, 30_000)
    monkeypatch.setattr("payments.payouts.services.sao_paulo_today", lambda: date(2025, 11, 20))
    create(api, amount=10_000, referenceId="p-1")
    daily_limit(post_payout(api, amount=1, referenceId="p-2"), 10_001, 10_000)

    monkeypatch.setattr("payments.payouts.services.sao_paulo_today", lambda: date(2025, 11, 21))
    got = create(api, amount=10_000, referenceId="p-3")

    assert got["status"] == "PENDING"
    assert list(Payout.objects.order_by("created_at").values_list("local_date", flat=True)) == [
        date(2025, 11, 20), date(2025, 11, 21)]


def test_the_day_is_sao_paulos_not_utcs(api, merchant, clock):
    merchant.payout_daily_max = 10_000
    merchant.save()
    fund(merchant, 30_000)
    clock.now = datetime(2025, 11, 21, 2, 59, 59, tzinfo=UTC)  # 23:59:59 on the 20th in São Paulo
    create(api, amount=10_000, referenceId="p-1")
    clock.now = datetime(2025, 11, 21, 3, 0, 0, tzinfo=UTC)  # 00:00 on the 21st in São Paulo

    got = create(api, amount=10_000, referenceId="p-2")

    assert got["status"] == "PENDING"
    assert list(Payout.objects.order_by("created_at").values_list("local_date", flat=True)) == [
        date(2025, 11, 20), date(2025, 11, 21)]


def test_the_daily_total_is_per_mode(api, live_api, merchant):
    merchant.payout_daily_max = 10_000
    merchant.save()
    fund(merchant, 10_000)
    fund(merchant, 10_000, livemode=True)

    create(api, amount=10_000)
    got = create(live_api, amount=10_000)

    assert got["livemode"] is True


# === 4. referenceId is unique per merchant and mode ==================================================================
def duplicate(response, existing_id: str) -> None:
    error(response, 409, type="conflict", code="duplicate_reference_id",
          message="A payout with this referenceId already exists", param="referenceId", details=[
              {"param": "referenceId", "code": "duplicate_reference_id",
               "message": "A payout with this referenceId already exists.", "existingId": existing_id}])


def test_a_second_payout_with_the_same_reference_id_is_409_naming_the_first(api, merchant):
    fund(merchant, 20_000)
    first = create(api, referenceId="batch-7")
    before = footprint()

    response = post_payout(api, referenceId="batch-7", amount=100, pixKeyType="EMAIL", pixKey="ana@example.com")

    duplicate(response, first["id"])
    assert footprint() == before
    assert available(api) == 15_000


def test_a_reference_id_stays_taken_after_its_payout_is_canceled(api, merchant):
    fund(merchant, 20_000)
    first = create(api, referenceId="batch-7")
    assert api.post(f"/payout/{first['id']}/cancel").status_code == 200

    duplicate(post_payout(api, referenceId="batch-7"), first["id"])


def test_the_same_reference_id_in_live_mode_or_for_another_merchant_is_fine(api, live_api, other_api, merchant,
                                                                           other_merchant):
    fund(merchant, 5000)
    fund(merchant, 5000, livemode=True)
    fund(other_merchant, 5000)

    test_payout = create(api, referenceId="batch-7")
    live_payout = create(live_api, referenceId="batch-7")
    other_payout = create(other_api, referenceId="batch-7")

    assert len({test_payout["id"], live_payout["id"], other_payout["id"]}) == 3
    assert Payout.objects.filter(reference_id="batch-7").count() == 3


def test_reference_ids_are_case_sensitive(api, merchant):
    fund(merchant, 10_000)

    create(api, referenceId="batch-7")
    create(api, referenceId="BATCH-7")

    assert Payout.objects.count() == 2


# === 5. Idempotency-Key ===============================================================================================
def test_an_idempotent_replay_returns_the_same_body_and_moves_money_once(api, merchant):
    fund(merchant, 20_000)
    body = payout_body(amount=7000, webhookUrl=WEBHOOK_URL)

    first = api.post("/payout", body, format="json", HTTP_IDEMPOTENCY_KEY="payout-key-1")
    replay = api.post("/payout", body, format="json", HTTP_IDEMPOTENCY_KEY="payout-key-1")

    assert first.status_code == replay.status_code == 201
    assert "Idempotent-Replayed" not in first
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.json() == first.json() == expected_payout(first.json(), amount=7000)
    assert Payout.objects.count() == 1
    assert LedgerTransaction.objects.filter(object_type="payout").count() == 1
    assert len(events_of(api, first.json()["id"])) == 1
    assert Delivery.objects.count() == 1  # no second webhook
    assert available(api) == 13_000


def test_an_idempotency_key_with_another_body_is_422(api, merchant):
    fund(merchant, 20_000)
    api.post("/payout", payout_body(amount=7000), format="json", HTTP_IDEMPOTENCY_KEY="payout-key-1")
    before = footprint()

    response = api.post("/payout", payout_body(amount=7001), format="json", HTTP_IDEMPOTENCY_KEY="payout-key-1")

    error(response, 422, type="idempotency_error", code="idempotency_key_reused",
          message="This Idempotency-Key was used with a different request; use a new key for a new request",
          param="Idempotency-Key")
    assert footprint() == before


def test_a_refused_payout_does_not_consume_its_idempotency_key(api, merchant):
    body = payout_body(amount=7000)
    insufficient_balance(api.post("/payout", body, format="json", HTTP_IDEMPOTENCY_KEY="payout-key-1"))
    fund(merchant, 7000)

    response = api.post("/payout", body, format="json", HTTP_IDEMPOTENCY_KEY="payout-key-1")

    assert response.status_code == 201, response.content
    assert "Idempotent-Replayed" not in response
    assert Payout.objects.count() == 1


def test_idempotency_keys_are_per_mode(api, live_api, merchant):
    fund(merchant, 5000)
    fund(merchant, 5000, livemode=True)

    test_payout = api.post("/payout", payout_body(), format="json", HTTP_IDEMPOTENCY_KEY="k")
    live_payout = live_api.post("/payout", payout_body(), format="json", HTTP_IDEMPOTENCY_KEY="k")

    assert (test_payout.status_code, live_payout.status_code) == (201, 201)
    assert "Idempotent-Replayed" not in live_payout
    assert test_payout.json()["id"] != live_payout.json()["id"]


# === 11. GET /payout ==================================================================================================
def page(client, **params) -> dict:
    response = client.get("/payout", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_list_is_newest_first_and_pages_without_duplicates_or_gaps(api, merchant):
    fund(merchant, 25 * 100)
    created = [create(api, amount=100, referenceId=f"p-{i:02d}") for i in range(25)]

    first = page(api, limit=10)
    second = page(api, limit=10, cursor=first["nextCursor"])
    third = page(api, limit=10, cursor=second["nextCursor"])

    assert (first["hasMore"], second["hasMore"], third["hasMore"]) == (True, True, False)
    assert isinstance(first["nextCursor"], str) and third["nextCursor"] is None
    assert (len(first["data"]), len(second["data"]), len(third["data"])) == (10, 10, 5)
    assert first["data"] + second["data"] + third["data"] == created[::-1]  # whole bodies, newest first
    default = page(api)
    assert default == {"data": created[::-1][:20], "hasMore": True, "nextCursor": default["nextCursor"]}  # 20


def test_an_empty_list(api):
    assert page(api) == {"data": [], "hasMore": False, "nextCursor": None}


def test_the_list_filters_by_status_and_reference_id(api, merchant):
    fund(merchant, 10_000)
    a = create(api, amount=100, referenceId="a")
    b = create(api, amount=100, referenceId="b")
    c = create(api, amount=100, referenceId="c")
    canceled_a = api.post(f"/payout/{a['id']}/cancel").json()
    canceled_c = api.post(f"/payout/{c['id']}/cancel").json()

    assert page(api, status="CANCELED")["data"] == [canceled_c, canceled_a]
    assert page(api, status="PENDING")["data"] == [b]
    assert page(api, status="COMPLETED")["data"] == []
    assert page(api, referenceId="b")["data"] == [b]
    assert page(api, referenceId="a", status="PENDING")["data"] == []
    assert page(api, referenceId="zzz")["data"] == []


def test_the_list_filters_by_creation_time(api, merchant, clock):
    fund(merchant, 10_000)
    clock.now = datetime(2025, 11, 20, 12, 0, 0, tzinfo=UTC)
    first = create(api, amount=100, referenceId="a")
    clock.advance(seconds=1)
    second = create(api, amount=100, referenceId="b")
    clock.advance(seconds=1)
    third = create(api, amount=100, referenceId="c")

    assert page(api, createdFrom="2025-11-20T12:00:01Z")["data"] == [third, second]  # inclusive
    assert page(api, createdTo="2025-11-20T12:00:01.000Z")["data"] == [first]  # exclusive
    assert page(api, createdFrom="2025-11-20T12:00:01Z", createdTo="2025-11-20T12:00:02Z")["data"] == [second]
    assert page(api, createdFrom="2025-11-20T09:00:01-03:00")["data"] == [third, second]  # any offset
    assert page(api, createdFrom="2025-11-21T00:00:00Z")["data"] == []


BAD_LIMIT = [{"param": "limit", "code": "invalid_limit", "message": "limit must be an integer from 1 to 100."}]


@pytest.mark.parametrize(("params", "details"), [
    ({"limit": "0"}, BAD_LIMIT),
    ({"limit": "101"}, BAD_LIMIT),
    ({"limit": "ten"}, BAD_LIMIT),
    ({"limit": "-1"}, BAD_LIMIT),
    ({"cursor": "not-a-cursor"},
     [{"param": "cursor", "code": "invalid_cursor", "message": "The cursor is not one this API returned."}]),
    ({"status": "DONE"}, [{"param": "status", "code": "invalid_choice",
                           "message": "status must be one of PENDING, PROCESSING, COMPLETED, FAILED, CANCELED, "
                                      "RETURNED."}]),
    ({"createdFrom": "yesterday"}, [{"param": "createdFrom", "code": "invalid_datetime",
                                     "message": "createdFrom must be an ISO 8601 timestamp with a time zone, e.g. "
                                                "2026-11-20T00:00:00Z."}]),
    ({"createdTo": "2025-11-20T12:00:00"}, [{"param": "createdTo", "code": "invalid_datetime",
                                             "message": "createdTo must be an ISO 8601 timestamp with a time zone, "
                                                        "e.g. 2026-11-20T00:00:00Z."}]),
    ({"paymentMethod": "PIX"},
     [{"param": "paymentMethod", "code": "unknown_field", "message": "Unknown query parameter 'paymentMethod'."}]),
])
def test_bad_list_parameters_are_400(api, params, details):
    response = api.get("/payout", params)

    if details[0]["code"] == "unknown_field":
        error(response, 400, type="invalid_request_error", code="unknown_field",
              message="The request has unknown fields", param=details[0]["param"], details=details)
    else:
        validation(response, details)


def test_the_list_and_reads_are_scoped_to_the_merchant_and_mode(api, live_api, other_api, merchant, other_merchant):
    fund(merchant, 5000)
    fund(merchant, 5000, livemode=True)
    fund(other_merchant, 5000)
    mine = create(api, referenceId="mine")
    live = create(live_api, referenceId="live")
    theirs = create(other_api, referenceId="theirs")

    assert page(api)["data"] == [mine]
    assert page(live_api)["data"] == [live]
    assert page(other_api)["data"] == [theirs]
    assert page(api, referenceId="live")["data"] == []
    not_found(api.get(f"/payout/{live['id']}"))
    not_found(live_api.get(f"/payout/{mine['id']}"))
    not_found(api.get(f"/payout/{theirs['id']}"))
    not_found(api.get(f"/payout/{uuid.uuid4()}"))
    not_found(api.get("/payout/not-a-uuid"))
    assert events_of(api, live["id"]) == [] and events_of(api, theirs["id"]) == []


# === 12. Validation through the API ===================================================================================
@pytest.mark.parametrize(("body", "status", "code", "message", "param", "details"), [
    (payout_body(amount=5000.0), 400, "validation_error", "The request has invalid fields", "amount",
     [{"param": "amount", "code": "invalid", "message": "Must be a JSON integer."}]),
    (payout_body(amount="5000"), 400, "validation_error", "The request has invalid fields", "amount",
     [{"param": "amount", "code": "invalid", "message": "Must be a JSON integer."}]),
    (payout_body(amount=0), 400, "amount_too_small", "The amount is below the minimum for this payment method",
     "amount", [{"param": "amount", "code": "amount_too_small", "message": "Must be at least 1 cent."}]),
    (payout_body(amout=5000), 400, "unknown_field", "The request has unknown fields", "amout",
     [{"param": "amout", "code": "unknown_field", "message": "Unknown field 'amout'."}]),
    (payout_body(pixKey="52998224726"), 400, "validation_error", "The request has invalid fields", "pixKey",
     [{"param": "pixKey", "code": "invalid_pix_key",
       "message": "The CPF's check digits (its last two) are wrong."}]),
    (payout_body(beneficiaryDocument="11144477735"), 400, "beneficiary_mismatch",
     "The beneficiary document is not the document of the Pix key", "beneficiaryDocument",
     [{"param": "beneficiaryDocument", "code": "beneficiary_mismatch",
       "message": "Must be the same document as pixKey when pixKeyType is CPF."}]),
    ({"pixKeyType": "PIX", "referenceId": "has space"}, 400, "validation_error", "The request has invalid fields",
     None, [{"param": "amount", "code": "required", "message": "This field is required."},
            {"param": "pixKey", "code": "required", "message": "This field is required."},
            {"param": "pixKeyType", "code": "invalid_choice",
             "message": "Must be one of CPF, CNPJ, EMAIL, PHONE, EVP."},
            {"param": "referenceId", "code": "invalid_reference_id",
             "message": "Must have only letters, digits, '.', '_', ':' and '-' (no spaces)."}]),
])
def test_a_bad_body_is_refused_whole_and_writes_nothing(api, merchant, body, status, code, message, param, details):
    fund(merchant, 10_000)
    before = footprint()

    response = api.post("/payout", body, format="json")

    error(response, status, type="invalid_request_error", code=code, message=message, param=param, details=details)
    assert footprint() == before
    assert available(api) == 10_000


def test_malformed_json_is_refused_and_writes_nothing(api, merchant):
    fund(merchant, 10_000)
    before = footprint()

    response = api.post("/payout", '{"amount": 5000,', content_type="application/json")

    error(response, 400, type="invalid_request_error", code="malformed_json",
          message="The request body is not valid JSON")
    assert footprint() == before


def test_a_webhook_url_to_a_private_address_is_refused_and_writes_nothing(api, merchant, monkeypatch):
    fund(merchant, 10_000)
    monkeypatch.setattr("webhooks.ssrf.resolve", lambda host, port: ["10.0.0.7"])
    before = footprint()

    response = post_payout(api, webhookUrl="https://internal.example.com/hook")

    assert response.status_code == 400, response.content
    assert response.json()["error"]["details"] == [
        {"param": "webhookUrl", "code": "invalid_webhook_url",
         "message": "The webhook URL is not accepted: its host resolves to an address that is not public"}]
    assert footprint() == before


def test_a_refused_webhook_url_alone_is_invalid_webhook_url(api, merchant, monkeypatch):
    fund(merchant, 10_000)
    monkeypatch.setattr("webhooks.ssrf.resolve", lambda host, port: ["10.0.0.7"])

    response = post_payout(api, webhookUrl="https://internal.example.com/hook")

    error(response, 400, type="invalid_request_error", code="invalid_webhook_url",
          message="The webhook URL is not accepted", param="webhookUrl", details=[
              {"param": "webhookUrl", "code": "invalid_webhook_url",
               "message": "The webhook URL is not accepted: its host resolves to an address that is not public"}])
