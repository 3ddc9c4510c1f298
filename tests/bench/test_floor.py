"""bench/floor.py: each floor writes the tables its real endpoint writes, as many rows, and answers with the object
its event carries, in the keys the real endpoint answers with; so the endpoint over its floor means what
bench/README.md says it means."""

from __future__ import annotations

import pytest
from django.apps import apps

from bench.__main__ import payout_body, pix_body
from webhooks.models import Event

pytestmark = pytest.mark.urls("bench.floor")  # the service's URLs and the floors', as the floors' gunicorn serves


def _rows() -> dict[str, int]:
    return {model._meta.db_table: model.objects.count() for model in apps.get_models()}


def _post(api, path: str, body: dict) -> tuple[dict[str, int], dict]:
    """The rows `POST path` added per table, and its answer."""
    before = _rows()
    response = api.post(path, body, format="json")
    assert response.status_code == 201, response.content
    return {table: count - before[table] for table, count in _rows().items() if count != before[table]}, response.json()


def test_the_pix_floor_writes_the_charge_and_its_event_and_answers_with_the_object(api):
    real_rows, real = _post(api, "/payin", pix_body())
    floor_rows, floor = _post(api, "/floor/payin", pix_body())

    assert floor_rows == real_rows == {"payments_payin": 1, "webhooks_event": 1}
    assert set(floor) == set(real) and set(floor["pix"]) == set(real["pix"])
    assert Event.objects.get(object_id=floor["id"]).payload["data"]["object"] == floor


@pytest.mark.ledger_unchecked  # the floor's ledger entries carry no running balance: it decides nothing
def test_the_payout_floor_writes_the_payout_its_audit_entry_ledger_movement_and_event(api):
    items = [{"title": "Saldo", "quantity": 1, "unitPrice": 10_000}]
    funding = api.post("/payin", {**pix_body(), "amount": 10_000, "items": items}, format="json").json()
    assert api.post(f"/sandbox/payin/{funding['id']}/simulate", {"action": "pay"}, format="json").status_code == 200

    real_rows, real = _post(api, "/payout", payout_body())
    floor_rows, floor = _post(api, "/floor/payout", payout_body())

    # The day's payout total is one row per merchant and day, which the floor leaves out.
    assert real_rows == {"payments_payout": 1, "accounts_accountevent": 1, "webhooks_event": 1,
                         "payments_ledgertransaction": 1, "payments_ledgerentry": 2, "payments_payoutdailytotal": 1}
    assert floor_rows == {table: count for table, count in real_rows.items() if table != "payments_payoutdailytotal"}
    assert set(floor) == set(real)
    assert Event.objects.get(object_id=floor["id"]).payload["data"]["object"] == floor


def test_a_floor_refuses_an_unknown_key(db, client):
    response = client.post("/floor/payin", pix_body(), content_type="application/json",
                           HTTP_AUTHORIZATION="Basic bm9uZTpub25l")

    assert response.status_code == 401
