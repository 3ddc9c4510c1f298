"""Issue 14: money that matches no PENDING charge exactly is an unmatched payment, held in the merchant's `held`
balance, visible in the API, the statement and the events, and accepted, sent back or held by the merchant's policy
or decision. Every movement is a balanced ledger transaction; the same Pix twice is one unmatched payment."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from payments.models import LedgerTransaction, UnmatchedPayment, UnmatchedStatus
from payments.payins.notifications import notification_receive
from payments.unmatched import services as unmatched_services
from tests.conftest import run_in_threads
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.helpers import ISO_MS_Z, UUID, envelope, events_of, statement
from tests.payments.payins.test_payin_api import create, error, invalid_state, paid_pix, validation

pytestmark = pytest.mark.django_db

E2E = re.compile(r"E[0-9]{8}[0-9]{12}[0-9A-Za-z]{11}")


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.API_RATE_LIMIT = 1_000_000
    settings.FEE_PIX_BPS, settings.FEE_BOLETO_FIXED = 99, 349
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0  # the simulator's devoluções are confirmed as soon as asked


def pay(client, payin_id: str, **fields):
    response = client.post(f"/sandbox/payin/{payin_id}/simulate", {"action": "pay", **fields}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def listed(client, **params) -> list[dict]:
    response = client.get("/unmatched-payments", params)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def balance(client) -> dict:
    body = client.get("/balance").json()
    return {k: body[k] for k in ("available", "pending", "held")}


def expected(got: dict, *, kind: str, status: str, amount: int, payin_id: str | None, fee: int = 0,
             resolved: bool = False, failure: str | None = None, payer=("Ana Souza", "52998224725")) -> dict:
    """The whole body of an unmatched payment; generated values checked for their format, then taken from `got`."""
    assert re.fullmatch(UUID, got["id"]) and E2E.fullmatch(got["endToEndId"]), got
    assert re.fullmatch(ISO_MS_Z, got["createdAt"]) and re.fullmatch(ISO_MS_Z, got["updatedAt"]), got
    assert (got["resolvedAt"] is not None) == resolved, got
    return {"id": got["id"], "kind": kind, "status": status, "payinId": payin_id, "amount": amount, "fee": fee,
            "currency": "BRL", "payer": {"name": payer[0], "document": payer[1]}, "endToEndId": got["endToEndId"],
            "failureCode": failure, "livemode": False, "createdAt": got["createdAt"], "updatedAt": got["updatedAt"],
            "resolvedAt": got["resolvedAt"]}


# --- Each kind -------------------------------------------------------------------------------------------------------
def test_a_payment_of_another_amount_is_held_and_shown_everywhere(api):
    charge = create(api, "PIX", amount=10000)

    answer = pay(api, charge["id"], amount=9000)

    [got] = listed(api)
    # The charge does not move, and the answer names the payment that settled nothing (issue 37, item 14).
    assert answer == {**charge, "unmatchedPayment": {"id": got["id"], "kind": "AMOUNT_MISMATCH", "amount": 9000,
                                                     "status": "HELD"}}
    assert got == expected(got, kind="AMOUNT_MISMATCH", status="HELD", amount=9000, payin_id=charge["id"])
    assert api.get(f"/unmatched-payments/{got['id']}").json() == got
    assert balance(api) == {"available": 0, "pending": 0, "held": 9000}
    assert statement(api) == [{"type": "unmatched_payment", "amount": 9000, "balanceAfter": 9000, "balance": "held",
                               "objectType": "unmatched_payment", "objectId": got["id"], "referenceId": "order-1",
                               "description": "Payment that matched no charge"}]
    [event] = events_of(api, got["id"])
    assert event == envelope(event, type="unmatched_payment.created", obj=got, previous_status=None)


def test_accepting_moves_it_to_available_less_the_fee(api):
    charge = create(api, "PIX", amount=10000)
    pay(api, charge["id"], amount=9000)
    [held] = listed(api)

    response = api.post(f"/unmatched-payments/{held['id']}/accept")

    assert response.status_code == 200, response.content
    accepted = response.json()
    assert accepted == expected(accepted, kind="AMOUNT_MISMATCH", status="ACCEPTED", amount=9000, fee=89,
                                payin_id=charge["id"], resolved=True)
    assert balance(api) == {"available": 9000 - 89, "pending": 0, "held": 0}
    updated, _ = events_of(api, held["id"])
    assert updated == envelope(updated, type="unmatched_payment.updated", obj=accepted, previous_status="HELD")
    invalid_state(api.post(f"/unmatched-payments/{held['id']}/accept"),
                  "An unmatched payment in status ACCEPTED cannot become ACCEPTED")
    invalid_state(api.post(f"/unmatched-payments/{held['id']}/refund"),
                  "An unmatched payment in status ACCEPTED cannot become REFUND_PENDING")


def test_refunding_sends_it_back_through_the_rail_and_it_leaves_the_books(api):
    charge = create(api, "PIX", amount=10000)
    pay(api, charge["id"], amount=12000)
    [held] = listed(api)

    response = api.post(f"/unmatched-payments/{held['id']}/refund")

    assert response.status_code == 200 and response.json()["status"] == "REFUND_PENDING"
    assert balance(api) == {"available": 0, "pending": 0, "held": 0}  # on its way back: in flight
    assert unmatched_services.unmatched_refunds_reconcile() == 1
    refunded = api.get(f"/unmatched-payments/{held['id']}").json()
    assert refunded == expected(refunded, kind="AMOUNT_MISMATCH", status="REFUNDED", amount=12000,
                                payin_id=charge["id"], resolved=True)
    assert [e["data"]["object"]["status"] for e in events_of(api, held["id"])] == [
        "REFUNDED", "REFUND_PENDING", "HELD"]


def test_a_second_payment_of_a_paid_charge_goes_back_to_the_payer_by_default(api):
    charge = paid_pix(api, 10000)

    pay(api, charge["id"])

    [duplicate] = listed(api)
    assert (duplicate["kind"], duplicate["status"]) == ("DUPLICATE", "REFUND_PENDING")
    unmatched_services.unmatched_refund_send(unmatched_id=duplicate["id"])  # the worker's task
    assert api.get(f"/unmatched-payments/{duplicate['id']}").json()["status"] in ("REFUND_PENDING", "REFUNDED")
    unmatched_services.unmatched_refunds_reconcile()
    assert api.get(f"/unmatched-payments/{duplicate['id']}").json()["status"] == "REFUNDED"
    assert balance(api) == {"available": 9901, "pending": 0, "held": 0}


def test_a_payment_after_a_cancel_is_unmatched_and_a_boleto_one_can_only_be_accepted(api):
    pix_charge, boleto_charge = create(api, "PIX"), create(api, "BOLETO")
    for charge in (pix_charge, boleto_charge):
        assert api.post(f"/payin/{charge['id']}/cancel").status_code == 200
        pay(api, charge["id"])

    kinds = {u["payinId"]: (u["kind"], u["status"]) for u in listed(api)}
    # The default for AFTER_CANCEL is to refund; a boleto cannot be given back by Pix, so it waits, held.
    assert kinds == {pix_charge["id"]: ("AFTER_CANCEL", "REFUND_PENDING"),
                     boleto_charge["id"]: ("AFTER_CANCEL", "HELD")}
    boleto_unmatched = next(u for u in listed(api) if u["payinId"] == boleto_charge["id"])
    error(api.post(f"/unmatched-payments/{boleto_unmatched['id']}/refund"), 409, type="conflict",
          code="refund_not_supported", message="A boleto payment cannot be sent back by Pix; accept it instead")
    assert api.post(f"/unmatched-payments/{boleto_unmatched['id']}/accept").json()["fee"] == 349


def test_a_pix_naming_no_charge_is_held_for_the_merchant(api):
    response = api.post("/sandbox/pix/receive", {"amount": 777, "txid": "naoExisteNenhumaCobranca1"}, format="json")

    assert response.status_code == 201, response.content
    got = response.json()
    assert got == expected(got, kind="UNKNOWN_REFERENCE", status="HELD", amount=777, payin_id=None,
                           payer=("Pagador Sandbox", "52998224725"))
    assert balance(api)["held"] == 777


def test_the_sandbox_receive_is_test_mode_only_and_validated(api, merchant, api_client_for):
    live = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))
    assert live.post("/sandbox/pix/receive", {"amount": 1}, format="json").status_code == 403
    validation(api.post("/sandbox/pix/receive", {"amount": 0}, format="json"), [
        {"param": "amount", "code": "min_value", "message": "Ensure this value is greater than or equal to 1."}])
    assert not UnmatchedPayment.objects.exists()


# --- Policy ----------------------------------------------------------------------------------------------------------
def test_the_policy_has_defaults_and_the_merchant_can_change_them(api):
    defaults = {"AMOUNT_MISMATCH": "hold", "DUPLICATE": "refund", "AFTER_CANCEL": "refund",
                "UNKNOWN_REFERENCE": "hold"}
    assert api.get("/unmatched-payments/settings").json() == defaults

    response = api.patch("/unmatched-payments/settings", {"AMOUNT_MISMATCH": "accept", "DUPLICATE": "hold"},
                         format="json")

    assert response.json() == {**defaults, "AMOUNT_MISMATCH": "accept", "DUPLICATE": "hold"}
    charge = create(api, "PIX", amount=10000)
    mismatch = pay(api, charge["id"], amount=5000)  # accepted at once
    paid = pay(api, charge["id"])  # paid
    duplicate = pay(api, charge["id"])  # a duplicate, now held
    by_kind = {u["kind"]: u for u in listed(api)}
    assert {kind: u["status"] for kind, u in by_kind.items()} == {"AMOUNT_MISMATCH": "ACCEPTED", "DUPLICATE": "HELD"}
    # Each answer says what the payment did: the policy's outcome, or nothing when it settled the charge.
    assert mismatch == {**charge, "unmatchedPayment": {"id": by_kind["AMOUNT_MISMATCH"]["id"],
                                                       "kind": "AMOUNT_MISMATCH", "amount": 5000,
                                                       "status": "ACCEPTED"}}
    assert paid == api.get(f"/payin/{charge['id']}").json() and paid["status"] == "PAID"
    assert duplicate == {**paid, "unmatchedPayment": {"id": by_kind["DUPLICATE"]["id"], "kind": "DUPLICATE",
                                                      "amount": 10000, "status": "HELD"}}
    assert balance(api) == {"available": (5000 - 50) + (10000 - 99), "pending": 0, "held": 10000}


def test_an_unknown_action_or_kind_is_refused_and_changes_nothing(api):
    validation(api.patch("/unmatched-payments/settings", {"DUPLICATE": "keep"}, format="json"), [
        {"param": "DUPLICATE", "code": "invalid_choice", "message": "Must be one of refund, accept, hold."}])
    response = api.patch("/unmatched-payments/settings", {"LATE": "hold"}, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "unknown_field"
    assert api.get("/unmatched-payments/settings").json()["DUPLICATE"] == "refund"


# --- Scope and lists -------------------------------------------------------------------------------------------------
def test_another_merchants_or_modes_unmatched_payment_is_404(api, api_client_for, merchant):
    charge = create(api, "PIX")
    pay(api, charge["id"], amount=1)
    [held] = listed(api)
    other = api_client_for(*ApiKeyFactory.with_secret(merchant=MerchantFactory(), livemode=False))
    live = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))

    for client in (other, live):
        assert client.get(f"/unmatched-payments/{held['id']}").status_code == 404
        assert client.post(f"/unmatched-payments/{held['id']}/accept").status_code == 404
        assert client.get("/unmatched-payments").json()["data"] == []
    assert api.get("/unmatched-payments", {"status": "ACCEPTED"}).json()["data"] == []
    assert [u["id"] for u in listed(api, kind="AMOUNT_MISMATCH", status="HELD")] == [held["id"]]


# --- Races (PostgreSQL) ----------------------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_the_same_pix_notified_concurrently_under_two_ids_is_one_unmatched_payment(api):
    charge = paid_pix(api, 10000)
    bodies = [(f'{{"id": "dup-{n}", "type": "payin.paid", "txid": "{charge["pix"]["txid"]}", "amount": 10000, '
               f'"endToEndId": "E00000000202611251200duplicate01"}}').encode() for n in range(4)]

    run_in_threads(4, lambda n: notification_receive(rail_name="simulator", body=bodies[n]))

    assert UnmatchedPayment.objects.count() == 1
    assert LedgerTransaction.objects.filter(object_type="unmatched_payment").count() == 2  # arrival, refund hold


@pytest.mark.django_db(transaction=True)
def test_accept_and_refund_at_once_move_it_once(api, merchant):
    charge = create(api, "PIX", amount=10000)
    pay(api, charge["id"], amount=3000)
    [held] = listed(api)

    def decide(n: int):
        action = unmatched_services.unmatched_accept if n % 2 else unmatched_services.unmatched_refund
        try:
            return action(merchant=merchant, livemode=False, unmatched_id=held["id"]).status
        except Exception as exc:  # the loser's conflict
            return type(exc).__name__

    outcomes = run_in_threads(6, decide)

    final = UnmatchedPayment.objects.get(pk=held["id"]).status
    assert final in ("ACCEPTED", "REFUND_PENDING", "REFUNDED")
    assert sum(outcome in ("ACCEPTED", "REFUND_PENDING", "REFUNDED") for outcome in outcomes) == 1, outcomes
    assert set(outcomes) - {"ACCEPTED", "REFUND_PENDING", "REFUNDED"} == {"InvalidState"}


def test_ledger_check_sees_unmatched_money_in_the_wrong_place(api, capsys):
    charge = create(api, "PIX", amount=10000)
    pay(api, charge["id"], amount=9000)
    call_command("ledger_check")
    UnmatchedPayment.objects.update(status=UnmatchedStatus.ACCEPTED)  # a status the money did not follow

    with pytest.raises(CommandError):
        call_command("ledger_check")
    assert "ACCEPTED): 9000 in held, not 0" in capsys.readouterr().err
    UnmatchedPayment.objects.update(status=UnmatchedStatus.HELD)  # as it was, for the after-test ledger check
