"""A charge's items add up to its amount, and each item's quantity and unit price are bounded (issue 37, item 12)."""

from __future__ import annotations

import pytest

from payments.models import Payin
from payments.payins.validation import ITEM_QUANTITY_MAX
from tests.payments.payins.test_payin_api import payin_body

pytestmark = pytest.mark.django_db


def mismatch_message(total: int, amount: int) -> str:
    return f"The items add up to {total} cents (quantity × unitPrice), but amount is {amount}: they must be equal."


def test_items_adding_up_to_another_amount_are_refused_with_both_figures(api):
    body = payin_body("PIX", amount=12000, items=[{"title": "Caneca", "quantity": 2, "unitPrice": 5000}])

    response = api.post("/payin", body, format="json")

    assert response.status_code == 400
    assert response.json() == {"error": {
        "type": "invalid_request_error", "code": "items_total_mismatch",
        "message": "The items do not add up to the amount", "param": "items",
        "details": [{"param": "items", "code": "items_total_mismatch", "message": mismatch_message(10000, 12000)}],
        "requestId": response["X-Request-Id"]}}
    assert Payin.objects.count() == 0


@pytest.mark.parametrize("method", ["PIX", "BOLETO", "CREDIT_CARD"])
def test_items_that_add_up_to_the_amount_are_accepted_as_sent(api, method):
    items = [{"title": "Caneca", "quantity": 3, "unitPrice": 2990}, {"title": "Frete", "quantity": 1,
                                                                     "unitPrice": 1530},
             {"title": "Brinde", "quantity": 1, "unitPrice": 0, "description": "Azul"}]

    response = api.post("/payin", payin_body(method, amount=10500, items=items), format="json")

    assert response.status_code == 201, response.content
    assert response.json()["items"] == items


def test_a_mismatch_is_reported_with_the_other_problems(api):
    body = payin_body("PIX", amount=12000, items=[{"title": "Caneca", "quantity": 1, "unitPrice": 100}],
                      referenceId="has space")

    error = api.post("/payin", body, format="json").json()["error"]

    assert error["code"] == "validation_error"
    assert [(d["param"], d["code"], d["message"]) for d in error["details"]] == [
        ("referenceId", "invalid_reference_id", "Must have only letters, digits, '.', '_', ':' and '-' (no spaces)."),
        ("items", "items_total_mismatch", mismatch_message(100, 12000))]


def test_an_item_quantity_of_ten_to_the_thirty_is_refused(api):
    body = payin_body("PIX", amount=10000, items=[{"title": "Caneca", "quantity": 10**30, "unitPrice": 0},
                                                  {"title": "Frete", "quantity": 1, "unitPrice": 10000}])

    response = api.post("/payin", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"] == [{
        "param": "items.0.quantity", "code": "max_value",
        "message": f"Ensure this value is less than or equal to {ITEM_QUANTITY_MAX}."}]


def test_quantity_at_its_maximum_is_accepted(api):
    body = payin_body("PIX", amount=ITEM_QUANTITY_MAX, items=[{"title": "Parafuso", "quantity": ITEM_QUANTITY_MAX,
                                                                "unitPrice": 1}])

    assert api.post("/payin", body, format="json").status_code == 201


def test_a_unit_price_above_the_accounts_maximum_per_charge_is_refused(api, merchant, settings):
    settings.CHARGE_MAX_AMOUNT = 10_000_000
    body = payin_body("PIX", amount=10_000, items=[{"title": "Caneca", "quantity": 1, "unitPrice": 10_000_001}])

    response = api.post("/payin", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"] == [{
        "param": "items.0.unitPrice", "code": "max_value",
        "message": "Must be at most 10000000 cents, this account's maximum per charge."}]


def test_a_unit_price_up_to_a_raised_maximum_is_accepted(api, merchant, settings):
    settings.CHARGE_MAX_AMOUNT = 10_000_000
    type(merchant).objects.filter(pk=merchant.pk).update(charge_max_amount=20_000_000)
    body = payin_body("PIX", amount=15_000_000, items=[{"title": "Trator", "quantity": 1, "unitPrice": 15_000_000}])

    assert api.post("/payin", body, format="json").status_code == 201


def test_the_schema_bounds_quantity_and_unit_price(api, settings):
    from django.test import Client

    item = Client().get("/openapi.json").json()["components"]["schemas"]["ItemRequest"]["properties"]

    assert (item["quantity"]["minimum"], item["quantity"]["maximum"]) == (1, ITEM_QUANTITY_MAX)
    assert (item["unitPrice"]["minimum"], item["unitPrice"]["maximum"]) == (0, settings.CHARGE_MAX_AMOUNT)
