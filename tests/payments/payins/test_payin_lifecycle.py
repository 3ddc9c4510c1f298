"""A charge's life after creation, through the HTTP API and the jobs (SPEC §3.3, §5, §6.1, §7, §8): cancel, the
sandbox controls, expiry, card settlement, card rail timeouts and errors, and incoming rail notifications."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from accounts.models import AccountEvent
from payments.models import (
    CardToken,
    Dispute,
    LedgerEntry,
    LedgerTransaction,
    Payin,
    RailNotification,
    UnmatchedPayment,
)
from payments.payins import cards as card_charges
from payments.payins import services as payins
from payments.payins.notifications import notification_receive
from payments.rails.base import InvalidNotification, RailError, RailTimeout
from payments.rails.simulator import SimulatorRail
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.disputes.helpers import charge_back
from tests.payments.payins.test_payin_api import (
    NOW,
    assert_ledger_balanced,
    balance,
    card_with,
    create,
    envelope,
    error,
    events_of,
    expected_card,
    expected_charge,
    get,
    invalid_state,
    line,
    not_found,
    paid_pix,
    payin_body,
    simulate,
    statement,
    validation,
)
from webhooks.models import Event


@pytest.fixture(autouse=True)
def _api_settings(settings):
    settings.API_RATE_LIMIT = 1_000_000
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349
    settings.CARD_SETTLEMENT_DAYS = 30


@pytest.fixture
def live_api(api_client_for, merchant):
    return api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))


@pytest.fixture
def other_api(api_client_for, db):
    return api_client_for(*ApiKeyFactory.with_secret(merchant=MerchantFactory(), livemode=False))


def patch_timezone_now(monkeypatch, when: datetime) -> None:
    monkeypatch.setattr(timezone, "now", lambda: when)


def types_of(events: list[dict]) -> list[tuple[str, str | None]]:
    return [(event["type"], event["data"]["previousStatus"]) for event in events]


# === 6. Cancel =======================================================================================================
@pytest.mark.parametrize("method", ["PIX", "BOLETO"])
def test_cancel_a_pending_charge(api, method):
    created = create(api, method)

    response = api.post(f"/payin/{created['id']}/cancel")

    assert response.status_code == 200
    canceled = response.json()
    assert canceled == {**created, "status": "CANCELED", "updatedAt": canceled["updatedAt"]}
    assert created["updatedAt"] <= canceled["updatedAt"]
    assert get(api, created["id"]) == canceled
    latest, first = events_of(api, created["id"])
    assert latest == envelope(latest, type="payin.canceled", obj=canceled, previous_status="PENDING")
    assert first == envelope(first, type="payin.created", obj=created, previous_status=None)


def test_a_cancel_is_attributed_to_the_key_pair_in_the_audit_log(api, merchant, test_key):
    created = create(api, "PIX")

    assert api.post(f"/payin/{created['id']}/cancel").status_code == 200

    [entry] = AccountEvent.objects.filter(merchant=merchant, action=AccountEvent.Action.CHARGE_CANCELED)
    assert (entry.actor, entry.actor_key, entry.obj_type, entry.obj_id, entry.after) == (
        None, test_key[0].public_key, "payin", created["id"], {"status": "CANCELED"})


def test_cancel_twice_is_409_and_writes_no_second_event(api):
    created = create(api, "PIX")
    api.post(f"/payin/{created['id']}/cancel")

    response = api.post(f"/payin/{created['id']}/cancel")

    invalid_state(response, "A charge in status CANCELED cannot become CANCELED")
    assert len(events_of(api, created["id"])) == 2


def test_cancel_a_card_charge_is_409(api):
    paid = create(api, "CREDIT_CARD")

    invalid_state(api.post(f"/payin/{paid['id']}/cancel"), "Card charges cannot be canceled; refund them instead")
    assert get(api, paid["id"]) == paid


def test_cancel_a_paid_or_expired_charge_is_409(api):
    paid = paid_pix(api, 1000)
    expired = simulate(api, create(api, "BOLETO")["id"], "expire")

    invalid_state(api.post(f"/payin/{paid['id']}/cancel"), "A charge in status PAID cannot become CANCELED")
    invalid_state(api.post(f"/payin/{expired['id']}/cancel"), "A charge in status EXPIRED cannot become CANCELED")
    assert get(api, paid["id"]) == paid
    assert get(api, expired["id"]) == expired


def test_cancel_someone_elses_or_an_unknown_charge_is_404(api, other_api, live_api):
    foreign = create(other_api, "PIX")
    live = create(live_api, "PIX")

    not_found(api.post(f"/payin/{foreign['id']}/cancel"))
    not_found(api.post(f"/payin/{live['id']}/cancel"))
    not_found(api.post("/payin/01a1fb90-0000-7000-8000-000000000000/cancel"))
    not_found(api.post("/payin/nope/cancel"))
    assert get(other_api, foreign["id"])["status"] == "PENDING"


def test_cancel_refuses_unknown_fields(api):
    created = create(api, "PIX")

    response = api.post(f"/payin/{created['id']}/cancel", {"reason": "typo"}, format="json")

    error(response, 400, type="invalid_request_error", code="unknown_field", message="The request has unknown fields",
          param="reason", details=[{"param": "reason", "code": "unknown_field", "message": "Unknown field 'reason'."}])
    assert get(api, created["id"])["status"] == "PENDING"


# === 7. Sandbox ======================================================================================================
@pytest.mark.parametrize(("method", "fee", "description"), [("PIX", 99, "PIX charge"),
                                                            ("BOLETO", 349, "BOLETO charge")])
def test_sandbox_pay_credits_the_net_with_statement_lines_and_event(api, method, fee, description):
    created = create(api, method, amount=10000, referenceId="order-9")

    paid = simulate(api, created["id"], "pay")

    # A paid boleto says what the payer paid (the amount: no fine on time).
    paid_object = {method.lower(): {**created[method.lower()], "paidAmount": 10000} if method == "BOLETO"
                   else created[method.lower()]}
    assert paid == {**created, "status": "PAID", "paidAt": paid["paidAt"], "updatedAt": paid["updatedAt"],
                    **paid_object}
    assert paid == expected_charge(paid, method=method, amount=10000, fee=fee, status="PAID", paid=True,
                                   reference_id="order-9", **paid_object)
    assert get(api, created["id"]) == paid
    assert balance(api) == {"available": 10000 - fee, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}
    assert statement(api) == [
        line("payin_fee", -fee, 10000 - fee, object_id=created["id"], reference_id="order-9",
             description=description),
        line("payin", 10000, 10000, object_id=created["id"], reference_id="order-9", description=description),
    ]
    latest, first = events_of(api, created["id"])
    assert latest == envelope(latest, type="payin.paid", obj=paid, previous_status="PENDING")
    assert first == envelope(first, type="payin.created", obj=created, previous_status=None)
    assert_ledger_balanced()


def test_sandbox_pay_twice_credits_once_and_the_second_payment_is_unmatched(api):
    paid = paid_pix(api, 10000)

    response = api.post(f"/sandbox/payin/{paid['id']}/simulate", {"action": "pay"}, format="json")

    [duplicate] = UnmatchedPayment.objects.all()
    # The charge itself does not change; the answer names the payment that settled nothing (issue 37, item 14).
    assert response.status_code == 200 and response.json() == {**paid, "unmatchedPayment": {
        "id": str(duplicate.pk), "kind": "DUPLICATE", "amount": 10000, "status": "REFUND_PENDING"}}
    assert balance(api)["available"] == 9901
    assert LedgerTransaction.objects.filter(object_id=paid["id"]).count() == 1
    # DUPLICATE goes back to the payer by default: held, then on its way back (issue 14).
    assert (duplicate.kind, duplicate.status, duplicate.amount, str(duplicate.payin_id)) == (
        "DUPLICATE", "REFUND_PENDING", 10000, paid["id"])


def test_sandbox_pay_a_card_is_409_and_a_canceled_charge_makes_an_unmatched_payment(api):
    card = create(api, "CREDIT_CARD")
    canceled = create(api, "PIX")
    api.post(f"/payin/{canceled['id']}/cancel")

    invalid_state(api.post(f"/sandbox/payin/{card['id']}/simulate", {"action": "pay"}, format="json"),
                  "A PAID CREDIT_CARD charge cannot be paid")
    response = api.post(f"/sandbox/payin/{canceled['id']}/simulate", {"action": "pay"}, format="json")
    after_cancel = UnmatchedPayment.objects.get()
    assert response.status_code == 200 and response.json() == {
        **api.get(f"/payin/{canceled['id']}").json(),
        "unmatchedPayment": {"id": str(after_cancel.pk), "kind": "AFTER_CANCEL", "amount": canceled["amount"],
                             "status": "REFUND_PENDING"}}
    assert response.json()["status"] == "CANCELED"


@pytest.mark.parametrize("method", ["PIX", "BOLETO"])
def test_sandbox_expire(api, method):
    created = create(api, method)

    expired = simulate(api, created["id"], "expire")

    assert expired == {**created, "status": "EXPIRED", "updatedAt": expired["updatedAt"]}
    assert get(api, created["id"]) == expired
    latest, _ = events_of(api, created["id"])
    assert latest == envelope(latest, type="payin.expired", obj=expired, previous_status="PENDING")
    assert balance(api)["available"] == 0


def test_sandbox_expire_a_paid_or_card_charge_is_409(api):
    paid = paid_pix(api, 1000)
    card = create(api, "CREDIT_CARD")

    invalid_state(api.post(f"/sandbox/payin/{paid['id']}/simulate", {"action": "expire"}, format="json"),
                  "A charge in status PAID cannot become EXPIRED")
    invalid_state(api.post(f"/sandbox/payin/{card['id']}/simulate", {"action": "expire"}, format="json"),
                  "Card charges do not expire")


def test_a_payment_after_expiry_is_still_credited(api):
    created = create(api, "PIX", amount=10000)
    simulate(api, created["id"], "expire")

    paid = simulate(api, created["id"], "pay")

    assert paid == {**created, "status": "PAID", "paidAt": paid["paidAt"], "updatedAt": paid["updatedAt"]}
    assert types_of(events_of(api, created["id"])) == [("payin.paid", "EXPIRED"), ("payin.expired", "PENDING"),
                                                       ("payin.created", None)]
    latest = events_of(api, created["id"])[0]
    assert latest == envelope(latest, type="payin.paid", obj=paid, previous_status="EXPIRED")
    assert balance(api)["available"] == 9901
    assert_ledger_balanced()


@pytest.mark.parametrize("method", ["PIX", "CREDIT_CARD"])
def test_a_sandbox_chargeback_or_med_lost_takes_the_whole_amount_from_available(api, method):
    """Issue 14: the sandbox opens a dispute (chargeback: a card; med: a Pix), which holds the amount; lost, the
    amount goes to the payer and the charge becomes CHARGEBACK (card) or REFUNDED (MED). Fees are not returned."""
    charge = paid_pix(api, 10000) if method == "PIX" else create(api, "CREDIT_CARD", amount=10000)
    net = charge["netAmount"]

    after = charge_back(api, charge["id"])

    status = "REFUNDED" if method == "PIX" else "CHARGEBACK"
    refunded = 10000 if method == "PIX" else 0
    assert after == {**charge, "status": status, "refundedAmount": refunded, "updatedAt": after["updatedAt"]}
    # Fees are not returned: the balance goes negative by the fee.
    assert balance(api)["available"] == net - 10000
    latest = events_of(api, charge["id"])[0]
    assert latest == envelope(latest, type=f"payin.{status.lower()}", obj=after, previous_status="PAID")
    assert_ledger_balanced()


def test_sandbox_dispute_of_a_charged_back_boleto_pending_or_wrong_method_charge_is_409(api):
    charged_back = charge_back(api, create(api, "CREDIT_CARD", amount=1000)["id"])
    paid_boleto = simulate(api, create(api, "BOLETO")["id"], "pay")
    pending = create(api, "PIX")
    pix = paid_pix(api, 1000)

    for payin_id, action, message in [
            (charged_back["id"], "chargeback", "A CHARGEBACK charge cannot be disputed"),
            (paid_boleto["id"], "chargeback", "BOLETO payments cannot be disputed"),
            (pending["id"], "med", "A PENDING charge cannot be disputed"),
            (pix["id"], "chargeback", "A PIX charge cannot have a CHARGEBACK dispute")]:
        response = api.post(f"/sandbox/payin/{payin_id}/simulate", {"action": action}, format="json")
        invalid_state(response, message)
    assert balance(api)["available"] == (1000 - 79) - 1000 + (5000 - 349) + (1000 - 10)
    assert_ledger_balanced()


@pytest.mark.parametrize(("body", "details"), [
    ({"action": "refund"}, [{"param": "action", "code": "invalid_choice",
                             "message": "Must be one of pay, expire, chargeback, med."}]),
    ({}, [{"param": "action", "code": "required", "message": "This field is required."}]),
    ({"action": 1}, [{"param": "action", "code": "invalid", "message": "Must be a JSON string."}]),
])
def test_sandbox_unknown_action_is_400(api, body, details):
    created = create(api, "PIX")

    validation(api.post(f"/sandbox/payin/{created['id']}/simulate", body, format="json"), details)
    assert get(api, created["id"]) == created


def test_sandbox_refuses_unknown_fields(api):
    created = create(api, "PIX")

    response = api.post(f"/sandbox/payin/{created['id']}/simulate", {"action": "pay", "color": 1}, format="json")

    error(response, 400, type="invalid_request_error", code="unknown_field", message="The request has unknown fields",
          param="color", details=[{"param": "color", "code": "unknown_field", "message": "Unknown field 'color'."}])
    assert get(api, created["id"]) == created


def test_sandbox_with_a_live_key_is_403(live_api):
    live = create(live_api, "PIX")

    response = live_api.post(f"/sandbox/payin/{live['id']}/simulate", {"action": "pay"}, format="json")

    error(response, 403, type="permission_error", code="test_mode_only",
          message="Sandbox controls work with test keys only")
    assert get(live_api, live["id"]) == live


def test_sandbox_on_someone_elses_or_a_live_charge_is_404(api, other_api, live_api):
    foreign = create(other_api, "PIX")
    live = create(live_api, "PIX")

    for payin_id in (foreign["id"], live["id"], "01a1fb90-0000-7000-8000-000000000000", "nope"):
        not_found(api.post(f"/sandbox/payin/{payin_id}/simulate", {"action": "pay"}, format="json"))
    assert get(other_api, foreign["id"]) == foreign
    assert LedgerEntry.objects.count() == 0


# === 9. Jobs =========================================================================================================
def test_payins_expire_expires_pix_past_expiration_and_boletos_past_due_date_only(api, monkeypatch):
    # Created at NOW: 2025-11-21 01:30:15 UTC, 2025-11-20 in São Paulo, so boletos are due 2025-11-23 by default.
    patch_timezone_now(monkeypatch, NOW)
    pix_1h = create(api, "PIX")
    pix_2h = create(api, "PIX", pix={"expiresIn": 7200})
    boleto_23 = create(api, "BOLETO")
    boleto_25 = create(api, "BOLETO", boleto={"dueDate": "2025-11-25"})
    card = create(api, "CREDIT_CARD")
    canceled = create(api, "PIX")
    api.post(f"/payin/{canceled['id']}/cancel")
    monkeypatch.undo()
    paid = paid_pix(api, 1000)  # created now, long after NOW
    Payin.objects.filter(pk=paid["id"]).update(pix_expires_at=NOW)
    statuses = {"1h": pix_1h, "2h": pix_2h, "b23": boleto_23, "b25": boleto_25, "card": card, "canceled": canceled,
                "paid": paid}

    def now_statuses():
        return {name: get(api, charge["id"])["status"] for name, charge in statuses.items()}

    assert payins.payins_expire(now=NOW + timedelta(seconds=3599)) == 0
    assert payins.payins_expire(now=NOW + timedelta(seconds=3600)) == 1
    assert now_statuses() == {"1h": "EXPIRED", "2h": "PENDING", "b23": "PENDING", "b25": "PENDING", "card": "PAID",
                              "canceled": "CANCELED", "paid": "PAID"}
    # 2025-11-23 23:59:59 in São Paulo (already the 24th in UTC): the boleto due on the 23rd is not past due yet.
    assert payins.payins_expire(now=datetime(2025, 11, 24, 2, 59, 59, tzinfo=UTC)) == 1
    assert now_statuses()["b23"] == "PENDING"
    assert payins.payins_expire(now=datetime(2025, 11, 24, 3, 0, tzinfo=UTC)) == 1
    assert payins.payins_expire(now=datetime(2025, 11, 24, 3, 0, tzinfo=UTC)) == 0
    assert now_statuses() == {"1h": "EXPIRED", "2h": "EXPIRED", "b23": "EXPIRED", "b25": "PENDING", "card": "PAID",
                              "canceled": "CANCELED", "paid": "PAID"}
    for charge in (pix_1h, pix_2h, boleto_23):
        latest = events_of(api, charge["id"])[0]
        assert latest == envelope(latest, type="payin.expired", obj=get(api, charge["id"]), previous_status="PENDING")
    assert Event.objects.filter(type="payin.expired").count() == 3


def test_card_settlement_in_live_mode_goes_to_pending_then_available(db, api_client_for):
    merchant = MerchantFactory(card_settlement_days=30)
    live = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))

    charge = create(live, "CREDIT_CARD", amount=10000, card=card_with("4242424242424242"))

    assert (charge["status"], charge["livemode"], charge["netAmount"]) == ("PAID", True, 9562)
    assert balance(live) == {"available": 0, "pending": 9562, "held": 0, "currency": "BRL", "livemode": True}
    assert statement(live) == [
        line("payin_fee", -438, 9562, object_id=charge["id"], description="CREDIT_CARD charge", balance="pending"),
        line("payin", 10000, 10000, object_id=charge["id"], description="CREDIT_CARD charge", balance="pending"),
    ]
    paid_at = datetime.fromisoformat(charge["paidAt"].replace("Z", "+00:00"))
    assert card_charges.card_settlements_release(now=paid_at + timedelta(days=29)) == 0
    assert balance(live)["pending"] == 9562

    assert card_charges.card_settlements_release(now=paid_at + timedelta(days=31)) == 1
    assert card_charges.card_settlements_release(now=paid_at + timedelta(days=31)) == 0

    assert balance(live) == {"available": 9562, "pending": 0, "held": 0, "currency": "BRL", "livemode": True}
    assert statement(live)[:2] == [
        line("settlement", 9562, 9562, object_id=charge["id"], description="Card settlement", balance="available"),
        line("settlement", -9562, 0, object_id=charge["id"], description="Card settlement", balance="pending"),
    ]
    assert get(live, charge["id"]) == charge
    assert_ledger_balanced()


def test_test_mode_cards_are_available_at_once_and_never_released_again(api):
    create(api, "CREDIT_CARD", amount=10000)

    assert card_charges.card_settlements_release(now=timezone.now() + timedelta(days=400)) == 0

    assert balance(api) == {"available": 9562, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}


@pytest.fixture
def rail_calls() -> list[str]:
    """The ids the card rail was asked to authorize."""
    return []


def card_rail_times_out(monkeypatch, calls: list[str], *, reach_network: bool = True) -> None:
    """The card rail does the operation (or not) but its answer never arrives."""
    original = SimulatorRail.card_authorize

    def card_authorize(self, **kwargs):
        calls.append(kwargs["key"])
        if reach_network:
            original(self, **kwargs)
        raise RailTimeout("no answer within 10 s")

    monkeypatch.setattr(SimulatorRail, "card_authorize", card_authorize)


def test_a_card_rail_timeout_leaves_the_charge_pending_and_reconciliation_pays_it(api, monkeypatch, rail_calls):
    card_rail_times_out(monkeypatch, rail_calls)

    response = api.post("/payin", payin_body("CREDIT_CARD", amount=10000), format="json")

    assert response.status_code == 201
    pending = response.json()
    assert rail_calls == [pending["id"]]
    assert pending == expected_charge(pending, method="CREDIT_CARD", amount=10000, fee=438, status="PENDING",
                                      card=expected_card(pending, number="4111111111111111", brand="visa",
                                                         tokenized=False),
                                      authorizationCode=None)
    [created] = events_of(api, pending["id"])
    assert created == envelope(created, type="payin.created", obj=pending, previous_status=None)
    assert balance(api)["available"] == 0
    monkeypatch.undo()
    assert card_charges.card_charges_reconcile() == 0  # younger than 30 s: the rail may still answer

    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1
    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 0

    paid = get(api, pending["id"])
    assert paid == {**pending, "status": "PAID", "paidAt": paid["paidAt"], "updatedAt": paid["updatedAt"],
                    "authorizationCode": paid["authorizationCode"]}
    assert paid["paidAt"] is not None and paid["authorizationCode"] is not None
    latest = events_of(api, pending["id"])[0]
    assert latest == envelope(latest, type="payin.paid", obj=paid, previous_status="PENDING")
    assert balance(api)["available"] == 9562
    assert LedgerTransaction.objects.filter(object_id=pending["id"]).count() == 1
    assert_ledger_balanced()


def test_a_card_answer_recorded_first_by_reconciliation_is_kept_and_the_request_writes_no_token(api, monkeypatch):
    # The rail answers the request slowly: meanwhile reconciliation asks under the same key and records PAID. The
    # request's own answer then finds nothing to move: no second payin.paid, no second movement, no card token
    # (the token is written only with the request's payin.paid event).
    original = SimulatorRail.card_authorize

    def slow_answer(self, **kwargs):
        answer = original(self, **kwargs)
        assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1
        return answer

    monkeypatch.setattr(SimulatorRail, "card_authorize", slow_answer)

    response = api.post("/payin", payin_body("CREDIT_CARD", amount=10000), format="json")

    assert response.status_code == 201
    paid = response.json()
    assert paid == get(api, paid["id"])
    assert paid["status"] == "PAID" and paid["card"]["token"] is None
    assert [event["type"] for event in events_of(api, paid["id"])] == ["payin.paid"]
    assert LedgerTransaction.objects.filter(object_id=paid["id"]).count() == 1
    assert CardToken.objects.count() == 0
    assert balance(api)["available"] == 9562
    assert_ledger_balanced()


def test_a_card_rail_timeout_on_a_declined_card_reconciles_to_failed(api, monkeypatch, rail_calls):
    card_rail_times_out(monkeypatch, rail_calls)
    pending = create(api, "CREDIT_CARD", card=card_with("4000000000009995"))
    monkeypatch.undo()

    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1

    failed = get(api, pending["id"])
    assert failed == {**pending, "status": "FAILED", "updatedAt": failed["updatedAt"],
                      "failureCode": "insufficient_funds", "failureMessage": "The card has insufficient funds."}
    latest = events_of(api, pending["id"])[0]
    assert latest == envelope(latest, type="payin.failed", obj=failed, previous_status="PENDING")
    assert LedgerEntry.objects.count() == 0


def test_a_card_that_never_reached_the_rail_reconciles_to_failed(api, monkeypatch, rail_calls):
    card_rail_times_out(monkeypatch, rail_calls, reach_network=False)
    pending = create(api, "CREDIT_CARD")
    monkeypatch.undo()

    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1

    failed = get(api, pending["id"])
    assert (failed["status"], failed["failureCode"]) == ("FAILED", "processing_error")
    assert LedgerEntry.objects.count() == 0


def test_a_card_rail_error_leaves_the_charge_pending_and_reconciliation_fails_it(api, monkeypatch, rail_calls):
    """Issue 12: the charge is committed PENDING before the rail is called, so a rail that refuses the connection
    (the charge never reached it) is no longer a 502 with nothing behind. The answer is 201 with the charge PENDING
    and its `payin.created` event, the Idempotency-Key keeps that answer, and the reconciliation asks the rail under
    the charge's id, hears that it never had the charge, and fails it: no money moved, no card token was made."""
    def card_authorize(self, **kwargs):
        rail_calls.append(kwargs["key"])
        raise RailError("connection refused")

    monkeypatch.setattr(SimulatorRail, "card_authorize", card_authorize)

    response = api.post("/payin", payin_body("CREDIT_CARD"), format="json", HTTP_IDEMPOTENCY_KEY="k1")
    retry = api.post("/payin", payin_body("CREDIT_CARD"), format="json", HTTP_IDEMPOTENCY_KEY="k1")

    assert response.status_code == 201, response.content
    pending = response.json()
    assert pending == expected_charge(pending, method="CREDIT_CARD", amount=5000, fee=239, status="PENDING",
                                      card=expected_card(pending, number="4111111111111111", brand="visa",
                                                         tokenized=False),
                                      authorizationCode=None)
    # The key was spent on the charge: the retry is its answer again, and the rail was asked once, under its id.
    assert (retry.status_code, retry.json(), retry["Idempotent-Replayed"]) == (201, pending, "true")
    assert rail_calls == [pending["id"]]
    [created] = events_of(api, pending["id"])
    assert created == envelope(created, type="payin.created", obj=pending, previous_status=None)
    assert (Payin.objects.count(), Event.objects.count(), LedgerEntry.objects.count()) == (1, 1, 0)
    assert CardToken.objects.count() == 0
    assert balance(api) == {"available": 0, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}
    monkeypatch.undo()
    assert card_charges.card_charges_reconcile() == 0  # younger than 30 s: its request may still be waiting

    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1
    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 0

    failed = get(api, pending["id"])
    assert failed == {**pending, "status": "FAILED", "updatedAt": failed["updatedAt"],
                      "failureCode": "processing_error",
                      "failureMessage": "An error occurred while processing the card."}
    latest = events_of(api, pending["id"])[0]
    assert latest == envelope(latest, type="payin.failed", obj=failed, previous_status="PENDING")
    assert (Payin.objects.count(), Event.objects.count(), LedgerEntry.objects.count()) == (1, 2, 0)
    assert CardToken.objects.count() == 0
    assert balance(api) == {"available": 0, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}
    # The same key still answers the first answer; a new key is a new, real charge.
    again = api.post("/payin", payin_body("CREDIT_CARD"), format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert (again.status_code, again.json(), again["Idempotent-Replayed"]) == (201, pending, "true")
    charged = api.post("/payin", payin_body("CREDIT_CARD"), format="json", HTTP_IDEMPOTENCY_KEY="k2")
    assert (charged.status_code, charged.json()["status"]) == (201, "PAID")
    assert (Payin.objects.count(), CardToken.objects.count()) == (2, 1)
    assert balance(api)["available"] == 5000 - 239
    assert_ledger_balanced()


@pytest.mark.parametrize(("method", "operation"), [("PIX", "pix_charge_create"), ("BOLETO", "boleto_register")])
def test_a_pix_or_boleto_rail_error_is_502_and_leaves_no_charge(api, monkeypatch, method, operation):
    def refuse(self, **kwargs):
        raise RailError("connection refused")

    monkeypatch.setattr(SimulatorRail, operation, refuse)

    response = api.post("/payin", payin_body(method), format="json")

    assert (Payin.objects.count(), Event.objects.count()) == (0, 0)
    error(response, 502, type="rail_error", code="rail_unavailable",
          message="The payment network is unavailable; nothing was charged. Try again.")


# === 10. Rail notifications ==========================================================================================
def paid_notification(**fields) -> bytes:
    return json.dumps({"id": "sim-evt-1", "type": "payin.paid", **fields}).encode()


def test_a_notification_delivered_twice_credits_once(api):
    charge = create(api, "PIX", amount=10000)
    body = paid_notification(txid=charge["pix"]["txid"], amount=10000)

    first = notification_receive(rail_name="simulator", body=body)
    second = notification_receive(rail_name="simulator", body=body)

    assert first.pk == second.pk
    assert RailNotification.objects.count() == 1
    row = RailNotification.objects.get()
    assert (row.rail, row.dedupe_key, row.body, row.outcome) == ("simulator", "sim-evt-1", body.decode(), "paid")
    assert row.processed_at is not None
    assert LedgerTransaction.objects.filter(object_id=charge["id"]).count() == 1
    assert get(api, charge["id"])["status"] == "PAID"
    assert balance(api)["available"] == 9901
    assert [t for t, _ in types_of(events_of(api, charge["id"]))] == ["payin.paid", "payin.created"]
    assert_ledger_balanced()


def test_the_same_payment_under_another_notification_id_is_not_credited_again(api):
    charge = create(api, "PIX", amount=10000)
    notification_receive(rail_name="simulator", body=paid_notification(txid=charge["pix"]["txid"], amount=10000))

    again = notification_receive(rail_name="simulator", body=paid_notification(
        id="sim-evt-2", txid=charge["pix"]["txid"], amount=10000))

    assert again.outcome == "unmatched or repeated"  # a body naming no payment id: logged, never credited
    assert RailNotification.objects.count() == 2
    assert LedgerTransaction.objects.filter(object_id=charge["id"]).count() == 1
    assert balance(api)["available"] == 9901


def test_a_boleto_notification_is_matched_by_its_nosso_numero(api):
    from payments.formats import boleto

    charge = create(api, "BOLETO", amount=10000)
    nosso_numero = boleto.nosso_numero_from_free_field(charge["boleto"]["barcode"][19:])

    row = notification_receive(rail_name="simulator", body=paid_notification(nossoNumero=nosso_numero, amount=10000))

    assert row.outcome == "paid"
    assert get(api, charge["id"])["status"] == "PAID"
    assert balance(api)["available"] == 10000 - 349


def test_an_unmatched_notification_is_stored_with_its_outcome(api):
    body = paid_notification(txid="A" * 25, amount=10000)

    row = notification_receive(rail_name="simulator", body=body)

    assert (row.dedupe_key, row.body, row.outcome) == ("sim-evt-1", body.decode(),
                                                       "no matching charge: unattributed")
    assert row.processed_at is not None
    assert LedgerEntry.objects.count() == 0


def test_a_payment_of_another_amount_is_not_credited_but_held(api):
    charge = create(api, "PIX", amount=10000)

    row = notification_receive(rail_name="simulator", body=paid_notification(
        txid=charge["pix"]["txid"], amount=9999, endToEndId="E00000000202611251200abcdefghijk"))

    assert row.outcome == "unmatched or repeated"
    assert get(api, charge["id"]) == charge
    assert balance(api) == {"available": 0, "pending": 0, "held": 9999, "currency": "BRL", "livemode": False}
    assert UnmatchedPayment.objects.get().kind == "AMOUNT_MISMATCH"


@pytest.mark.parametrize("body", [b"{not json", b"", b"[]", b'"x"', b'{"type": "payin.paid"}', b"\xff\xfe"])
def test_an_invalid_notification_raises_and_stores_nothing(db, body):
    with pytest.raises(InvalidNotification):
        notification_receive(rail_name="simulator", body=body)

    assert RailNotification.objects.count() == 0


def test_a_chargeback_notification_opens_one_dispute(api):
    charge = paid_pix(api, 10000)
    body = json.dumps({"id": "cb-1", "type": "payin.chargeback", "key": charge["id"], "amount": 10000}).encode()

    first = notification_receive(rail_name="simulator", body=body)
    second = notification_receive(rail_name="simulator", body=json.dumps(
        {"id": "cb-2", "type": "payin.chargeback", "key": charge["id"], "amount": 10000}).encode())

    dispute = Dispute.objects.get()
    assert (first.outcome, second.outcome) == (f"dispute opened {dispute.pk}",
                                               f"ignored: already disputed ({dispute.pk})")
    assert get(api, charge["id"]) == charge  # PAID while the dispute is open
    assert balance(api)["available"] == 9901 - 10000
    assert_ledger_balanced()
