"""The simulator rail's books: an operation is recorded once per idempotency key, whatever the number of calls, and
a PENDING payout or refund is confirmed once it is due (SIMULATOR_AUTO_CONFIRM_SECONDS), on both databases."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from payments.models import SimulatorOperation
from payments.rails import simulator
from payments.rails.base import OperationStatus
from payments.rails.simulator import rail

pytestmark = pytest.mark.django_db


def send(key: str, pix_key: str = "ana@example.com", amount: int = 1000) -> OperationStatus:
    return rail.payout_send(key=key, livemode=False, amount=amount, pix_key=pix_key, pix_key_type="EMAIL",
                            end_to_end_id="E" + key)


def books() -> list[tuple]:
    return list(SimulatorOperation.objects.order_by("key").values_list("key", "kind", "amount", "status", "outcome",
                                                                         "reference", "calls"))


def test_a_payout_sent_again_under_its_key_is_counted_not_recorded_again(settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 60
    assert send("p1") == OperationStatus(status="PENDING")
    # The repeat carries other values (a bug of the caller's): the first call is what the network saw.
    assert send("p1", pix_key="x@fail.example.com", amount=5) == OperationStatus(status="PENDING")
    assert send("p2", pix_key="x@fail.example.com") == OperationStatus(status="FAILED",
                                                                      failure_code="rejected_by_bank")
    assert send("p2") == OperationStatus(status="FAILED", failure_code="rejected_by_bank")
    assert books() == [("p1", "payout", 1000, "PENDING", "", "Ep1", 2),
                       ("p2", "payout", 1000, "FAILED", "rejected_by_bank", "Ep2", 2)]


def test_a_pending_payout_is_confirmed_only_once_it_is_due(settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 60
    send("p1")
    assert rail.payout_status(key="p1") == OperationStatus(status="PENDING")
    assert books()[0][3] == "PENDING"

    SimulatorOperation.objects.filter(key="p1").update(created_at=timezone.now() - timedelta(seconds=61))
    assert rail.payout_status(key="p1") == OperationStatus(status="SUCCEEDED")
    assert books() == [("p1", "payout", 1000, "SUCCEEDED", "", "Ep1", 1)]
    assert rail.payout_status(key="p1") == OperationStatus(status="SUCCEEDED")  # read, not confirmed twice


def test_a_status_names_only_an_operation_of_its_kind(settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 60
    send("p1")
    send("p2", pix_key="x@fail.example.com")
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0  # p1 is due: a refund's status under its key must not confirm it
    assert rail.refund_status(key="p1") == OperationStatus(status="FAILED", failure_code="rail_error")  # no refund
    assert books()[0][3] == "PENDING"
    assert rail.payout_status(key="p2") == OperationStatus(status="FAILED", failure_code="rejected_by_bank")
    assert rail.payout_status(key="nobody") == OperationStatus(status="NOT_FOUND")
    assert rail.payout_status(key="p1") == OperationStatus(status="SUCCEEDED")
    assert [row[3] for row in books()] == ["SUCCEEDED", "FAILED"]


def test_a_pix_refund_is_recorded_once_and_confirmed_when_due(settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    first = rail.refund_create(key="r1", livemode=False, payin_key="c1", payment_method="PIX", amount=300)
    again = rail.refund_create(key="r1", livemode=False, payin_key="c1", payment_method="PIX", amount=300)
    assert first == again == OperationStatus(status="PENDING")
    assert rail.refund_status(key="r1") == OperationStatus(status="SUCCEEDED")
    assert books() == [("r1", "refund", 300, "SUCCEEDED", "", "c1", 2)]


def test_payouts_sent_together_are_what_each_sent_alone_would_be(settings):
    """One call for several orders (one statement): the answers in the orders' order, a key sent before counted and
    answered as its first call, a key twice in one call one call, the books as single sends leave them."""
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 60
    send("p0")

    def order(key: str, pix_key: str = "ana@example.com") -> dict:
        return {"key": key, "livemode": False, "amount": 1000, "pix_key": pix_key, "pix_key_type": "EMAIL",
                "end_to_end_id": "E" + key}

    answers = rail.payouts_send(orders=[order("p2", "x@fail.example.com"), order("p0", "x@fail.example.com"),
                                        order("p1"), order("p1")])
    assert answers == [OperationStatus(status="FAILED", failure_code="rejected_by_bank"),
                       OperationStatus(status="PENDING"), OperationStatus(status="PENDING"),
                       OperationStatus(status="PENDING")]
    assert books() == [("p0", "payout", 1000, "PENDING", "", "Ep0", 2), ("p1", "payout", 1000, "PENDING", "", "Ep1", 1),
                       ("p2", "payout", 1000, "FAILED", "rejected_by_bank", "Ep2", 1)]

    SimulatorOperation.objects.filter(key="p1").update(created_at=timezone.now() - timedelta(seconds=61))
    assert rail.payouts_status(keys=["nobody", "p2", "p1", "p0"]) == [
        OperationStatus(status="NOT_FOUND"), OperationStatus(status="FAILED", failure_code="rejected_by_bank"),
        OperationStatus(status="SUCCEEDED"), OperationStatus(status="PENDING")]
    assert [row[3] for row in books()] == ["PENDING", "SUCCEEDED", "FAILED"]


def test_a_due_payout_sent_together_is_confirmed_by_the_send(settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    assert rail.payouts_send(orders=[
        {"key": key, "livemode": False, "amount": 5, "pix_key": "ana@example.com", "pix_key_type": "EMAIL",
         "end_to_end_id": "E" + key} for key in ("a", "b")]) == [OperationStatus(status="SUCCEEDED")] * 2
    assert [row[3] for row in books()] == ["SUCCEEDED", "SUCCEEDED"]


def test_a_due_payout_another_call_changed_meanwhile_answers_as_it_now_is(settings):
    """The confirmation of a due PENDING payout races a sandbox action failing it: the answer is what the books hold,
    never SUCCEEDED for a payout the network refused."""
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 60
    send("p1")
    send("p2")
    read = list(SimulatorOperation.objects.filter(key__in=["p1", "p2"]).order_by("key"))
    SimulatorOperation.objects.filter(key="p1").update(status="FAILED", outcome="rejected_by_bank")
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0  # both due now; p1 is no longer PENDING in the books
    assert simulator._answers(read) == [OperationStatus(status="FAILED", failure_code="rejected_by_bank"),
                                        OperationStatus(status="SUCCEEDED")]
    assert [row[3] for row in books()] == ["FAILED", "SUCCEEDED"]
