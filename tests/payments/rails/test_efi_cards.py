"""Issue 38 (b): live cards through Efí's Charges API, against the fake over HTTPS. The card number never reaches us
(a live `card.token` is Efí's payment_token; a raw number is refused); Efí's charge is created and its id stored
before it is paid; a lost answer leaves the charge PROCESSING (202) and `/pay` is never asked twice; a refusal is
FAILED with Efí's reason; the installments table is Efí's."""

from __future__ import annotations

import pytest
from django.test import Client

from payments import rails
from payments.models import LedgerTransaction, Payin
from tests.payments.payins.test_payin_api import ADDRESS_IN, ADDRESS_OUT, expected_charge, payin_body
from tests.payments.payins.test_payin_concurrency import ledger_clean
from webhooks.models import Event

pytestmark = pytest.mark.django_db

FEE = 5000 * 399 // 10_000 + 39 + (1 if 5000 * 399 % 10_000 >= 5000 else 0)


@pytest.fixture(autouse=True)
def _fees(settings):
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349
    settings.CARD_SETTLEMENT_DAYS = 30


def card_body(token: str | None, *, installments: int = 1, **fields) -> dict:
    body = payin_body("CREDIT_CARD", **fields)
    body["customer"]["address"] = dict(ADDRESS_IN)
    if token is None:
        del body["card"]
    else:
        body["card"] = {"token": token, "installments": installments}
    return body


def calls(fake, method: str, prefix: str) -> list[dict]:
    return [r for r in fake.requests_log if r["method"] == method and r["path"].startswith(prefix)]


def live_card(got: dict, *, installments: int, value: int | None, last4: str | None = "1111",
              retryable: bool | None = None) -> dict:
    return {"brand": None, "bin": None, "last4": last4, "holderName": None, "expirationMonth": None,
            "expirationYear": None, "installments": installments, "installmentValue": value,
            "retryable": retryable, "token": None}


def events_of(payin_id: str) -> list[tuple[str, str | None]]:
    return [(e.type, e.payload["data"]["previousStatus"])
            for e in Event.objects.filter(object_id=payin_id).order_by("created_at", "id")]


def customer_with_address() -> dict:
    return {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com", "phone": None,
            "address": ADDRESS_OUT}


def test_a_card_paid_in_three_installments_is_created_at_efi_then_paid_with_its_token(charges, live, merchant):
    token = charges.card_token(outcome="paid")

    response = live.post("/payin", card_body(token, installments=3), format="json")

    assert response.status_code == 201, response.content
    got = response.json()
    payin = Payin.objects.get(pk=got["id"])
    assert got == expected_charge(got, method="CREDIT_CARD", amount=5000, fee=FEE, status="PAID", livemode=True,
                                  paid=True, customer=customer_with_address(),
                                  card=live_card(got, installments=3, value=1667, last4=None),
                                  authorizationCode=None)
    [opened] = calls(charges, "POST", "/v1/charge")[:1]
    assert opened["path"] == "/v1/charge" and opened["body"] == {
        "items": [{"name": "Caneca", "value": 5000, "amount": 1}],
        "metadata": {"custom_id": got["id"],
                     "notification_url": f"http://testserver/rails/efi/charges/notify/{charges_secret()}"}}
    [paid] = calls(charges, "POST", f"/v1/charge/{payin.rail_charge_id}/pay")
    assert paid["body"] == {"payment": {"credit_card": {
        "customer": {"email": "ana@example.com", "name": "Ana Souza", "cpf": "52998224725"},
        "installments": 3, "payment_token": token,
        "billing_address": {"street": "Av. Paulista", "number": "1000", "neighborhood": "Centro",
                            "zipcode": "01310100", "city": "São Paulo", "state": "SP"}}}}
    assert charges.pays[payin.rail_charge_id] == 1
    assert events_of(got["id"]) == [("payin.paid", None)]
    balance = live.get("/balance").json()
    assert (balance["available"], balance["pending"]) == (0, 5000 - FEE)  # live card money waits to settle
    assert ledger_clean()


def charges_secret() -> str:
    from django.conf import settings

    return settings.EFI_WEBHOOK_SECRET


def test_a_refused_card_is_failed_with_efis_reason_and_whether_it_may_be_retried(charges, live):
    token = charges.card_token(outcome="unpaid", reason="Saldo insuficiente no cartão.", retry=True)

    response = live.post("/payin", card_body(token), format="json")

    assert response.status_code == 201, response.content
    got = response.json()
    assert got == expected_charge(got, method="CREDIT_CARD", amount=5000, fee=FEE, status="FAILED", livemode=True,
                                  customer=customer_with_address(),
                                  failure=("insufficient_funds", "Saldo insuficiente no cartão."),
                                  card=live_card(got, installments=1, value=5000, last4=None, retryable=True),
                                  authorizationCode=None)
    assert events_of(got["id"]) == [("payin.failed", None)]
    assert not LedgerTransaction.objects.filter(object_id=got["id"]).exists()


def test_a_raw_card_number_in_live_mode_is_refused_and_never_reaches_anyone(charges, live):
    body = payin_body("CREDIT_CARD")

    response = live.post("/payin", body, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert {key: error[key] for key in ("type", "code", "param", "details")} == {
        "type": "invalid_request_error", "code": "raw_card_data_not_allowed", "param": "card", "details": []}
    assert "4111111111111111" not in response.content.decode()
    assert charges.requests_log == [] and not Payin.objects.exists()


def test_a_token_card_without_a_billing_address_is_refused(charges, live):
    body = card_body(charges.card_token())
    del body["customer"]["address"]

    response = live.post("/payin", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"] == [{
        "param": "customer.address", "code": "required",
        "message": "Required for a live card payment: the payer's billing address."}]
    assert charges.requests_log == []


def test_without_a_token_the_charge_waits_for_the_hosted_page_and_efi_hears_nothing(charges, live):
    response = live.post("/payin", card_body(None), format="json")

    assert response.status_code == 201, response.content
    got = response.json()
    assert got == expected_charge(got, method="CREDIT_CARD", amount=5000, fee=FEE, livemode=True,
                                  customer=customer_with_address(),
                                  card=live_card(got, installments=1, value=None, last4=None),
                                  authorizationCode=None)
    assert charges.requests_log == []
    assert events_of(got["id"]) == [("payin.created", None)]


def test_efi_down_when_the_charge_is_opened_writes_nothing(charges, live):
    charges.fail_next("POST", "/v1/charge", mode="before", status=503)

    response = live.post("/payin", card_body(charges.card_token()), format="json")

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "rail_unavailable"
    assert not Payin.objects.exists()


@pytest.mark.parametrize("mode", ["drop", "after"])
def test_a_lost_answer_to_pay_leaves_the_charge_processing_and_a_retry_never_pays_again(charges, live, mode):
    token = charges.card_token(outcome="paid")
    charges.fail_next("POST", "/v1/charge/", mode=mode, status=500)

    first = live.post("/payin", card_body(token), format="json", HTTP_IDEMPOTENCY_KEY="order-1-card")
    again = live.post("/payin", card_body(token), format="json", HTTP_IDEMPOTENCY_KEY="order-1-card")

    assert first.status_code == 202, first.content
    got = first.json()
    assert got["status"] == "PROCESSING" and got["paidAt"] is None
    assert (again.status_code, again.json(), again["Idempotent-Replayed"]) == (202, got, "true")
    payin = Payin.objects.get(pk=got["id"])
    assert charges.pays[payin.rail_charge_id] == 1 and charges.charges[payin.rail_charge_id]["status"] == "paid"
    assert events_of(got["id"]) == [("payin.created", None)]
    assert not LedgerTransaction.objects.filter(object_id=got["id"]).exists()


def test_a_slow_answer_past_the_timeout_is_processing_too(charges, live, settings):
    settings.EFI_TIMEOUT_SECONDS = 0.5
    charges.fail_next("POST", "/v1/charge/", mode="hang", seconds=1.5)

    response = live.post("/payin", card_body(charges.card_token(outcome="paid")), format="json")

    assert response.status_code == 202
    assert response.json()["status"] == "PROCESSING"


def test_approved_by_the_issuer_but_under_efis_analysis_is_processing_not_paid(charges, live):
    response = live.post("/payin", card_body(charges.card_token(outcome="approved")), format="json")

    assert response.status_code == 202
    got = response.json()
    assert got["status"] == "PROCESSING" and got["card"]["installmentValue"] is None
    assert not LedgerTransaction.objects.filter(object_id=got["id"]).exists()


def test_the_installments_table_is_efis(charges, live):
    response = live.get("/payin/installments?amount=10000&brand=mastercard")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["amount"], body["brand"], len(body["data"])) == (10_000, "mastercard", 12)
    assert body["data"][3] == {"installments": 4, "installmentValue": 2699, "hasInterest": True,
                               "interestPercentage": 199}
    assert [r["query"] for r in calls(charges, "GET", "/v1/installments")] == ["brand=mastercard&total=10000"]


def test_the_installments_query_is_checked_and_test_mode_has_a_table_without_interest(charges, api):
    bad = api.get("/payin/installments?amount=99&brand=diners")
    table = api.get("/payin/installments?amount=1000&brand=visa")

    assert bad.status_code == 400
    assert [d["param"] for d in bad.json()["error"]["details"]] == ["amount", "brand"]
    assert table.json()["data"][2] == {"installments": 3, "installmentValue": 334, "hasInterest": False,
                                       "interestPercentage": 0}
    assert charges.requests_log == []  # test mode never reaches Efí


def test_test_mode_cards_still_take_test_numbers_on_the_simulator(charges, api):
    response = api.post("/payin", payin_body("CREDIT_CARD"), format="json")

    assert response.status_code == 201 and response.json()["status"] == "PAID"
    assert rails.for_mode(False).name == "simulator" and charges.requests_log == []


def test_card_data_is_never_in_a_request_to_efi(charges, live):
    live.post("/payin", card_body(charges.card_token(outcome="paid")), format="json")

    sent = str([r["body"] for r in charges.requests_log])
    assert "4111" not in sent and "cvv" not in sent.lower()
    assert Client().get("/health").status_code in (200, 503)
