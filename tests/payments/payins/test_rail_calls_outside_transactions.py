"""Issue 12, point 5: no rail call runs inside a database transaction. A card charge or a refund is committed PENDING,
the rail is called under its id as the idempotency key, and the answer is recorded by a conditional transition; an
unknown outcome stays PENDING until reconciliation asks the rail under the same key. On PostgreSQL, outside any test
transaction, so `connection.in_atomic_block` is what production would see."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection

from payments.models import CardToken, LedgerTransaction, Payin, Refund, SimulatorOperation
from payments.payins import cards as card_charges
from payments.payins import refunds
from payments.payins import sandbox as payin_sandbox
from payments.rails.base import RailError, RailTimeout
from payments.rails.simulator import SimulatorRail
from tests.conftest import run_in_threads
from tests.payments.disputes.helpers import decide
from tests.payments.helpers import envelope, events_of
from tests.payments.payins.test_payin_api import (
    assert_ledger_balanced,
    balance,
    card_with,
    expected_card,
    expected_charge,
    get,
    paid_pix,
    payin_body,
)
from webhooks.models import Event

pytestmark = pytest.mark.django_db(transaction=True)

OPERATIONS = ("card_authorize", "card_status", "refund_create", "refund_status")


@pytest.fixture(autouse=True)
def _api_settings(settings):
    settings.API_RATE_LIMIT = 1_000_000
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349


@pytest.fixture
def rail_log(monkeypatch) -> list[tuple[str, str, bool]]:
    """Every call to the simulator's card and refund operations: (operation, key, a transaction was open)."""
    log: list[tuple[str, str, bool]] = []
    for name in OPERATIONS:
        original = getattr(SimulatorRail, name)

        def watched(self, *, _original=original, _name=name, **kwargs):
            log.append((_name, kwargs["key"], connection.in_atomic_block))
            return _original(self, **kwargs)

        monkeypatch.setattr(SimulatorRail, name, watched)
    return log


def fail_next(monkeypatch, operation: str, error: Exception, *, reach_network: bool) -> None:
    """The next call of `operation` raises `error`, after the simulator did the operation (`reach_network`) or not."""
    original = getattr(SimulatorRail, operation)

    def broken(self, **kwargs):
        monkeypatch.setattr(SimulatorRail, operation, original)  # once
        if reach_network:
            original(self, **kwargs)
        raise error

    monkeypatch.setattr(SimulatorRail, operation, broken)


# --- No transaction open while the rail is called ---------------------------------------------------------------------
def test_no_transaction_is_open_while_a_card_is_charged_and_refunded(api, rail_log):
    paid_pix(api, 20000, referenceId="funding")

    charge = api.post("/payin", payin_body("CREDIT_CARD", amount=10000), format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    refund = api.post(f"/payin/{charge.json()['id']}/refunds", {"amount": 4000}, format="json",
                      HTTP_IDEMPOTENCY_KEY="r-1")

    assert (charge.status_code, charge.json()["status"]) == (201, "PAID")
    assert (refund.status_code, refund.json()["status"]) == (201, "SUCCEEDED")
    assert rail_log == [("card_authorize", charge.json()["id"], False), ("refund_create", refund.json()["id"], False)]
    assert_ledger_balanced()


def test_no_transaction_is_open_while_reconciliation_asks_the_rail(api, rail_log, monkeypatch):
    charge_paid = paid_pix(api, 10000)
    fail_next(monkeypatch, "card_authorize", RailTimeout("no answer"), reach_network=True)
    card = api.post("/payin", payin_body("CREDIT_CARD"), format="json").json()
    fail_next(monkeypatch, "refund_create", RailTimeout("no answer"), reach_network=True)
    pix_refund = api.post(f"/payin/{charge_paid['id']}/refunds", {"amount": 100}, format="json").json()
    rail_log.clear()

    card_charges.card_charges_reconcile(older_than=timedelta(0))
    refunds.refunds_reconcile(older_than=timedelta(0))

    assert rail_log == [("card_status", card["id"], False), ("refund_status", pix_refund["id"], False)]


# --- Card charges: the rail does not answer ---------------------------------------------------------------------------
def test_a_card_timeout_leaves_the_charge_pending_and_reconciliation_pays_it_under_the_same_key(api, rail_log,
                                                                                               monkeypatch):
    fail_next(monkeypatch, "card_authorize", RailTimeout("no answer within 10 s"), reach_network=True)

    response = api.post("/payin", payin_body("CREDIT_CARD", amount=10000), format="json", HTTP_IDEMPOTENCY_KEY="k")
    retry = api.post("/payin", payin_body("CREDIT_CARD", amount=10000), format="json", HTTP_IDEMPOTENCY_KEY="k")

    assert response.status_code == 201
    pending = response.json()
    assert pending == expected_charge(pending, method="CREDIT_CARD", amount=10000, fee=438, status="PENDING",
                                      card=expected_card(pending, number="4111111111111111", brand="visa",
                                                         tokenized=False),
                                      authorizationCode=None)
    assert (retry.status_code, retry.json(), retry["Idempotent-Replayed"]) == (201, pending, "true")
    [created] = events_of(api, pending["id"])
    assert created == envelope(created, type="payin.created", obj=pending, previous_status=None)
    assert card_charges.card_charges_reconcile() == 0  # younger than 30 s: its request may still be waiting

    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1

    paid = get(api, pending["id"])
    assert (paid["status"], paid["authorizationCode"] is not None) == ("PAID", True)
    assert [(op, key) for op, key, _ in rail_log] == [("card_authorize", pending["id"]),
                                                      ("card_status", pending["id"])]
    assert SimulatorOperation.objects.get(kind="card").calls == 1  # charged once
    assert LedgerTransaction.objects.filter(object_id=pending["id"]).count() == 1
    assert balance(api)["available"] == 10000 - 438
    assert_ledger_balanced()


def test_an_unreachable_rail_answers_a_pending_charge_and_reconciliation_fails_it(api, monkeypatch):
    """The decision of issue 12: a card charge whose rail is unreachable (a refused connection, a 5xx) is not a 502
    with nothing behind any more. The charge was committed before the call and the rail may have it: the answer is
    201 with the charge PENDING (and `payin.created`), which the reconciliation settles by asking under its id."""
    fail_next(monkeypatch, "card_authorize", RailError("connection refused"), reach_network=False)

    response = api.post("/payin", payin_body("CREDIT_CARD"), format="json", HTTP_IDEMPOTENCY_KEY="k")
    retry = api.post("/payin", payin_body("CREDIT_CARD"), format="json", HTTP_IDEMPOTENCY_KEY="k")

    assert response.status_code == 201
    pending = response.json()
    assert (pending["status"], pending["card"]["token"], pending["failureCode"]) == ("PENDING", None, None)
    assert (retry.status_code, retry.json(), retry["Idempotent-Replayed"]) == (201, pending, "true")
    assert Payin.objects.count() == 1
    assert [e["type"] for e in events_of(api, pending["id"])] == ["payin.created"]

    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1

    failed = get(api, pending["id"])
    assert (failed["status"], failed["failureCode"]) == ("FAILED", "processing_error")
    assert CardToken.objects.count() == 0
    assert balance(api)["available"] == 0
    assert_ledger_balanced()


def test_a_crash_after_the_charge_was_handed_to_the_rail_is_replayed_never_charged_again(api, monkeypatch):
    """The charge is committed before the call, so a crash after it cannot be rolled back: the 500 is stored under
    the Idempotency-Key, the retry gets it again, and the rail is never asked a second time."""
    fail_next(monkeypatch, "card_authorize", RuntimeError("the rail client broke"), reach_network=True)

    first = api.post("/payin", payin_body("CREDIT_CARD"), format="json", HTTP_IDEMPOTENCY_KEY="k")
    retry = api.post("/payin", payin_body("CREDIT_CARD"), format="json", HTTP_IDEMPOTENCY_KEY="k")

    assert first.status_code == 500
    assert (retry.status_code, retry.json(), retry["Idempotent-Replayed"]) == (500, first.json(), "true")
    [payin] = Payin.objects.all()
    assert payin.status == "PENDING"
    assert SimulatorOperation.objects.get(kind="card").calls == 1
    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1
    assert Payin.objects.get().status == "PAID"
    assert_ledger_balanced()


def test_a_declined_card_is_answered_as_before(api, rail_log):
    response = api.post("/payin", payin_body("CREDIT_CARD", card=card_with("4000000000000002")), format="json")

    got = response.json()
    assert (response.status_code, got["status"], got["failureCode"]) == (201, "FAILED", "card_declined")
    [event] = events_of(api, got["id"])
    assert event == envelope(event, type="payin.failed", obj=got, previous_status=None)
    assert rail_log == [("card_authorize", got["id"], False)]


# --- Concurrent retries with one Idempotency-Key -------------------------------------------------------------------
def test_concurrent_retries_with_one_key_charge_the_card_once(api_client_for, test_key, monkeypatch):
    original = SimulatorRail.card_authorize
    calls: list[str] = []
    lock = threading.Lock()

    def slow(self, **kwargs):
        with lock:
            calls.append(kwargs["key"])
        time.sleep(0.5)  # the first request is in the rail while the others arrive
        return original(self, **kwargs)

    monkeypatch.setattr(SimulatorRail, "card_authorize", slow)
    body = payin_body("CREDIT_CARD", amount=10000)

    responses = run_in_threads(12, lambda i: api_client_for(*test_key).post(
        "/payin", body, format="json", HTTP_IDEMPOTENCY_KEY="order-1-charge"))
    after = api_client_for(*test_key).post("/payin", body, format="json", HTTP_IDEMPOTENCY_KEY="order-1-charge")

    assert not [r for r in responses if isinstance(r, Exception)]
    [payin] = Payin.objects.all()
    assert calls == [str(payin.pk)]
    created = [r for r in responses if r.status_code == 201]
    assert sorted(r.status_code for r in responses) == [201] * len(created) + [409] * (12 - len(created))
    assert {r.json()["error"]["code"] for r in responses if r.status_code == 409} <= {"idempotency_key_in_use"}
    assert all(r.json()["id"] == str(payin.pk) for r in created)
    assert (after.status_code, after.json()["id"], after.json()["status"]) == (201, str(payin.pk), "PAID")
    assert SimulatorOperation.objects.get(kind="card").calls == 1
    assert Event.objects.filter(object_id=str(payin.pk)).count() == 1
    assert_ledger_balanced()


# --- Refunds -----------------------------------------------------------------------------------------------------
def test_a_pix_refund_is_scheduled_for_reconciliation_by_the_service_not_by_the_rail(api, monkeypatch, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    scheduled: list[dict] = []
    monkeypatch.setattr(refunds, "task_enqueue", lambda name, **kwargs: scheduled.append({"name": name, **kwargs}))
    charge = paid_pix(api, 10000)

    pending = api.post(f"/payin/{charge['id']}/refunds", {"amount": 4000}, format="json").json()

    assert pending["status"] == "PENDING"
    assert scheduled == [{"name": "payments.payins.tasks.refund_reconcile", "refund_id": pending["id"],
                          "countdown": 1}]
    assert refunds.refunds_reconcile(refund_ids=[pending["id"]]) == 1
    assert Refund.objects.get().status == "SUCCEEDED"
    assert_ledger_balanced()


def test_a_chargeback_while_a_card_refund_waits_for_the_rail_disputes_only_the_rest(api, merchant, monkeypatch):
    """The window the new flow opens: the refund is committed PENDING (its money in flight) before the rail answers,
    so a chargeback can land in between. The dispute it opens takes only what the refund left (issue 14: never the
    same money twice), the refund still goes out, and lost, the dispute makes the charge CHARGEBACK; no cent is lost."""
    merchant.pix_fee_bps = merchant.card_fee_bps = merchant.card_fee_fixed = 0
    merchant.save()
    paid_pix(api, 20000, referenceId="funding")
    charge = api.post("/payin", payin_body("CREDIT_CARD", amount=10000), format="json").json()
    original = SimulatorRail.refund_create

    def chargeback_first(self, **kwargs):
        assert not connection.in_atomic_block
        payin_sandbox.payin_simulate(merchant=merchant, payin_id=charge["id"], action="chargeback")
        return original(self, **kwargs)

    monkeypatch.setattr(SimulatorRail, "refund_create", chargeback_first)

    response = api.post(f"/payin/{charge['id']}/refunds", {"amount": 1000}, format="json")

    assert (response.status_code, response.json()["status"]) == (201, "SUCCEEDED")
    (dispute,) = api.get("/disputes", {"payinId": charge["id"]}).json()["data"]
    assert (dispute["amount"], dispute["status"]) == (9000, "OPEN")
    assert balance(api)["available"] == 20000 + 10000 - 1000 - 9000
    decide(api, dispute["id"], "lose")
    after = get(api, charge["id"])
    assert (after["status"], after["refundedAmount"]) == ("CHARGEBACK", 1000)
    assert balance(api)["available"] == 20000 + 10000 - 1000 - 9000
    assert [e["type"] for e in events_of(api, charge["id"])] == ["payin.chargeback", "payin.partially_refunded",
                                                                 "payin.paid"]
    assert_ledger_balanced()


def test_an_answer_recorded_by_reconciliation_first_is_kept_and_the_late_one_moves_nothing(api, monkeypatch):
    """While the request waits for the rail, reconciliation may record the charge's outcome first (here: FAILED).
    The request's own answer (PAID) then finds nothing to move: no second event, no ledger movement, no card token,
    and the request answers the charge as reconciliation left it."""
    original = SimulatorRail.card_authorize

    def answered_while_reconciled(self, **kwargs):
        result = original(self, **kwargs)
        Payin.objects.filter(pk=kwargs["key"]).update(status="FAILED", failure_code="processing_error",
                                                      failure_message="reconciled first")
        return result

    monkeypatch.setattr(SimulatorRail, "card_authorize", answered_while_reconciled)

    response = api.post("/payin", payin_body("CREDIT_CARD", amount=10000), format="json")

    body = response.json()
    assert (response.status_code, body["status"], body["failureCode"]) == (201, "FAILED", "processing_error")
    assert body["card"]["token"] is None
    assert not CardToken.objects.exists()
    assert not LedgerTransaction.objects.filter(object_id=body["id"]).exists()
    assert not Event.objects.filter(object_id=body["id"]).exists()
    assert balance(api) == {"available": 0, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}
