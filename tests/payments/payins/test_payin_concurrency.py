"""Pay-in under concurrency (SPEC §3.3, §5, §8): racing confirmations, refunds, chargebacks, expiries, settlements,
idempotent retries and boleto numbering, on a real PostgreSQL server with real row locks.

Every racer is a thread with its own database connection (`run_in_threads` releases them together). Whatever the
interleaving, a charge moves once per legal transition, its money moves once per successful transition, each
transition writes one event, and `ledger_check` finds nothing (the autouse check runs after each test as well).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import timedelta
from uuid import UUID

import pytest
from django.db.models import Sum
from django.utils import timezone, translation

from core import dates
from payments.disputes import services as disputes
from payments.formats import boleto
from payments.ledger import selectors as ledger_selectors
from payments.ledger import services as ledger
from payments.management.commands.ledger_check import Command as LedgerCheck
from payments.models import (
    AccountKind,
    Dispute,
    LedgerAccount,
    LedgerEntry,
    LedgerTransaction,
    LineType,
    Payin,
    PayinStatus,
    RailNotification,
    Refund,
    RefundStatus,
    SimulatorOperation,
    UnmatchedPayment,
)
from payments.payins import cards as card_charges
from payments.payins import refunds
from payments.payins import sandbox as payin_sandbox
from payments.payins import services as payins
from payments.payins import tasks as payin_tasks
from payments.payins.notifications import notification_receive
from tests.conftest import run_in_threads
from tests.factories import ApiKeyFactory, UserFactory
from webhooks.models import Event

pytestmark = pytest.mark.django_db(transaction=True)

CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
BOLETO_CUSTOMER = {**CUSTOMER, "phone": "11987654321", "address": {
    "street": "Av. Paulista", "number": "1000", "zipCode": "01310-100", "city": "São Paulo", "state": "SP"}}
TEST_CARD = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12",
             "expirationYear": "2099", "cvv": "123"}
LIVE_CARD = {**TEST_CARD, "number": "4539578763621486"}  # Luhn-valid Visa, not a test number


@pytest.fixture(autouse=True)
def _no_rate_limit(settings):
    # The races below fire tens of requests within a second from one key pair; the rate limit is not under test.
    settings.API_RATE_LIMIT = 1_000_000


def body_of(method: str, amount: int = 10_000, *, reference: str = "order-1", **extra) -> dict:
    body = {
        "paymentMethod": method, "amount": amount, "referenceId": reference, "payerIp": "203.0.113.9",
        "isPhysicalProduct": False, "customer": BOLETO_CUSTOMER if method == "BOLETO" else CUSTOMER,
        "items": [{"title": "Caneca", "quantity": 1, "unitPrice": amount}],
    }
    if method == "CREDIT_CARD":
        body["card"] = TEST_CARD
    body.update(extra)
    return body


def create(client, body: dict) -> dict:
    response = client.post("/payin", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def without_fees(merchant) -> None:
    """So that a charge's net is its amount and balances come out round."""
    merchant.pix_fee_bps = merchant.card_fee_bps = merchant.card_fee_fixed = merchant.boleto_fee_fixed = 0
    merchant.save()


def available(merchant, livemode: bool = False) -> int:
    return ledger_selectors.balance_get(merchant=merchant, livemode=livemode).available


def events_of(payin_id) -> Counter:
    return Counter(Event.objects.filter(object_id=str(payin_id)).values_list("type", flat=True))


def credits_of(payin_id) -> int:
    """Ledger movements that credited the charge's amount (one per paid charge, never two)."""
    return (LedgerTransaction.objects.filter(object_type="payin", object_id=str(payin_id), entries__line_type="payin",
                                             entries__amount__gt=0).distinct().count())


def rail_out_of(payin_id) -> int:
    """What left through the rail for a charge: its refunds and its disputes lost or accepted."""
    object_ids = [str(payin_id), *(str(pk) for pk in Refund.objects.filter(payin_id=payin_id).values_list("pk",
                                                                                                             flat=True)),
                  *(str(pk) for pk in Dispute.objects.filter(payin_id=payin_id).values_list("pk", flat=True))]
    return (LedgerEntry.objects.filter(transaction__object_id__in=object_ids, account__kind=AccountKind.RAIL_OUT)
            .aggregate(total=Sum("amount"))["total"] or 0)


def ledger_clean() -> bool:
    problems, _ = LedgerCheck().inspect()
    assert problems == []
    return True


def assert_paid_once(merchant, charge: dict) -> None:
    payin = Payin.objects.get(pk=charge["id"])
    assert payin.status == PayinStatus.PAID
    assert credits_of(payin.pk) == 1
    assert LedgerTransaction.objects.filter(object_type="payin", object_id=str(payin.pk)).count() == 1
    assert available(merchant) == charge["netAmount"]
    assert events_of(payin.pk) == {"payin.created": 1, "payin.paid": 1}
    assert ledger_clean()


def error_code(response) -> str:
    return response.json()["error"]["code"]


def refusal_of(response) -> tuple[int, dict]:
    """A refusal: its status and its whole error body (SPEC §1.1), the request id checked against the response's."""
    error = response.json()["error"]
    assert error.pop("requestId") == response["X-Request-Id"]
    return response.status_code, error


def exceeds_remaining(left: int) -> tuple[int, dict]:
    detail = {"param": "amount", "code": "refund_exceeds_remaining",
              "message": f"At most {left} cents of this charge can still be refunded."}
    return 400, {"type": "invalid_request_error", "code": "validation_error",
                 "message": "The request has invalid fields", "param": "amount", "details": [detail]}


UNDER_DISPUTE = (409, {"type": "conflict", "code": "invalid_state",
                       "message": "A charge under dispute cannot be refunded", "param": None, "details": []})


def cannot_refund(status: str) -> tuple[int, dict]:
    return 409, {"type": "conflict", "code": "invalid_state", "message": f"A {status} charge cannot be refunded",
                 "param": None, "details": []}


INSUFFICIENT_BALANCE = (400, {"type": "invalid_request_error", "code": "insufficient_balance",
                              "message": "Insufficient balance", "param": None, "details": []})


def refund_body(got: dict, *, payin_id: str, amount: int) -> dict:
    """The whole body of a refund the rail answered (card refunds: at once, within the request)."""
    assert got["createdAt"] <= got["updatedAt"], got
    return {"id": got["id"], "payinId": payin_id, "amount": amount, "status": "SUCCEEDED", "reason": None,
            "failureCode": None, "livemode": False, "createdAt": got["createdAt"], "updatedAt": got["updatedAt"]}


def in_flight(merchant) -> int:
    """Money held for refunds (and payouts) the rail has not confirmed yet."""
    return LedgerAccount.objects.get(merchant=merchant, livemode=False, kind=AccountKind.PAYOUTS_IN_FLIGHT).balance


def rail_refunds_of(payin_id) -> list[int]:
    """The amounts the rail was asked to refund for a charge, once per refund (its books, not ours)."""
    return sorted(SimulatorOperation.objects.filter(kind="refund", reference=str(payin_id))
                  .values_list("amount", flat=True))


# --- One Pix charge confirmed many times -----------------------------------------------------------------------------
def test_thirty_concurrent_rail_confirmations_credit_a_pix_charge_once(api, merchant):
    charge = create(api, body_of("PIX"))

    results = run_in_threads(30, lambda i: payins.payin_pay(payin_id=charge["id"]))

    assert [r for r in results if isinstance(r, Exception)] == []
    assert sum(r is not None for r in results) == 1  # the others found it PAID: a no-op, not a second credit
    assert_paid_once(merchant, charge)


def test_thirty_concurrent_notifications_under_distinct_ids_credit_a_pix_charge_once(api, merchant):
    """The rail retries with new notification ids (or two rails report one payment): dedupe keys do not help here,
    the conditional transition does."""
    charge = create(api, body_of("PIX"))
    txid = charge["pix"]["txid"]

    def notify(i: int) -> RailNotification:
        body = json.dumps({"id": f"e2e-{i}", "type": "payin.paid", "txid": txid, "amount": charge["amount"],
                           "endToEndId": "E00000000202611251200samepayment"})
        return notification_receive(rail_name="simulator", body=body.encode())

    results = run_in_threads(30, notify)

    assert [r for r in results if isinstance(r, Exception)] == []
    # One payment (one end-to-end id) told 30 times: it pays the charge once and is never an unmatched payment.
    assert Counter(row.outcome for row in results) == {"paid": 1, "unmatched or repeated": 29}
    assert not UnmatchedPayment.objects.exists()
    assert RailNotification.objects.filter(processed_at__isnull=False).count() == 30
    assert_paid_once(merchant, charge)


def test_thirty_concurrent_notifications_under_one_id_are_stored_and_applied_once(api, merchant):
    charge = create(api, body_of("PIX"))
    body = json.dumps({"id": "e2e-same", "type": "payin.paid", "txid": charge["pix"]["txid"],
                       "amount": charge["amount"]}).encode()

    results = run_in_threads(30, lambda i: notification_receive(rail_name="simulator", body=body))

    assert [r for r in results if isinstance(r, Exception)] == []
    assert {row.pk for row in results} == {RailNotification.objects.get().pk}
    assert RailNotification.objects.get().outcome == "paid"
    assert_paid_once(merchant, charge)


def test_thirty_concurrent_sandbox_payments_credit_a_pix_charge_once_and_the_rest_are_duplicates(
        api, api_client_for, test_key, merchant):
    """Thirty payers pay one code at once (issue 14): each is money of its own at the rail. The charge is credited
    once; the 29 others become DUPLICATE unmatched payments, each recorded once, none lost."""
    charge = create(api, body_of("PIX"))
    clients = [api_client_for(*test_key) for _ in range(30)]

    responses = run_in_threads(30, lambda i: clients[i].post(f"/sandbox/payin/{charge['id']}/simulate",
                                                             {"action": "pay"}, format="json"))

    assert [r for r in responses if isinstance(r, Exception)] == []
    assert Counter(r.status_code for r in responses) == {200: 30}
    assert {r.json()["status"] for r in responses} == {"PAID"}
    assert SimulatorOperation.objects.filter(kind="payin").count() == 30
    assert RailNotification.objects.count() == 30
    assert Counter(UnmatchedPayment.objects.values_list("kind", flat=True)) == {"DUPLICATE": 29}
    assert_paid_once(merchant, charge)


def test_a_late_confirmation_of_an_expired_charge_is_credited_once(api, merchant):
    charge = create(api, body_of("PIX"))
    payins.payin_expire(payin_id=charge["id"])

    results = run_in_threads(10, lambda i: payins.payin_pay(payin_id=charge["id"]))

    assert sum(r is not None for r in results) == 1
    assert Payin.objects.get(pk=charge["id"]).status == PayinStatus.PAID
    assert credits_of(charge["id"]) == 1
    assert events_of(charge["id"]) == {"payin.created": 1, "payin.expired": 1, "payin.paid": 1}
    assert available(merchant) == charge["netAmount"]


# --- Refunds racing each other ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("each", "debit", "expected_ok", "refusals"), [
    # The balance holds all ten; the charge has nothing left once ten are held (each refund is held and committed,
    # then sent to the rail, then its answer recorded). A racer that comes after the last answer is recorded finds
    # the charge REFUNDED, an illegal transition; one that comes before finds nothing left to refund. Both are right.
    (1_000, 0, 10, [exceeds_remaining(0), cannot_refund("REFUNDED")]),
    # What is left of the charge (1000) is less than a racer asks for.
    (3_000, 0, 3, [exceeds_remaining(1_000)]),
    # The balance runs out first.
    (1_000, 5_000, 5, [INSUFFICIENT_BALANCE]),
])
def test_concurrent_refunds_never_exceed_the_charge_or_the_balance(api, api_client_for, test_key, merchant, each, debit,
                                                                   expected_ok, refusals):
    without_fees(merchant)
    charge = create(api, body_of("CREDIT_CARD", 10_000))
    if debit:
        ledger.adjustment_create(merchant=merchant, livemode=False, amount=-debit, reason="test: lower the balance",
                                   staff=UserFactory(is_staff=True))
    assert available(merchant) == 10_000 - debit
    clients = [api_client_for(*test_key) for _ in range(20)]

    responses = run_in_threads(20, lambda i: clients[i].post(f"/payin/{charge['id']}/refunds", {"amount": each},
                                                             format="json"))

    assert [r for r in responses if isinstance(r, Exception)] == []
    created = [r.json() for r in responses if r.status_code == 201]
    assert len(created) == expected_ok
    assert [body for body in created if body != refund_body(body, payin_id=charge["id"], amount=each)] == []
    refused = [refusal_of(r) for r in responses if r.status_code != 201]
    assert len(refused) == 20 - expected_ok
    assert [refusal for refusal in refused if refusal not in refusals] == []
    refunded = each * expected_ok
    payin = Payin.objects.get(pk=charge["id"])
    assert payin.refunded_amount == refunded <= payin.amount
    assert payin.status == (PayinStatus.REFUNDED if refunded == payin.amount else PayinStatus.PARTIALLY_REFUNDED)
    assert sorted(Refund.objects.filter(payin=payin, status=RefundStatus.SUCCEEDED).values_list("pk", flat=True)) == (
        sorted(UUID(body["id"]) for body in created))
    assert Refund.objects.exclude(status=RefundStatus.SUCCEEDED).count() == 0
    # The rail was asked once per refund made, for its amount; each was held, then went out, once.
    assert rail_refunds_of(payin.pk) == [each] * expected_ok
    assert LedgerTransaction.objects.filter(object_type="refund").count() == 2 * expected_ok
    assert available(merchant) == 10_000 - debit - refunded
    assert in_flight(merchant) == 0
    # Not only at the end: no running balance of the available account ever went below zero.
    assert not LedgerEntry.objects.filter(account__merchant=merchant, account__kind=AccountKind.AVAILABLE,
                                          balance_after__lt=0).exists()
    assert rail_out_of(payin.pk) == refunded
    events = events_of(payin.pk)
    assert events["payin.paid"] == 1
    assert events["payin.partially_refunded"] + events["payin.refunded"] == expected_ok
    assert events["payin.refunded"] == (1 if refunded == payin.amount else 0)
    assert Event.objects.filter(type="refund.succeeded").count() == expected_ok
    assert ledger_clean()


# --- Refund, chargeback, expiry and cancel racing on one charge ------------------------------------------------------
def chargeback_notification(payin_id: str, amount: int) -> bytes:
    return json.dumps({"id": f"cb-{payin_id}", "type": "payin.chargeback", "key": payin_id, "amount": amount}).encode()


def test_refunds_and_a_chargeback_racing_on_card_charges_never_return_more_than_the_charge(api, api_client_for,
                                                                                          test_key, merchant):
    """Per charge: a partial refund, a refund of the rest and the rail's chargeback notice, at once. The notice opens
    a dispute for what the refunds held before it left (pending ones included: issue 14), and a charge under dispute
    cannot be refunded; a notice after both refunds finds nothing to dispute. Lost, the dispute returns its amount:
    whatever the order, the payer gets the charge back once, never more."""
    without_fees(merchant)
    payins.payin_pay(payin_id=create(api, body_of("PIX", 80_000, reference="funding"))["id"])
    charges = [create(api, body_of("CREDIT_CARD", 10_000, reference=f"order-{n}")) for n in range(8)]
    clients = [api_client_for(*test_key) for _ in range(len(charges) * 3)]

    def act(i: int):
        charge, actor, client = charges[i // 3], i % 3, clients[i]
        if actor == 0:
            return client.post(f"/payin/{charge['id']}/refunds", {"amount": 3_000}, format="json")
        if actor == 1:
            return client.post(f"/payin/{charge['id']}/refunds", {}, format="json")
        return notification_receive(rail_name="simulator", body=chargeback_notification(charge["id"], 10_000))

    results = run_in_threads(len(charges) * 3, act)

    assert [r for r in results if isinstance(r, Exception)] == []
    refusals = [UNDER_DISPUTE, cannot_refund("REFUNDED"), exceeds_remaining(0)]
    for n, charge in enumerate(charges):
        first, rest, notification = results[n * 3:n * 3 + 3]
        payin = Payin.objects.get(pk=charge["id"])
        ok_refunds = [r.json() for r in (first, rest) if r.status_code == 201]
        refused = [refusal_of(r) for r in (first, rest) if r.status_code != 201]
        assert [refusal for refusal in refused if refusal not in refusals] == []
        if first.status_code == 201:
            assert first.json() == refund_body(first.json(), payin_id=charge["id"], amount=3_000)
        refunded = sum(r["amount"] for r in ok_refunds)
        assert payin.refunded_amount == refunded
        assert rail_refunds_of(payin.pk) == sorted(r["amount"] for r in ok_refunds)
        dispute = Dispute.objects.filter(payin=payin).first()
        if dispute is not None:
            assert notification.outcome == f"dispute opened {dispute.pk}"
            assert dispute.amount == 10_000 - refunded  # what the refunds held before it left, never more
            disputes.dispute_decide(dispute_id=dispute.pk, won=False)
            payin.refresh_from_db()
            assert payin.status == PayinStatus.CHARGEBACK
            assert events_of(dispute.pk) == {"dispute.created": 1, "dispute.closed": 1}
        else:
            assert notification.outcome.startswith("ignored: ")
            assert (payin.status, refunded) == (PayinStatus.REFUNDED, 10_000)
        assert rail_out_of(payin.pk) == 10_000  # the payer got the charge back once
        assert credits_of(payin.pk) == 1
    assert available(merchant) == 80_000
    assert in_flight(merchant) == 0
    assert ledger_clean()


def test_a_sandbox_chargeback_racing_a_refund_disputes_the_rest_or_is_refused(api, merchant):
    """The sandbox checks, asks the simulator and applies its notification with the charge locked; a refund holds its
    money with the charge locked too. So either the dispute comes first (the refund is refused: the charge is under
    dispute), or the refund is held first and the dispute takes only what is left. The simulator never records a
    chargeback our ledger did not take, nor a refund our ledger did not make."""
    payins.payin_pay(payin_id=create(api, body_of("PIX", 60_000, reference="funding"))["id"])
    for round_number in range(6):
        charge = create(api, body_of("CREDIT_CARD", 10_000, reference=f"race-{round_number}"))

        def act(i: int, charge_id=charge["id"]):
            with translation.override("en"):  # as the API calls them (a new thread has the default language)
                if i == 0:
                    return payin_sandbox.payin_simulate(merchant=merchant, payin_id=charge_id,
                                                        action="chargeback").payin.status
                return refunds.refund_create(merchant=merchant, livemode=False, payin_id=charge_id, amount=1_000,
                                              reason="")

        chargeback, refund = run_in_threads(2, act)
        payin = Payin.objects.get(pk=charge["id"])
        charged_back = SimulatorOperation.objects.filter(kind="chargeback", reference=charge["id"]).exists()
        dispute = Dispute.objects.get(payin=payin)
        assert credits_of(payin.pk) == 1 and charged_back
        assert chargeback in (PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED)
        if isinstance(refund, payins.InvalidState):  # the dispute came first
            assert refund.message == "A charge under dispute cannot be refunded"
            assert (payin.refunded_amount, Refund.objects.filter(payin=payin).count()) == (0, 0)
            assert rail_refunds_of(payin.pk) == []
            assert dispute.amount == 10_000
        else:  # the refund was held first: the dispute takes the rest
            assert (refund.status, refund.amount) == (RefundStatus.SUCCEEDED, 1_000)
            assert (payin.refunded_amount, rail_refunds_of(payin.pk)) == (1_000, [1_000])
            assert dispute.amount == 9_000
        assert rail_out_of(payin.pk) + dispute.amount == 10_000  # what is held plus what was refunded
        assert events_of(dispute.pk) == {"dispute.created": 1}
    assert ledger_clean()



def test_a_sandbox_payment_racing_a_cancel_happens_whole_or_is_refused(api, merchant):
    for round_number in range(6):
        charge = create(api, body_of("PIX", reference=f"race-{round_number}"))

        def act(i: int, charge_id=charge["id"]):
            if i == 0:
                return payin_sandbox.payin_simulate(merchant=merchant, payin_id=charge_id, action="pay").payin.status
            return payins.payin_cancel(merchant=merchant, livemode=False, payin_id=charge_id).status

        paid, canceled = run_in_threads(2, act)
        status = Payin.objects.get(pk=charge["id"]).status
        assert SimulatorOperation.objects.filter(kind="payin", reference=charge["pix"]["txid"]).count() == 1
        if status == PayinStatus.PAID:
            assert paid == PayinStatus.PAID and isinstance(canceled, payins.InvalidState)
            assert not UnmatchedPayment.objects.filter(payin_id=charge["id"]).exists()
        else:  # the cancel won: the money that arrived anyway is held as an unmatched payment, never lost
            assert status == PayinStatus.CANCELED and canceled == PayinStatus.CANCELED and paid == PayinStatus.CANCELED
            assert UnmatchedPayment.objects.get(payin_id=charge["id"]).kind == "AFTER_CANCEL"
    assert ledger_clean()


def test_pay_expire_and_cancel_racing_on_pix_charges_end_in_one_legal_state(api, merchant):
    """Per charge: the rail's confirmation, the expiry job and the merchant's cancel, at once. A payment after expiry is
    still credited; after a cancel it is not (the charge is gone)."""
    charges = [create(api, body_of("PIX", reference=f"order-{n}")) for n in range(12)]

    def act(i: int):
        charge, actor = charges[i // 3], i % 3
        if actor == 0:
            # The confirmation comes a little later on some charges, so that every order happens in one run.
            time.sleep((i // 3) % 4 * 0.04)
            return payins.payin_pay(payin_id=charge["id"]) is not None
        if actor == 1:
            try:
                payins.payin_expire(payin_id=charge["id"])
                return True
            except payins.InvalidState:
                return False
        try:
            payins.payin_cancel(merchant=merchant, livemode=False, payin_id=charge["id"])
            return True
        except payins.InvalidState:
            return False

    results = run_in_threads(len(charges) * 3, act)

    assert [r for r in results if isinstance(r, Exception)] == []
    paid_net = 0
    for n, charge in enumerate(charges):
        paid, expired, canceled = results[n * 3:n * 3 + 3]
        payin = Payin.objects.get(pk=charge["id"])
        events = events_of(payin.pk)
        assert not (expired and canceled)  # both leave PENDING only
        if canceled:
            assert payin.status == PayinStatus.CANCELED
            assert not paid
            assert credits_of(payin.pk) == 0
            assert events == {"payin.created": 1, "payin.canceled": 1}
        else:
            assert payin.status == PayinStatus.PAID
            assert paid
            assert credits_of(payin.pk) == 1
            assert events == {"payin.created": 1, "payin.paid": 1, **({"payin.expired": 1} if expired else {})}
            paid_net += charge["netAmount"]
    assert available(merchant) == paid_net
    assert ledger_clean()


def test_a_pix_refund_in_flight_racing_a_med_never_returns_more_than_the_charge(api, api_client_for, test_key,
                                                                                merchant, monkeypatch):
    """A Pix refund holds its money in flight until the rail confirms; a MED opened meanwhile disputes only what is
    left (issue 14: never the same money twice), and a MED opened first makes the refund 409. Once the refunds settle
    and the MEDs are lost, each charge went back to its payer exactly once, the ledger balanced."""
    monkeypatch.setattr(payin_tasks.refund_reconcile, "apply_async", lambda *args, **kwargs: None)  # resolved by hand
    without_fees(merchant)
    charges = [create(api, body_of("PIX", reference=f"order-{n}")) for n in range(8)]
    for charge in charges:
        payins.payin_pay(payin_id=charge["id"])
    clients = [api_client_for(*test_key) for _ in range(len(charges))]

    def act(i: int):
        charge = charges[i // 2]
        if i % 2 == 0:
            return clients[i // 2].post(f"/payin/{charge['id']}/refunds", {"amount": 4_000}, format="json")
        try:
            return disputes.dispute_open(payin_id=charge["id"])
        except payins.InvalidState as exc:
            return exc

    results = run_in_threads(len(charges) * 2, act)
    for refund in Refund.objects.filter(status=RefundStatus.PENDING):
        refunds.refund_resolve(refund_id=refund.pk, status=RefundStatus.SUCCEEDED)
    for dispute in Dispute.objects.all():
        disputes.dispute_decide(dispute_id=dispute.pk, won=False)

    for n, charge in enumerate(charges):
        refund_response, opened = results[n * 2:n * 2 + 2]
        payin = Payin.objects.get(pk=charge["id"])
        dispute, created = opened
        assert created and refund_response.status_code in (201, 409), refund_response.content
        if refund_response.status_code == 201:  # the refund was held first: the MED disputes the rest
            assert dispute.amount == 6_000
        else:  # the MED came first: a charge under dispute is not refunded
            assert refusal_of(refund_response) == UNDER_DISPUTE
            assert dispute.amount == 10_000
        assert (payin.status, payin.refunded_amount) == (PayinStatus.REFUNDED, 10_000)
        assert rail_out_of(payin.pk) == 10_000
        assert events_of(dispute.pk) == {"dispute.created": 1, "dispute.closed": 1}
        assert credits_of(payin.pk) == 1
    assert available(merchant) == 0
    assert ledger_clean()


def test_ten_concurrent_chargeback_notices_of_one_charge_open_one_dispute(api, merchant):
    charge = create(api, body_of("CREDIT_CARD", 10_000))

    def notice(i: int):
        return notification_receive(rail_name="simulator", body=json.dumps(
            {"id": f"cb-{i}", "type": "payin.chargeback", "key": charge["id"], "amount": 10_000}).encode()).outcome

    outcomes = run_in_threads(10, notice)

    dispute = Dispute.objects.get()
    assert sorted(outcomes) == sorted([f"dispute opened {dispute.pk}"]
                                      + [f"ignored: already disputed ({dispute.pk})"] * 9)
    assert (dispute.amount, dispute.status) == (10_000, "OPEN")
    assert available(merchant) == charge["netAmount"] - 10_000
    assert events_of(dispute.pk) == {"dispute.created": 1}
    assert ledger_clean()


# --- Jobs on several workers at once ---------------------------------------------------------------------------------
def test_four_concurrent_expiry_jobs_expire_each_charge_once(api, merchant):
    pix = [create(api, body_of("PIX", reference=f"pix-{n}"))["id"] for n in range(25)]
    boletos = [create(api, body_of("BOLETO", reference=f"boleto-{n}"))["id"] for n in range(25)]
    not_due = [create(api, body_of(method, reference="later"))["id"] for method in ("PIX", "BOLETO")]
    Payin.objects.filter(pk__in=pix).update(pix_expires_at=timezone.now() - timedelta(minutes=1))
    Payin.objects.filter(pk__in=boletos).update(boleto_due_date=dates.sao_paulo_today() - timedelta(days=1))

    counts = run_in_threads(4, lambda i: payin_tasks.payins_expire())

    assert [c for c in counts if isinstance(c, Exception)] == []
    assert sum(counts) == 50
    assert set(Payin.objects.filter(pk__in=pix + boletos).values_list("status", flat=True)) == {PayinStatus.EXPIRED}
    assert set(Payin.objects.filter(pk__in=not_due).values_list("status", flat=True)) == {PayinStatus.PENDING}
    expired_events = Counter(Event.objects.filter(type="payin.expired").values_list("object_id", flat=True))
    assert expired_events == {str(pk): 1 for pk in pix + boletos}
    assert ledger_clean()


def test_four_concurrent_settlement_jobs_release_each_card_charge_once(api_client_for, merchant):
    live_client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))
    charges = [create(live_client, body_of("CREDIT_CARD", 10_000 + n, reference=f"order-{n}", card=LIVE_CARD))
               for n in range(20)]
    nets = sum(charge["netAmount"] for charge in charges)
    assert {charge["status"] for charge in charges} == {"PAID"}
    assert ledger_selectors.balance_get(merchant=merchant, livemode=True) == ledger_selectors.Balance(
        available=0, pending=nets)
    later = timezone.now() + timedelta(days=31)

    counts = run_in_threads(4, lambda i: card_charges.card_settlements_release(now=later))

    assert [c for c in counts if isinstance(c, Exception)] == []
    assert sum(counts) == 20
    assert ledger_selectors.balance_get(merchant=merchant, livemode=True) == ledger_selectors.Balance(
        available=nets, pending=0)
    assert not Payin.objects.filter(settle_at__isnull=False).exists()
    settlements = Counter(LedgerTransaction.objects.filter(entries__line_type=LineType.SETTLEMENT)
                          .distinct().values_list("object_id", flat=True))
    assert settlements == {charge["id"]: 1 for charge in charges}
    assert card_charges.card_settlements_release(now=later) == 0
    assert ledger_clean()


# --- Idempotent retries and boleto numbers ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["PIX", "CREDIT_CARD", "BOLETO"])
def test_ten_concurrent_retries_under_one_idempotency_key_make_one_charge(api_client_for, test_key, merchant, method):
    clients = [api_client_for(*test_key) for _ in range(10)]
    body = body_of(method)

    responses = run_in_threads(10, lambda i: clients[i].post("/payin", body, format="json",
                                                             HTTP_IDEMPOTENCY_KEY="order-1-attempt"))

    assert [r for r in responses if isinstance(r, Exception)] == []
    created = [r for r in responses if r.status_code == 201]
    in_use = [r for r in responses if r.status_code == 409]
    assert len(created) + len(in_use) == 10, Counter(r.status_code for r in responses)
    assert [r.headers.get("Idempotent-Replayed") for r in created].count(None) == 1
    assert {r.headers.get("Idempotent-Replayed") for r in created} <= {None, "true"}
    assert len({json.dumps(r.json(), sort_keys=True) for r in created}) == 1  # the replays are the original
    assert {error_code(r) for r in in_use} <= {"idempotency_key_in_use"}
    assert Payin.objects.count() == 1
    payin = Payin.objects.get()
    assert str(payin.pk) == created[0].json()["id"]
    assert Event.objects.filter(type="payin.created" if method != "CREDIT_CARD" else "payin.paid").count() == 1
    if method == "CREDIT_CARD":
        assert SimulatorOperation.objects.filter(kind="card").count() == 1  # the card was charged once
        assert credits_of(payin.pk) == 1
    assert ledger_clean()


def test_twenty_concurrent_boletos_get_distinct_valid_numbers(api_client_for, test_key, merchant):
    clients = [api_client_for(*test_key) for _ in range(20)]

    responses = run_in_threads(20, lambda i: clients[i].post("/payin", body_of("BOLETO", 500 + i,
                                                                               reference=f"order-{i}"), format="json"))

    assert [r.status_code for r in responses] == [201] * 20, [getattr(r, "content", r) for r in responses]
    payins = list(Payin.objects.all())
    numbers = [payin.boleto_nosso_numero for payin in payins]
    assert len(set(numbers)) == 20
    assert len({payin.boleto_barcode for payin in payins}) == 20
    for payin in payins:
        assert boleto.digitable_line_from_barcode(payin.boleto_barcode) == payin.boleto_digitable_line
        assert boleto.barcode_from_digitable_line(payin.boleto_digitable_line) == payin.boleto_barcode
        assert boleto.nosso_numero_from_free_field(payin.boleto_barcode[-25:]) == payin.boleto_nosso_numero
        assert int(payin.boleto_barcode[9:19]) == payin.amount
    by_id = {str(payin.pk): payin for payin in payins}
    for response in responses:
        body = response.json()
        assert body["boleto"]["barcode"] == by_id[body["id"]].boleto_barcode
        assert body["boleto"]["digitableLine"] == by_id[body["id"]].boleto_digitable_line
