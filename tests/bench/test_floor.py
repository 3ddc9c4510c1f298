"""bench/floor.py: each floor writes the rows its real endpoint writes (the same tables, as many rows, an event that
carries the whole object) and answers with the object, as its real endpoint answers, so that the endpoint above it
can only cost more and a ratio to it means what the README says it means."""

from __future__ import annotations

import pytest
from django.apps import apps

from payments.ledger.services import adjustment_create
from payments.models import Payout, PayoutDailyTotal
from tests.bench import bench_module
from tests.factories import UserFactory
from webhooks.models import Event


@pytest.fixture
def floor(monkeypatch, settings):
    """bench/floor.py, loaded without setting Django up again; it points ROOT_URLCONF at itself, as gunicorn serves
    it (the `settings` fixture puts the project's back after the test)."""
    monkeypatch.setattr("django.core.wsgi.get_wsgi_application", lambda: None)
    return bench_module("floor")


def _rows() -> dict[str, int]:
    return {model._meta.db_table: model.objects.count() for model in apps.get_models()}


def _written(before: dict[str, int]) -> dict[str, int]:
    return {table: count - before[table] for table, count in _rows().items() if count != before[table]}


def _shape(value):
    """The JSON's keys, nested, with the type of every leaf (a value's length aside)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return type(value).__name__


def _both(api, path: str, body: dict, floor_path: str) -> tuple[tuple, tuple]:
    """What POST `path` and then POST `floor_path` each wrote with the same body (a new referenceId for the floor):
    the rows added per table, the event's payload, and the answer's body."""
    outcomes = []
    for target, reference in ((path, "real"), (floor_path, "floor")):
        before = _rows()
        response = api.post(target, {**body, "referenceId": reference}, format="json")
        assert response.status_code == 201, response.content
        event = Event.objects.get(object_id=response.json()["id"])
        outcomes.append((_written(before), event.payload, response.json()))
    return outcomes[0], outcomes[1]


def test_the_pix_floor_writes_the_charge_and_an_event_carrying_the_whole_object(floor, api):
    body = {"paymentMethod": "PIX", "amount": 5000, "payerIp": "203.0.113.9", "isPhysicalProduct": False,
            "items": [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}],
            "customer": {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}}
    (real_rows, real_payload, real_answer), (floor_rows, floor_payload, floor_answer) = _both(
        api, "/payin", body, "/floor/payin")

    assert floor_rows == real_rows == {"payments_payin": 1, "webhooks_event": 1}
    # The object the webhook will carry, in every key the service writes; only the values the floor does not decide
    # (the fee, the BR Code, the customer as validated) are the template's.
    real_object, floor_object = real_payload["data"]["object"], floor_payload["data"]["object"]
    assert set(floor_payload) == set(real_payload)
    assert set(floor_object) == set(real_object)
    assert set(floor_object["pix"]) == set(real_object["pix"])
    assert floor_object["items"] == real_object["items"] == body["items"]
    assert floor_object["referenceId"] == "floor"
    assert abs(len(str(floor_payload)) - len(str(real_payload))) < len(str(real_payload)) * 0.1
    # The answer: the object the event carries, as the endpoint answers with the object its event carries.
    assert floor_answer == floor_object
    assert real_answer == real_object


# The floor's ledger entries carry a running balance of 0: it decides nothing, not even the balance after its movement.
@pytest.mark.ledger_unchecked
def test_the_payout_floor_writes_the_payout_its_audit_entry_event_and_ledger_movement(floor, api, merchant):
    adjustment_create(merchant=merchant, livemode=False, amount=10_000, reason="fund", staff=UserFactory())
    body = {"amount": 100, "pixKeyType": "EVP", "pixKey": "123e4567-e12b-12d1-a456-426655440000"}
    (real_rows, real_payload, real_answer), (floor_rows, floor_payload, floor_answer) = _both(
        api, "/payout", body, "/floor/payout")

    # The day's total is one row per merchant and day: the first payout adds it, the next one adds to it.
    assert real_rows == {"payments_payout": 1, "accounts_accountevent": 1, "webhooks_event": 1,
                         "payments_ledgertransaction": 1, "payments_ledgerentry": 2, "payments_payoutdailytotal": 1}
    assert floor_rows == {table: count for table, count in real_rows.items() if table != "payments_payoutdailytotal"}
    assert PayoutDailyTotal.objects.get(merchant=merchant).amount == 200
    assert _shape(floor_payload) == _shape(real_payload)
    assert floor_payload["data"]["object"]["referenceId"] == "floor"
    assert floor_answer == floor_payload["data"]["object"]
    assert _shape(floor_answer) == _shape(real_answer)
    assert Payout.objects.filter(reference_id="floor", amount=100).count() == 1
