"""POST /payin/{id}/refunds and GET /payin/{id}/refunds (SPEC §3.8, §5, §6.1): card refunds succeed at once, Pix
refunds when the rail confirms; the available balance pays for them, fees are not returned, and a refused refund
leaves nothing behind."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

from accounts.models import AccountEvent
from payments.models import LedgerEntry, LedgerTransaction, Refund
from payments.payins import refunds
from payments.payins.notifications import notification_receive
from payments.rails.base import RailError, RailTimeout
from payments.rails.simulator import SimulatorRail
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.disputes.helpers import charge_back, decide, open_dispute
from tests.payments.payins.test_payin_api import (
    ISO_MS_Z,
    UUID,
    assert_ledger_balanced,
    balance,
    create,
    envelope,
    error,
    events_of,
    get,
    invalid_state,
    line,
    not_found,
    paid_pix,
    simulate,
    statement,
    validation,
)
from webhooks.models import Event


@pytest.fixture(autouse=True)
def _api_settings(settings):
    settings.API_RATE_LIMIT = 1_000_000
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 2


@pytest.fixture
def other_api(api_client_for, db):
    return api_client_for(*ApiKeyFactory.with_secret(merchant=MerchantFactory(), livemode=False))


def refund(client, payin_id: str, body: dict | None = None, **headers):
    return client.post(f"/payin/{payin_id}/refunds", body if body is not None else {}, format="json", **headers)


def expected_refund(got: dict, *, payin_id: str, amount: int, status: str, reason: str | None = None,
                    failure_code: str | None = None) -> dict:
    """The whole refund body; id and timestamps checked for their format, then taken from `got`."""
    assert re.fullmatch(UUID, got["id"]), got["id"]
    assert re.fullmatch(ISO_MS_Z, got["createdAt"]) and re.fullmatch(ISO_MS_Z, got["updatedAt"]), got
    assert got["createdAt"] <= got["updatedAt"]
    return {"id": got["id"], "payinId": payin_id, "amount": amount, "status": status, "reason": reason,
            "failureCode": failure_code, "livemode": False, "createdAt": got["createdAt"],
            "updatedAt": got["updatedAt"]}


def refund_line(amount: int, balance_after: int, *, refund_id: str, payin_id: str) -> dict:
    return line("refund", -amount, balance_after, object_type="refund", object_id=refund_id,
                description=f"Refund of charge {payin_id}")


# === Cards ===========================================================================================================
def test_card_partial_then_the_rest(api):
    funding = paid_pix(api, 10000, referenceId="funding")  # fees are not returned: the net alone cannot refund all
    card = create(api, "CREDIT_CARD", amount=10000)  # fee 438, net 9562
    assert balance(api)["available"] == 9901 + 9562

    first = refund(api, card["id"], {"amount": 3000, "reason": "customer asked"})

    assert first.status_code == 201
    partial_refund = first.json()
    assert partial_refund == expected_refund(partial_refund, payin_id=card["id"], amount=3000, status="SUCCEEDED",
                                             reason="customer asked")
    partially = get(api, card["id"])
    assert partially == {**card, "status": "PARTIALLY_REFUNDED", "refundedAmount": 3000,
                         "updatedAt": partially["updatedAt"]}

    second = refund(api, card["id"])  # default: what is left

    assert second.status_code == 201
    rest_refund = second.json()
    assert rest_refund == expected_refund(rest_refund, payin_id=card["id"], amount=7000, status="SUCCEEDED")
    refunded = get(api, card["id"])
    assert refunded == {**card, "status": "REFUNDED", "refundedAmount": 10000, "updatedAt": refunded["updatedAt"]}
    assert balance(api)["available"] == 9901 + 9562 - 10000
    assert statement(api)[:2] == [
        refund_line(7000, 9901 + 9562 - 10000, refund_id=rest_refund["id"], payin_id=card["id"]),
        refund_line(3000, 9901 + 9562 - 3000, refund_id=partial_refund["id"], payin_id=card["id"]),
    ]
    charge_events = events_of(api, card["id"])
    assert charge_events[0] == envelope(charge_events[0], type="payin.refunded", obj=refunded,
                                        previous_status="PARTIALLY_REFUNDED")
    assert charge_events[1] == envelope(charge_events[1], type="payin.partially_refunded", obj=partially,
                                        previous_status="PAID")
    assert [e["type"] for e in charge_events] == ["payin.refunded", "payin.partially_refunded", "payin.paid"]
    for got in (partial_refund, rest_refund):
        [succeeded] = events_of(api, got["id"])
        assert succeeded == envelope(succeeded, type="refund.succeeded", obj=got, previous_status="PENDING")
    listed = api.get(f"/payin/{card['id']}/refunds")
    assert listed.status_code == 200
    assert listed.json() == {"data": [rest_refund, partial_refund], "hasMore": False, "nextCursor": None}
    assert get(api, funding["id"])["status"] == "PAID"
    assert_ledger_balanced()


def test_a_refund_is_attributed_to_the_key_pair_in_the_audit_log(api, merchant, test_key):
    card = create(api, "CREDIT_CARD", amount=10000)

    response = refund(api, card["id"], {"amount": 3000})

    assert response.status_code == 201
    [entry] = AccountEvent.objects.filter(merchant=merchant, action=AccountEvent.Action.REFUND_CREATED)
    assert (entry.actor, entry.actor_key, entry.obj_type, entry.obj_id, entry.after) == (
        None, test_key[0].public_key, "refund", response.json()["id"],
        {"payin": card["id"], "amount": 3000, "status": "SUCCEEDED"})


def test_a_refund_of_more_than_is_left_is_400(api):
    paid_pix(api, 20000, referenceId="funding")
    card = create(api, "CREDIT_CARD", amount=10000)
    refund(api, card["id"], {"amount": 4000})

    response = refund(api, card["id"], {"amount": 6001})

    validation(response, [{"param": "amount", "code": "refund_exceeds_remaining",
                           "message": "At most 6000 cents of this charge can still be refunded."}])
    assert get(api, card["id"])["refundedAmount"] == 4000
    assert Refund.objects.count() == 1


@pytest.mark.parametrize(("body", "details"), [
    ({"amount": 0}, [{"param": "amount", "code": "min_value",
                      "message": "Ensure this value is greater than or equal to 1."}]),
    ({"amount": -5}, [{"param": "amount", "code": "min_value",
                       "message": "Ensure this value is greater than or equal to 1."}]),
    ({"amount": 100.0}, [{"param": "amount", "code": "invalid", "message": "Must be a JSON integer."}]),
    ({"amount": 100.5}, [{"param": "amount", "code": "invalid", "message": "Must be a JSON integer."}]),
    ({"amount": "100"}, [{"param": "amount", "code": "invalid", "message": "Must be a JSON integer."}]),
    ({"amount": True}, [{"param": "amount", "code": "invalid", "message": "Must be a JSON integer."}]),
    ({"amount": None}, [{"param": "amount", "code": "null", "message": "This field may not be null."}]),
    ({"reason": "x" * 256}, [{"param": "reason", "code": "max_length",
                              "message": "Ensure this field has no more than 255 characters."}]),
])
def test_a_refund_amount_must_be_a_positive_integer(api, body, details):
    card = create(api, "CREDIT_CARD", amount=10000)

    validation(refund(api, card["id"], body), details)
    assert (Refund.objects.count(), get(api, card["id"])) == (0, card)


def test_a_refund_refuses_unknown_fields(api):
    card = create(api, "CREDIT_CARD", amount=10000)

    response = refund(api, card["id"], {"amount": 100, "currency": "BRL"})

    error(response, 400, type="invalid_request_error", code="unknown_field", message="The request has unknown fields",
          param="currency",
          details=[{"param": "currency", "code": "unknown_field", "message": "Unknown field 'currency'."}])


def test_a_boleto_cannot_be_refunded(api):
    paid_boleto = simulate(api, create(api, "BOLETO", amount=10000)["id"], "pay")

    response = refund(api, paid_boleto["id"], {"amount": 100})

    error(response, 409, type="conflict", code="refund_not_supported", message="Boleto charges cannot be refunded")
    assert get(api, paid_boleto["id"]) == paid_boleto


@pytest.mark.parametrize("state", ["PENDING", "FAILED", "CANCELED", "CHARGEBACK", "REFUNDED"])
def test_only_a_paid_charge_can_be_refunded(api, state):
    paid_pix(api, 20000, referenceId="funding")
    if state == "PENDING":
        charge = create(api, "PIX")
    elif state == "FAILED":
        charge = create(api, "CREDIT_CARD", card={"holderName": "ANA SOUZA", "number": "4000000000000002",
                                                  "expirationMonth": "12", "expirationYear": "2030", "cvv": "123"})
    elif state == "CANCELED":
        charge = api.post(f"/payin/{create(api, 'PIX')['id']}/cancel").json()
    elif state == "CHARGEBACK":
        charge = charge_back(api, create(api, "CREDIT_CARD")["id"])  # a card dispute, lost
    else:
        card = create(api, "CREDIT_CARD")
        refund(api, card["id"])
        charge = get(api, card["id"])
    assert charge["status"] == state
    refunds_before = Refund.objects.count()

    response = refund(api, charge["id"], {"amount": 100})

    invalid_state(response, f"A {state} charge cannot be refunded")
    assert Refund.objects.count() == refunds_before
    assert get(api, charge["id"]) == charge


def test_refunds_of_someone_elses_or_an_unknown_charge_are_404(api, other_api):
    foreign = create(other_api, "CREDIT_CARD")

    not_found(refund(api, foreign["id"], {"amount": 100}))
    not_found(api.get(f"/payin/{foreign['id']}/refunds"))
    not_found(refund(api, "nope"))
    not_found(api.get("/payin/nope/refunds"))
    not_found(api.get("/payin/01a1fb90-0000-7000-8000-000000000000/refunds"))
    assert get(other_api, foreign["id"]) == foreign


def test_a_refund_larger_than_the_available_balance_is_refused_and_leaves_nothing(api):
    drained = paid_pix(api, 10000, referenceId="drained")  # net 9901
    card = create(api, "CREDIT_CARD", amount=10000)  # net 9562
    open_dispute(api, drained["id"], "med")  # held: available 9901 + 9562 - 10000 = 9463
    counts = (Refund.objects.count(), LedgerEntry.objects.count(), Event.objects.count())

    response = refund(api, card["id"], {"amount": 9464})

    error(response, 400, type="invalid_request_error", code="insufficient_balance", message="Insufficient balance")
    assert (Refund.objects.count(), LedgerEntry.objects.count(), Event.objects.count()) == counts
    assert get(api, card["id"]) == card
    assert balance(api)["available"] == 9463
    # Exactly the available balance can be refunded.
    assert refund(api, card["id"], {"amount": 9463}).status_code == 201
    assert balance(api)["available"] == 0
    assert_ledger_balanced()


def test_an_idempotent_refund_moves_money_once(api):
    paid_pix(api, 20000, referenceId="funding")
    card = create(api, "CREDIT_CARD", amount=10000)

    first = refund(api, card["id"], {"amount": 2500}, HTTP_IDEMPOTENCY_KEY="refund-1")
    again = refund(api, card["id"], {"amount": 2500}, HTTP_IDEMPOTENCY_KEY="refund-1")

    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert Refund.objects.count() == 1
    assert get(api, card["id"])["refundedAmount"] == 2500
    assert_ledger_balanced()


def test_a_card_refund_rail_error_leaves_a_pending_refund_that_reconciliation_fails(api, monkeypatch):
    """Issue 12: the refund and its hold are committed before the rail call, so a rail that does not answer (here it
    refused the connection: the refund never reached it) leaves the refund PENDING, not a 502 with nothing behind.
    The reconciliation asks under the same key, hears that the rail never had it, and gives the money back."""
    card = create(api, "CREDIT_CARD", amount=10000)
    available = balance(api)["available"]

    def refuse(self, **kwargs):
        raise RailError("connection refused")

    monkeypatch.setattr(SimulatorRail, "refund_create", refuse)

    response = refund(api, card["id"], {"amount": 100})

    assert response.status_code == 201
    pending = response.json()
    assert pending == expected_refund(pending, payin_id=card["id"], amount=100, status="PENDING")
    assert get(api, card["id"])["refundedAmount"] == 100
    assert balance(api)["available"] == available - 100  # held in flight
    assert events_of(api, pending["id"]) == []
    monkeypatch.undo()

    assert refunds.refunds_reconcile(older_than=timedelta(0)) == 1

    [failed] = api.get(f"/payin/{card['id']}/refunds").json()["data"]
    assert failed == {**pending, "status": "FAILED", "failureCode": "rail_error", "updatedAt": failed["updatedAt"]}
    assert get(api, card["id"]) == {**card, "updatedAt": get(api, card["id"])["updatedAt"]}
    assert balance(api)["available"] == available
    assert_ledger_balanced()


def test_a_refund_rail_timeout_leaves_a_pending_refund_to_reconcile(api, monkeypatch):
    card = create(api, "CREDIT_CARD", amount=10000)
    sent: list[str] = []
    original = SimulatorRail.refund_create

    def times_out(self, **kwargs):
        sent.append(kwargs["key"])
        original(self, **kwargs)
        raise RailTimeout("no answer within 10 s")

    monkeypatch.setattr(SimulatorRail, "refund_create", times_out)

    response = refund(api, card["id"], {"amount": 100})

    # The rail was asked to refund under this key: our books must still know about it.
    assert len(sent) == 1
    assert Refund.objects.filter(pk=sent[0]).exists()
    assert response.status_code == 201
    assert response.json()["status"] == "PENDING"
    # Reconciliation asks under the same key and records what the rail did: refunded once.
    asked: list[str] = []
    status_of = SimulatorRail.refund_status
    monkeypatch.setattr(SimulatorRail, "refund_status",
                        lambda self, *, key, **rest: asked.append(key) or status_of(self, key=key, **rest))
    assert refunds.refunds_reconcile(older_than=timedelta(0)) == 1
    assert asked == sent
    assert Refund.objects.get(pk=sent[0]).status == "SUCCEEDED"
    assert get(api, card["id"])["status"] == "PARTIALLY_REFUNDED"
    assert LedgerTransaction.objects.filter(object_id=sent[0]).count() == 2  # held, then out through the rail
    assert_ledger_balanced()


# === Pix =============================================================================================================
def test_a_pix_refund_is_pending_until_the_rail_confirms(api, settings):
    paid_pix(api, 10000, referenceId="funding")
    charge = paid_pix(api, 10000)

    response = refund(api, charge["id"], {"reason": "duplicate order"})

    assert response.status_code == 201
    pending = response.json()
    assert pending == expected_refund(pending, payin_id=charge["id"], amount=10000, status="PENDING",
                                      reason="duplicate order")
    # The money is out of available and in flight; the charge is PAID until the rail confirms.
    after_request = get(api, charge["id"])
    assert after_request == {**charge, "refundedAmount": 10000, "updatedAt": after_request["updatedAt"]}
    assert balance(api)["available"] == 9901 * 2 - 10000
    assert statement(api)[0] == refund_line(10000, 9901 * 2 - 10000, refund_id=pending["id"], payin_id=charge["id"])
    assert events_of(api, pending["id"]) == []
    # More than is left is refused while the first refund is in flight.
    validation(refund(api, charge["id"], {"amount": 1}), [
        {"param": "amount", "code": "refund_exceeds_remaining",
         "message": "At most 0 cents of this charge can still be refunded."}])
    assert refunds.refunds_reconcile() == 0  # the simulator confirms after SIMULATOR_AUTO_CONFIRM_SECONDS
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0

    assert refunds.refunds_reconcile() == 1
    assert refunds.refunds_reconcile() == 0

    [succeeded] = api.get(f"/payin/{charge['id']}/refunds").json()["data"]
    assert succeeded == {**pending, "status": "SUCCEEDED", "updatedAt": succeeded["updatedAt"]}
    refunded = get(api, charge["id"])
    assert refunded == {**after_request, "status": "REFUNDED", "updatedAt": refunded["updatedAt"]}
    [refund_event] = events_of(api, pending["id"])
    assert refund_event == envelope(refund_event, type="refund.succeeded", obj=succeeded, previous_status="PENDING")
    latest = events_of(api, charge["id"])[0]
    assert latest == envelope(latest, type="payin.refunded", obj=refunded, previous_status="PAID")
    # Confirming moves the money from in flight to the rail: the statement has no second line.
    assert balance(api)["available"] == 9901 * 2 - 10000
    assert [line_["type"] for line_ in statement(api)].count("refund") == 1
    assert LedgerTransaction.objects.filter(object_id=pending["id"]).count() == 2
    assert_ledger_balanced()


def test_a_partial_pix_refund_makes_the_charge_partially_refunded(api, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    charge = paid_pix(api, 10000)

    created = refund(api, charge["id"], {"amount": 4000}).json()
    refunds.refunds_reconcile(older_than=timedelta(0))

    assert created["status"] == "PENDING"
    partially = get(api, charge["id"])
    assert (partially["status"], partially["refundedAmount"]) == ("PARTIALLY_REFUNDED", 4000)
    latest = events_of(api, charge["id"])[0]
    assert latest == envelope(latest, type="payin.partially_refunded", obj=partially, previous_status="PAID")
    assert balance(api)["available"] == 9901 - 4000
    assert_ledger_balanced()


def test_a_failed_pix_refund_returns_the_money(api):
    charge = paid_pix(api, 10000)
    pending = refund(api, charge["id"], {"amount": 4000}).json()
    body = json.dumps({"id": "rf-1", "type": "refund.failed", "key": pending["id"],
                       "failureCode": "rejected_by_bank"}).encode()

    row = notification_receive(rail_name="simulator", body=body)

    assert row.outcome == "resolved"
    [failed] = api.get(f"/payin/{charge['id']}/refunds").json()["data"]
    assert failed == {**pending, "status": "FAILED", "failureCode": "rejected_by_bank",
                      "updatedAt": failed["updatedAt"]}
    [event] = events_of(api, pending["id"])
    assert event == envelope(event, type="refund.failed", obj=failed, previous_status="PENDING")
    after = get(api, charge["id"])
    assert (after["status"], after["refundedAmount"]) == ("PAID", 0)
    assert balance(api)["available"] == 9901
    assert statement(api)[0] == line("refund", 4000, 9901, object_type="refund", object_id=pending["id"],
                                     description="Refund failed: money returned to the balance")
    # The money is back: it can be refunded again.
    assert refund(api, charge["id"], {"amount": 4000}).status_code == 201
    assert_ledger_balanced()


def test_the_refund_list_is_a_page_newest_first_like_every_list(api):
    paid_pix(api, 20000, referenceId="funding")
    card = create(api, "CREDIT_CARD", amount=10000)
    assert api.get(f"/payin/{card['id']}/refunds").json() == {"data": [], "hasMore": False, "nextCursor": None}

    made = [refund(api, card["id"], {"amount": amount}).json() for amount in (100, 200, 300, 400, 500)]

    first = api.get(f"/payin/{card['id']}/refunds", {"limit": 2})
    assert first.status_code == 200
    assert first.json() == {"data": [made[4], made[3]], "hasMore": True, "nextCursor": first.json()["nextCursor"]}
    second = api.get(f"/payin/{card['id']}/refunds", {"limit": 2, "cursor": first.json()["nextCursor"]})
    assert second.json() == {"data": [made[2], made[1]], "hasMore": True, "nextCursor": second.json()["nextCursor"]}
    last = api.get(f"/payin/{card['id']}/refunds", {"limit": 2, "cursor": second.json()["nextCursor"]})
    assert last.json() == {"data": [made[0]], "hasMore": False, "nextCursor": None}
    assert api.get(f"/payin/{card['id']}/refunds").json() == {
        "data": made[::-1], "hasMore": False, "nextCursor": None}


def test_the_refund_list_refuses_bad_parameters(api):
    paid_pix(api, 20000, referenceId="funding")
    card = create(api, "CREDIT_CARD", amount=10000)

    error(api.get(f"/payin/{card['id']}/refunds", {"status": "SUCCEEDED"}), 400, type="invalid_request_error",
          code="unknown_field", message="The request has unknown fields", param="status", details=[
              {"param": "status", "code": "unknown_field", "message": "Unknown query parameter 'status'."}])
    validation(api.get(f"/payin/{card['id']}/refunds", {"limit": 0}), [
        {"param": "limit", "code": "invalid_limit", "message": "limit must be an integer from 1 to 100."}])
    validation(api.get(f"/payin/{card['id']}/refunds", {"cursor": "not-ours"}), [
        {"param": "cursor", "code": "invalid_cursor", "message": "The cursor is not one this API returned."}])


def test_a_pix_refund_is_committed_and_answered_when_the_broker_is_down(api, monkeypatch,
                                                                        django_capture_on_commit_callbacks):
    """The refunds service asks a task to confirm the refund when the rail answered PENDING; a broker that is down
    must not turn the committed refund into a 500 (a client would refund again). The periodic reconcile confirms it
    later."""
    from payments.payins import tasks

    paid_pix(api, 10000, referenceId="funding")
    charge = paid_pix(api, 10000)

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.refund_reconcile, "apply_async", broker_down)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = refund(api, charge["id"], {"amount": 4000})

    assert len(callbacks) >= 1  # the confirmation task was due to be sent, and its failure was swallowed
    assert response.status_code == 201
    assert response.json()["status"] == "PENDING"
    assert Refund.objects.get().status == "PENDING"


def test_a_med_while_a_pix_refund_is_pending_disputes_only_the_rest(api):
    """Issue 14: the money is never returned twice. A pending refund holds its own money in flight, so a MED opened
    meanwhile holds what is left; if the refund then fails, its money comes back to the balance (the payer may ask
    again), and a lost MED returns only its own amount."""
    paid_pix(api, 20000, referenceId="funding")  # net 19802
    charge = paid_pix(api, 10000)  # net 9901
    pending = refund(api, charge["id"], {"amount": 4000}).json()
    assert pending["status"] == "PENDING"

    dispute = open_dispute(api, charge["id"], "med")

    assert dispute["amount"] == 6000
    assert balance(api)["available"] == 19802 + 9901 - 4000 - 6000
    refunds.refund_resolve(refund_id=pending["id"], status="FAILED", failure_code="rail_error")
    assert balance(api)["available"] == 19802 + 9901 - 6000
    decide(api, dispute["id"], "lose")
    after = get(api, charge["id"])
    assert (after["status"], after["refundedAmount"]) == ("PARTIALLY_REFUNDED", 6000)
    assert balance(api)["available"] == 19802 + 9901 - 6000
    assert_ledger_balanced()


def test_a_med_while_a_refund_of_everything_is_pending_is_refused(api):
    paid_pix(api, 20000, referenceId="funding")
    charge = paid_pix(api, 10000)
    assert refund(api, charge["id"], {"amount": 10000}).json()["status"] == "PENDING"

    response = api.post(f"/sandbox/payin/{charge['id']}/simulate", {"action": "med"}, format="json")

    invalid_state(response, "Nothing is left of this charge to dispute: it was refunded")
    assert_ledger_balanced()
