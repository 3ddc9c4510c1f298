"""A payout after its acceptance (SPEC §4.3, §5, §6, §7): the worker's processing, the rail's answers (at once or
later), the sandbox's magic keys, cancel, the sandbox controls, the reconciliation job that settles what a lost task
or a killed worker left behind without ever sending a payout twice, and the webhooks each status change produces.

`payments.payouts.sending.payout_process` is what the Celery task runs; tasks are never sent to a broker here (the
helpers of `test_payout_api.py` capture them), so each test drives the worker's side by hand.
"""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from payments import rails
from payments.models import Payout, SimulatorOperation
from payments.payouts import tasks as payout_tasks
from payments.payouts.sending import payout_process, payouts_reconcile
from payments.payouts.services import payout_start
from payments.rails.base import RailError, RailTimeout
from payments.rails.simulator import SimulatorRail
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.payouts.test_payout_api import (
    WEBHOOK_URL,
    create,
    envelope,
    error,
    events_of,
    expected_payout,
    footprint,
    fund,
    funding_line,
    get,
    invalid_state,
    ledger_balances,
    line,
    not_found,
    payout_test_setup,
    statement,
)
from webhooks.models import Delivery

ZERO = timedelta(0)
EVP_UNKNOWN = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(autouse=True)
def queued(settings, monkeypatch) -> list:
    return payout_test_setup(settings, monkeypatch)


@pytest.fixture
def time_travel(monkeypatch):
    """`travel(seconds=…)`: from now on `timezone.now()` is that far ahead of the real clock (the simulator's own
    rows keep the real time, as a rail's books would)."""
    real_now = timezone.now

    def travel(**delta) -> None:
        monkeypatch.setattr(timezone, "now", lambda: real_now() + timedelta(**delta))

    return travel


@pytest.fixture
def with_fee(merchant):
    """The merchant pays 25 cents a payout (set before its key is first used, so the API sees it)."""
    merchant.payout_fee_fixed = 25
    merchant.save()
    return 25


@pytest.fixture
def live_api(api_client_for, merchant):
    return api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))


@pytest.fixture
def other_api(api_client_for, db):
    other = MerchantFactory()
    fund(other, 10_000)
    return api_client_for(*ApiKeyFactory.with_secret(merchant=other, livemode=False))


def simulate(client, payout_id: str, action: str):
    return client.post(f"/sandbox/payout/{payout_id}/simulate", {"action": action}, format="json")


def simulated(client, payout_id: str, action: str) -> dict:
    response = simulate(client, payout_id, action)
    assert response.status_code == 200, response.content
    return response.json()


def rail_operation(payout: dict) -> SimulatorOperation:
    """What the rail saw of the payout: its one operation, keyed by the payout id."""
    operations = list(SimulatorOperation.objects.filter(key=payout["id"]))
    assert len(operations) == 1
    return operations[0]


def rail_state(payout: dict) -> tuple:
    operation = rail_operation(payout)
    return operation.kind, operation.status, operation.outcome, operation.calls, operation.amount, operation.reference


def in_flight_settled(merchant, *, rail_out: int, fee_revenue: int = 0) -> None:
    balances = ledger_balances(merchant)
    assert (balances["payouts_in_flight"], balances["rail_out"], balances["fee_revenue"]) == (0, rail_out,
                                                                                              fee_revenue)


def assert_lifecycle(client, payout_id: str, steps: list[tuple[str, str | None]]) -> list[dict]:
    """The payout's events, oldest first, are `steps` [(type, previousStatus)]; each carries the payout as it was
    right after its change, the last one the payout as GET returns it now, and each its status's one change over
    the previous object. Returns the objects."""
    events = events_of(client, payout_id)[::-1]
    assert [(e["type"], e["data"]["previousStatus"]) for e in events] == steps
    objects = [e["data"]["object"] for e in events]
    for event, obj in zip(events, objects, strict=True):
        assert event == envelope(event, type=event["type"], obj=obj, previous_status=event["data"]["previousStatus"],
                                 livemode=obj["livemode"])
        assert obj["status"] == event["type"].removeprefix("payout.").upper() or event["type"] == "payout.created"
    for before, after in itertools.pairwise(objects):
        assert after["status"] != before["status"]
        assert after["updatedAt"] >= before["updatedAt"]
        unchanged = {k: v for k, v in after.items()
                     if k not in ("status", "updatedAt", "completedAt", "failureCode", "failureMessage")}
        assert unchanged == {k: v for k, v in before.items() if k in unchanged}
        assert after["status"] in ("COMPLETED", "FAILED") or after["completedAt"] == before["completedAt"]
    assert objects[-1] == get(client, payout_id)
    return objects


# === 6. The worker: PENDING → PROCESSING → COMPLETED =================================================================
def test_a_payout_the_rail_confirms_at_once_completes(api, merchant, settings, with_fee, queued):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    adjustment = fund(merchant, 10_025)
    created = create(api, amount=10_000)
    lines_before = statement(api)

    payout_process(payout_id=created["id"])

    got = get(api, created["id"])
    assert got == expected_payout(got, amount=10_000, fee=25, status="COMPLETED", completed=True)
    assert got["externalId"] == created["externalId"]
    assert_lifecycle(api, got["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                      ("payout.completed", "PROCESSING")])
    assert rail_state(got) == ("payout", "SUCCEEDED", "", 1, 10_000, got["externalId"])
    in_flight_settled(merchant, rail_out=10_000, fee_revenue=25)
    assert statement(api) == lines_before == [
        line("payout_fee", -25, 0, payout=created, description="Pix payout to CPF key"),
        line("payout", -10_000, 25, payout=created, description="Pix payout to CPF key"),
        funding_line(adjustment, 10_025),
    ]  # completion moves nothing of the merchant's: the money left `available` at acceptance
    assert queued == []


def test_the_processing_event_carries_the_processing_payout(api, merchant, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    fund(merchant, 5000)
    created = create(api)

    payout_process(payout_id=created["id"])

    _, processing, completed = assert_lifecycle(api, created["id"], [
        ("payout.created", None), ("payout.processing", "PENDING"), ("payout.completed", "PROCESSING")])
    assert processing == {**created, "status": "PROCESSING", "updatedAt": processing["updatedAt"]}
    assert completed == {**created, "status": "COMPLETED", "updatedAt": completed["updatedAt"],
                         "completedAt": completed["completedAt"]}
    assert completed["completedAt"] == completed["updatedAt"]


@pytest.mark.parametrize("how", ["the countdown task", "the periodic job", "no more delay"])
def test_a_payout_stays_processing_until_the_rail_confirms(api, merchant, settings, queued, time_travel, how):
    fund(merchant, 10_000)
    created = create(api, amount=6000)

    payout_process(payout_id=created["id"])

    processing = get(api, created["id"])
    assert processing == expected_payout(processing, amount=6000, status="PROCESSING")
    assert queued == [("payout_reconcile", {"payout_ids": [created["id"]]}, 2)]  # asked again when due
    assert rail_state(created)[:4] == ("payout", "PENDING", "", 1)
    assert ledger_balances(merchant)["payouts_in_flight"] == 6000
    assert payouts_reconcile() == 0  # not 15 s old: the job leaves it to its countdown task

    if how == "the countdown task":
        time_travel(seconds=3)
        payout_tasks.payout_reconcile(payout_ids=[created["id"]])
    elif how == "the periodic job":
        time_travel(seconds=16)
        assert payouts_reconcile() == 1
    else:
        settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
        assert payouts_reconcile(older_than=ZERO) == 1

    got = get(api, created["id"])
    assert got == expected_payout(got, amount=6000, status="COMPLETED", completed=True)
    assert_lifecycle(api, got["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                      ("payout.completed", "PROCESSING")])
    assert rail_state(got)[:4] == ("payout", "SUCCEEDED", "", 1)  # asked, never sent again
    in_flight_settled(merchant, rail_out=6000)
    assert get(api, created["id"])["completedAt"] >= processing["updatedAt"]
    assert statement(api)[0]["balanceAfter"] == 4000


def test_a_processing_payout_asked_before_it_is_due_stays_processing(api, merchant, queued):
    fund(merchant, 5000)
    created = create(api)
    payout_process(payout_id=created["id"])

    assert payouts_reconcile(older_than=ZERO) == 1
    assert payouts_reconcile(older_than=ZERO) == 1

    assert get(api, created["id"])["status"] == "PROCESSING"
    assert rail_state(created)[:4] == ("payout", "PENDING", "", 1)
    assert len(events_of(api, created["id"])) == 2
    assert [message[0] for message in queued] == ["payout_reconcile"] * 3


def test_a_redelivered_task_does_nothing(api, merchant, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    fund(merchant, 5000)
    created = create(api)
    payout_process(payout_id=created["id"])
    before = footprint()

    payout_tasks.payout_process(payout_id=created["id"])

    assert footprint() == before
    assert rail_state(created)[:4] == ("payout", "SUCCEEDED", "", 1)


def test_a_live_payout_completes_on_the_simulator(live_api, merchant, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    fund(merchant, 5000, livemode=True)
    created = create(live_api)

    payout_process(payout_id=created["id"])

    got = get(live_api, created["id"])
    assert got == expected_payout(got, status="COMPLETED", completed=True, livemode=True)
    assert_lifecycle(live_api, got["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                           ("payout.completed", "PROCESSING")])
    assert ledger_balances(merchant, livemode=True)["rail_out"] == 5000
    assert rail_operation(got).livemode is True


# === 7. The sandbox's magic keys ======================================================================================
@pytest.mark.parametrize(("key_type", "key", "failure"), [
    ("EMAIL", "anything@fail.example.com", "rejected_by_bank"),
    ("EMAIL", "Someone@FAIL.Example.com", "rejected_by_bank"),
    ("EVP", EVP_UNKNOWN, "pix_key_not_found"),
])
def test_a_magic_key_fails_and_the_money_comes_back(api, merchant, with_fee, queued, key_type, key, failure):
    adjustment = fund(merchant, 10_025)
    created = create(api, amount=10_000, pixKeyType=key_type, pixKey=key)

    payout_process(payout_id=created["id"])

    got = get(api, created["id"])
    assert got == expected_payout(got, amount=10_000, fee=25, pix_key=key, pix_key_type=key_type, status="FAILED",
                                  failure=failure)
    assert_lifecycle(api, got["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                      ("payout.failed", "PROCESSING")])
    assert statement(api) == [
        line("payout_reversal", 10_025, 10_025, payout=got, description="Payout failed: returned to the balance"),
        line("payout_fee", -25, 0, payout=got, description=f"Pix payout to {key_type} key"),
        line("payout", -10_000, 25, payout=got, description=f"Pix payout to {key_type} key"),
        funding_line(adjustment, 10_025),
    ]
    in_flight_settled(merchant, rail_out=0)
    assert rail_state(got)[:4] == ("payout", "FAILED", failure, 1)
    assert queued == []


@pytest.mark.parametrize(("key_type", "key"), [
    ("EMAIL", "anything@notfail.example.com"),
    ("EMAIL", "fail.example.com@example.com"),
    ("EVP", "00000000-0000-0000-0000-000000000001"),
])
def test_keys_near_the_magic_ones_complete(api, merchant, settings, key_type, key):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    fund(merchant, 5000)
    created = create(api, pixKeyType=key_type, pixKey=key)

    payout_process(payout_id=created["id"])

    assert get(api, created["id"])["status"] == "COMPLETED"


# === 8. Cancel ========================================================================================================
def test_a_pending_payout_is_canceled_and_the_money_comes_back(api, merchant, with_fee):
    adjustment = fund(merchant, 10_025)
    created = create(api, amount=10_000)

    response = api.post(f"/payout/{created['id']}/cancel")

    assert response.status_code == 200, response.content
    got = response.json()
    assert got == expected_payout(got, amount=10_000, fee=25, status="CANCELED")
    assert_lifecycle(api, got["id"], [("payout.created", None), ("payout.canceled", "PENDING")])
    assert statement(api) == [
        line("payout_reversal", 10_025, 10_025, payout=got, description="Payout canceled"),
        line("payout_fee", -25, 0, payout=got, description="Pix payout to CPF key"),
        line("payout", -10_000, 25, payout=got, description="Pix payout to CPF key"),
        funding_line(adjustment, 10_025),
    ]
    in_flight_settled(merchant, rail_out=0)


def test_a_repeated_cancel_with_its_idempotency_key_is_replayed(api, merchant):
    fund(merchant, 5000)
    created = create(api)

    first = api.post(f"/payout/{created['id']}/cancel", HTTP_IDEMPOTENCY_KEY="cancel-1")
    again = api.post(f"/payout/{created['id']}/cancel", HTTP_IDEMPOTENCY_KEY="cancel-1")
    without_key = api.post(f"/payout/{created['id']}/cancel")

    assert (first.status_code, again.status_code) == (200, 200)
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    invalid_state(without_key, "A payout in status CANCELED cannot become CANCELED")
    assert len(events_of(api, created["id"])) == 2
    assert ledger_balances(merchant)["available"] == 5000


def test_a_canceled_payout_is_never_sent(api, merchant):
    fund(merchant, 5000)
    created = create(api)
    api.post(f"/payout/{created['id']}/cancel")
    before = footprint()

    payout_process(payout_id=created["id"])  # its task, already queued when it was canceled
    payouts_reconcile(older_than=ZERO)

    assert footprint() == before
    assert get(api, created["id"])["status"] == "CANCELED"


def drive(client, payout: dict, state: str) -> dict:
    """Move a PENDING payout to `state` the way it happens (the worker, the sandbox's bank, the API)."""
    if state == "PROCESSING":
        payout_start(payout_id=payout["id"])
    elif state in ("COMPLETED", "RETURNED"):
        simulated(client, payout["id"], "complete")
        if state == "RETURNED":
            simulated(client, payout["id"], "return")
    elif state == "FAILED":
        simulated(client, payout["id"], "fail")
    elif state == "CANCELED":
        assert client.post(f"/payout/{payout['id']}/cancel").status_code == 200
    got = get(client, payout["id"])
    assert got["status"] == state
    return got


@pytest.mark.parametrize("state", ["PROCESSING", "COMPLETED", "FAILED", "CANCELED", "RETURNED"])
def test_only_a_pending_payout_can_be_canceled(api, merchant, state):
    fund(merchant, 5000)
    payout = drive(api, create(api), state)
    before = footprint()

    response = api.post(f"/payout/{payout['id']}/cancel")

    invalid_state(response, f"A payout in status {state} cannot become CANCELED")
    assert footprint() == before
    assert get(api, payout["id"]) == payout


def test_cancel_of_someone_elses_an_unknown_or_the_other_modes_payout_is_404(api, live_api, other_api, merchant):
    fund(merchant, 5000, livemode=True)
    theirs = create(other_api)
    live = create(live_api)
    before = footprint()

    not_found(api.post(f"/payout/{theirs['id']}/cancel"))
    not_found(api.post(f"/payout/{live['id']}/cancel"))
    not_found(api.post(f"/payout/{uuid.uuid4()}/cancel"))
    not_found(api.post("/payout/not-a-uuid/cancel"))

    assert footprint() == before
    assert get(other_api, theirs["id"])["status"] == "PENDING"


def test_a_live_payout_is_canceled_with_a_live_key(live_api, merchant):
    fund(merchant, 5000, livemode=True)
    created = create(live_api)

    got = live_api.post(f"/payout/{created['id']}/cancel").json()

    assert got == expected_payout(got, status="CANCELED", livemode=True)
    assert ledger_balances(merchant, livemode=True)["available"] == 5000


# === 9. Sandbox: POST /sandbox/payout/{id}/simulate ===================================================================
def test_simulate_complete_of_a_pending_payout_processes_then_completes_it(api, merchant, with_fee):
    fund(merchant, 10_025)
    created = create(api, amount=10_000)

    got = simulated(api, created["id"], "complete")

    assert got == expected_payout(got, amount=10_000, fee=25, status="COMPLETED", completed=True)
    assert_lifecycle(api, got["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                      ("payout.completed", "PROCESSING")])
    assert rail_state(got) == ("payout", "SUCCEEDED", "", 1, 10_000, got["externalId"])
    in_flight_settled(merchant, rail_out=10_000, fee_revenue=25)
    before = footprint()
    payout_process(payout_id=created["id"])  # the worker's task, arriving late, does nothing
    assert footprint() == before
    assert rail_operation(got).calls == 1


def test_simulate_complete_of_a_processing_payout(api, merchant):
    fund(merchant, 5000)
    created = create(api)
    payout_process(payout_id=created["id"])  # sent, not yet confirmed

    got = simulated(api, created["id"], "complete")

    assert got == expected_payout(got, status="COMPLETED", completed=True)
    assert_lifecycle(api, got["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                      ("payout.completed", "PROCESSING")])
    assert rail_state(got)[:4] == ("payout", "SUCCEEDED", "", 1)
    in_flight_settled(merchant, rail_out=5000)


@pytest.mark.parametrize("state", ["PENDING", "PROCESSING"])
def test_simulate_fail_returns_the_money(api, merchant, with_fee, state):
    adjustment = fund(merchant, 10_025)
    created = create(api, amount=10_000)
    if state == "PROCESSING":
        payout_process(payout_id=created["id"])

    got = simulated(api, created["id"], "fail")

    assert got == expected_payout(got, amount=10_000, fee=25, status="FAILED", failure="rejected_by_bank")
    steps = [("payout.created", None)] + ([("payout.processing", "PENDING")] if state == "PROCESSING" else [])
    assert_lifecycle(api, got["id"], [*steps, ("payout.failed", state)])
    assert statement(api) == [
        line("payout_reversal", 10_025, 10_025, payout=got, description="Payout failed: returned to the balance"),
        line("payout_fee", -25, 0, payout=got, description="Pix payout to CPF key"),
        line("payout", -10_000, 25, payout=got, description="Pix payout to CPF key"),
        funding_line(adjustment, 10_025),
    ]
    in_flight_settled(merchant, rail_out=0)
    assert rail_state(got)[:4] == ("payout", "FAILED", "rejected_by_bank", 1)


def test_simulate_return_of_a_completed_payout_credits_the_amount_back(api, merchant, with_fee):
    adjustment = fund(merchant, 10_025)
    created = create(api, amount=10_000)
    completed = simulated(api, created["id"], "complete")

    got = simulated(api, created["id"], "return")

    assert got == expected_payout(got, amount=10_000, fee=25, status="RETURNED", completed=True)
    assert got["completedAt"] == completed["completedAt"]
    assert_lifecycle(api, got["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                      ("payout.completed", "PROCESSING"), ("payout.returned", "COMPLETED")])
    assert statement(api) == [
        line("payout_reversal", 10_000, 10_000, payout=got, description="Payout returned by the receiving bank"),
        line("payout_fee", -25, 0, payout=got, description="Pix payout to CPF key"),
        line("payout", -10_000, 25, payout=got, description="Pix payout to CPF key"),
        funding_line(adjustment, 10_025),
    ]  # the fee was earned: the bank returns the amount
    in_flight_settled(merchant, rail_out=0, fee_revenue=25)
    assert rail_state(got)[:4] == ("payout", "RETURNED", "", 1)


@pytest.mark.parametrize(("state", "action"), [
    ("PENDING", "return"), ("PROCESSING", "return"),
    ("COMPLETED", "complete"), ("COMPLETED", "fail"),
    ("FAILED", "complete"), ("FAILED", "fail"), ("FAILED", "return"),
    ("CANCELED", "complete"), ("CANCELED", "fail"), ("CANCELED", "return"),
    ("RETURNED", "complete"), ("RETURNED", "fail"), ("RETURNED", "return"),
])
def test_simulate_refuses_transitions_the_lifecycle_does_not_have(api, merchant, state, action):
    fund(merchant, 5000)
    payout = drive(api, create(api), state)
    before = footprint()

    response = simulate(api, payout["id"], action)

    invalid_state(response, f"A {state} payout cannot be simulated to {action}")
    assert footprint() == before
    assert get(api, payout["id"]) == payout


@pytest.mark.parametrize(("body", "code", "message", "param", "details"), [
    ({"action": "explode"}, "validation_error", "The request has invalid fields", "action",
     [{"param": "action", "code": "invalid_choice", "message": "Must be one of complete, fail, return."}]),
    ({}, "validation_error", "The request has invalid fields", "action",
     [{"param": "action", "code": "required", "message": "This field is required."}]),
    ({"action": "complete", "delay": 1}, "unknown_field", "The request has unknown fields", "delay",
     [{"param": "delay", "code": "unknown_field", "message": "Unknown field 'delay'."}]),
])
def test_simulate_with_a_bad_body_is_400(api, merchant, body, code, message, param, details):
    fund(merchant, 5000)
    payout = create(api)
    before = footprint()

    response = api.post(f"/sandbox/payout/{payout['id']}/simulate", body, format="json")

    error(response, 400, type="invalid_request_error", code=code, message=message, param=param, details=details)
    assert footprint() == before


def test_simulate_with_a_live_key_is_403(api, live_api, merchant):
    fund(merchant, 5000)
    fund(merchant, 5000, livemode=True)
    live = create(live_api)
    test = create(api)
    before = footprint()

    for payout_id in (live["id"], test["id"], str(uuid.uuid4())):
        error(simulate(live_api, payout_id, "complete"), 403, type="permission_error", code="test_mode_only",
              message="Sandbox controls work with test keys only")

    assert footprint() == before


def test_simulate_someone_elses_or_an_unknown_payout_is_404(api, other_api):
    theirs = create(other_api)

    not_found(simulate(api, theirs["id"], "complete"))
    not_found(simulate(api, str(uuid.uuid4()), "complete"))
    not_found(simulate(api, "not-a-uuid", "complete"))

    assert get(other_api, theirs["id"])["status"] == "PENDING"


# === 10. Reconciliation: what a lost task or a killed worker left =====================================================
def test_a_pending_payout_whose_task_was_lost_is_processed_by_the_job(api, merchant, time_travel):
    fund(merchant, 5000)
    created = create(api)  # its task never reaches a worker

    time_travel(seconds=14)
    assert payouts_reconcile() == 0  # a task may still be on its way
    time_travel(seconds=16)
    assert payouts_reconcile() == 1

    got = get(api, created["id"])
    assert got == expected_payout(got, status="COMPLETED", completed=True)
    assert_lifecycle(api, got["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                      ("payout.completed", "PROCESSING")])
    assert rail_state(got)[:4] == ("payout", "SUCCEEDED", "", 1)
    assert payouts_reconcile() == 0


def test_a_processing_payout_the_rail_never_received_is_sent_once(api, merchant, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    fund(merchant, 5000)
    created = create(api)
    payout_start(payout_id=created["id"])  # the worker was killed here, before the send
    assert not SimulatorOperation.objects.exists()

    assert payouts_reconcile(older_than=ZERO) == 1
    assert payouts_reconcile(older_than=ZERO) == 0

    got = get(api, created["id"])
    assert got == expected_payout(got, status="COMPLETED", completed=True)
    assert rail_state(got) == ("payout", "SUCCEEDED", "", 1, 5000, got["externalId"])
    in_flight_settled(merchant, rail_out=5000)


def test_a_processing_payout_the_rail_already_has_is_never_sent_again(api, merchant, time_travel, queued):
    fund(merchant, 5000)
    created = create(api)
    payout = payout_start(payout_id=created["id"])
    rails.for_mode(False).payout_send(key=str(payout.pk), livemode=False, amount=payout.amount,
                                      pix_key=payout.pix_key_normalized, pix_key_type=payout.pix_key_type,
                                      end_to_end_id=payout.external_id)  # sent; the worker died before recording

    for _ in range(3):  # not yet settled on the rail: asked, never re-sent
        assert payouts_reconcile(older_than=ZERO) == 1
    assert get(api, created["id"])["status"] == "PROCESSING"
    time_travel(seconds=3)
    assert payouts_reconcile(older_than=ZERO) == 1

    got = get(api, created["id"])
    assert got["status"] == "COMPLETED"
    assert SimulatorOperation.objects.get(key=str(payout.pk)).calls == 1
    assert SimulatorOperation.objects.count() == 1
    assert [message[0] for message in queued] == ["payout_reconcile"] * 3


@pytest.fixture(params=["together", "one call each"])
def rail_calls(request, monkeypatch) -> tuple[str, str]:
    """The simulator taking a batch's payouts in one call (its own way), or one call each (a rail such as Efí's):
    the names of the send and the status call the worker makes."""
    if request.param == "together":
        return "payouts_send", "payouts_status"
    monkeypatch.setattr(rails.for_mode(False), "payouts_together", False)
    return "payout_send", "payout_status"


def test_a_send_that_timed_out_after_reaching_the_rail_is_not_sent_again(api, merchant, settings, monkeypatch,
                                                                          rail_calls):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    fund(merchant, 5000)
    created = create(api)
    send = getattr(SimulatorRail, rail_calls[0])

    def arrives_then_times_out(self, **kwargs):
        send(self, **kwargs)
        raise RailTimeout("no answer in time")

    with monkeypatch.context() as patch:
        patch.setattr(SimulatorRail, rail_calls[0], arrives_then_times_out)
        payout_process(payout_id=created["id"])
    assert get(api, created["id"])["status"] == "PROCESSING"  # the worker cannot know: it leaves it to the job

    assert payouts_reconcile(older_than=ZERO) == 1

    assert get(api, created["id"])["status"] == "COMPLETED"
    assert SimulatorOperation.objects.get(key=created["id"]).calls == 1


def test_a_failure_the_rail_recorded_is_found_by_the_job(api, merchant):
    fund(merchant, 5000)
    created = create(api, pixKeyType="EVP", pixKey=EVP_UNKNOWN)
    payout = payout_start(payout_id=created["id"])
    rails.for_mode(False).payout_send(key=str(payout.pk), livemode=False, amount=payout.amount,
                                      pix_key=payout.pix_key_normalized, pix_key_type=payout.pix_key_type,
                                      end_to_end_id=payout.external_id)

    assert payouts_reconcile(older_than=ZERO) == 1

    got = get(api, created["id"])
    assert got == expected_payout(got, pix_key=EVP_UNKNOWN, pix_key_type="EVP", status="FAILED",
                                  failure="pix_key_not_found")
    assert ledger_balances(merchant)["available"] == 5000
    assert rail_operation(got).calls == 1


def test_the_job_leaves_a_payout_alone_while_the_rail_does_not_answer(api, merchant, monkeypatch, rail_calls):
    fund(merchant, 5000)
    created = create(api)
    payout_start(payout_id=created["id"])

    def unavailable(self, **kwargs):
        raise RailError("down")

    monkeypatch.setattr(SimulatorRail, rail_calls[1], unavailable)
    before = footprint()

    assert payouts_reconcile(older_than=ZERO) == 0

    assert footprint() == before
    assert get(api, created["id"])["status"] == "PROCESSING"


def test_one_run_settles_every_kind_of_unfinished_payout_and_sends_each_once(api, merchant, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    fund(merchant, 50_000)
    lost_task = create(api, referenceId="lost-task")
    never_sent = create(api, referenceId="never-sent")
    payout_start(payout_id=never_sent["id"])
    already_sent = create(api, referenceId="already-sent")
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 2
    payout_process(payout_id=already_sent["id"])
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    done = create(api, referenceId="done")
    payout_process(payout_id=done["id"])
    canceled = create(api, referenceId="canceled")
    api.post(f"/payout/{canceled['id']}/cancel")

    assert payouts_reconcile(older_than=ZERO) == 3
    assert payouts_reconcile(older_than=ZERO) == 0

    statuses = dict(Payout.objects.values_list("reference_id", "status"))
    assert statuses == {"lost-task": "COMPLETED", "never-sent": "COMPLETED", "already-sent": "COMPLETED",
                        "done": "COMPLETED", "canceled": "CANCELED"}
    operations = dict(SimulatorOperation.objects.values_list("key", "calls"))
    assert operations == {p["id"]: 1 for p in (lost_task, never_sent, already_sent, done)}
    in_flight_settled(merchant, rail_out=20_000)


# === 13. Webhooks =====================================================================================================
def test_a_payout_webhook_url_gets_one_delivery_per_event(api, merchant, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    fund(merchant, 10_000)
    got = create(api, webhookUrl=WEBHOOK_URL)

    payout_process(payout_id=got["id"])

    events = events_of(api, got["id"])
    assert [e["type"] for e in events] == ["payout.completed", "payout.processing", "payout.created"]
    deliveries = Delivery.objects.filter(event__object_id=got["id"]).order_by("created_at", "id")
    assert [(str(d.event_id), d.url, d.status, d.livemode, d.merchant_id, d.endpoint_id) for d in deliveries] == [
        (e["id"], WEBHOOK_URL, "PENDING", False, merchant.pk, None) for e in reversed(events)]


@pytest.mark.parametrize(("action", "types"), [
    ("cancel", ["payout.created", "payout.canceled"]),
    ("fail", ["payout.created", "payout.failed"]),
    ("return", ["payout.created", "payout.processing", "payout.completed", "payout.returned"]),
])
def test_every_payout_event_goes_to_its_webhook_url(api, merchant, action, types):
    fund(merchant, 10_000)
    got = create(api, webhookUrl=WEBHOOK_URL)

    if action == "cancel":
        assert api.post(f"/payout/{got['id']}/cancel").status_code == 200
    elif action == "fail":
        simulated(api, got["id"], "fail")
    else:
        simulated(api, got["id"], "complete")
        simulated(api, got["id"], "return")

    deliveries = Delivery.objects.filter(url=WEBHOOK_URL).select_related("event").order_by("created_at", "id")
    assert [d.event.type for d in deliveries] == types
    assert [d.event.payload for d in deliveries] == events_of(api, got["id"])[::-1]


def test_a_payout_without_webhook_url_and_no_endpoint_has_no_delivery(api, merchant):
    fund(merchant, 10_000)

    got = create(api)

    assert len(events_of(api, got["id"])) == 1
    assert not Delivery.objects.exists()


def test_the_created_event_is_what_a_webhook_carries(api, merchant):
    fund(merchant, 10_000)
    got = create(api, webhookUrl=WEBHOOK_URL)

    delivery = Delivery.objects.select_related("event").get()

    assert json.loads(json.dumps(delivery.event.payload)) == events_of(api, got["id"])[0]
    assert delivery.event.payload["data"] == {"object": got, "previousStatus": None}


def test_a_refused_payout_has_no_event_and_no_delivery(api):
    response = api.post("/payout", {"amount": 5000, "pixKey": "52998224725", "pixKeyType": "CPF",
                                    "referenceId": "payout-1", "webhookUrl": WEBHOOK_URL}, format="json")

    assert response.status_code == 400
    assert footprint() == {"payouts": 0, "movements": 0, "entries": 0, "events": 0, "deliveries": 0, "rail": 0}


def test_a_payout_the_rail_already_returned_completes_then_returns(api, merchant, queued):
    """The worker died after the send; by the time reconciliation asks, the receiving bank has sent the money back.
    The payout must not stay PROCESSING with its money frozen in flight: it completed, then it returned."""
    fund(merchant, 5000)
    created = create(api, amount=3000)
    payout_start(payout_id=created["id"])  # the worker moved it to PROCESSING …
    rails.by_name("simulator").simulate_payout(key=created["id"], livemode=False, amount=3000,
                                               end_to_end_id=created["externalId"], action="return")  # … and died

    assert payouts_reconcile(older_than=ZERO) == 1

    assert get(api, created["id"])["status"] == "RETURNED"
    assert_lifecycle(api, created["id"], [("payout.created", None), ("payout.processing", "PENDING"),
                                          ("payout.completed", "PROCESSING"), ("payout.returned", "COMPLETED")])
    balances = ledger_balances(merchant)
    assert (balances["available"], balances["payouts_in_flight"], balances["rail_out"]) == (5000, 0, 0)
