"""Issue 38 (f), without a browser: the hosted card page of a live charge. Its CSP widens for Efí's tokenizer on this
page only; its form never names the card's fields; a post is CSRF-checked, validated, and pays once: a second submit
finds the charge PROCESSING and asks Efí nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from core.errors import InvalidState
from payments.models import Payin
from payments.payins.rail_charges import live_card_pay
from tests.payments.payins.test_payin_api import ADDRESS_IN, payin_body
from tests.payments.rails.test_efi_cards import card_body

pytestmark = pytest.mark.django_db

FORM = {**ADDRESS_IN, "neighborhood": "Bela Vista", "installments": "2"}


def hosted(live) -> tuple[dict, str]:
    charge = live.post("/payin", card_body(None), format="json").json()
    return charge, charge["paymentUrl"].rsplit("/", 1)[1]


def test_the_card_page_allows_exactly_the_tokenizer_and_other_pages_do_not(charges, live, settings):
    settings.EFI_TOKENIZER_SCRIPT_URL = "https://tokenizer.example.net/lib/payment-token-efi.js"
    settings.EFI_TOKENIZER_CONNECT_ORIGINS = ["https://*.efipay.com.br"]
    _, token = hosted(live)

    page = Client().get(f"/pay/{token}")

    assert page.status_code == 200
    assert page["Content-Security-Policy"] == (
        "default-src 'none'; script-src 'self' https://tokenizer.example.net; style-src 'self'; "
        "img-src 'self' http://testserver; connect-src 'self' https://tokenizer.example.net https://*.efipay.com.br; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
    assert page["Referrer-Policy"] == "same-origin"
    html = page.content.decode()
    assert '<script src="https://tokenizer.example.net/lib/payment-token-efi.js" defer></script>' in html
    assert 'data-payee-code="0123456789abcdef0123456789abcdef"' in html and 'data-environment="production"' in html
    for field in ("data-card-number", "data-card-month", "data-card-year", "data-card-cvv"):
        tag = html[html.rindex("<input", 0, html.index(field)):html.index(">", html.index(field))]
        assert "name=" not in tag, tag  # a browser never submits them
    boleto = live.post("/payin", payin_body("BOLETO"), format="json").json()
    other = Client().get(f"/pay/{boleto['paymentUrl'].rsplit('/', 1)[1]}")
    assert "script-src 'self';" in other["Content-Security-Policy"]
    assert "form-action 'none'" in other["Content-Security-Policy"]
    assert other["Referrer-Policy"] == "no-referrer"


def test_the_form_post_is_csrf_checked(charges, live):
    _, token = hosted(live)
    browser = Client(enforce_csrf_checks=True)

    refused = browser.post(f"/pay/{token}/card", {**FORM, "payment_token": charges.card_token()})

    assert refused.status_code == 403
    assert charges.pays == {}


def test_a_post_with_a_bad_token_or_address_shows_the_form_again_and_efi_hears_nothing(charges, live):
    _, token = hosted(live)

    bad_token = Client().post(f"/pay/{token}/card", {**FORM, "payment_token": "x"})
    bad_zip = Client().post(f"/pay/{token}/card", {**FORM, "zipCode": "123", "payment_token": "a" * 40})

    assert bad_token.status_code == 400
    assert "Não foi possível criptografar seu cartão." in bad_token.content.decode()
    assert bad_zip.status_code == 400
    assert "Preencha o endereço de cobrança" in bad_zip.content.decode()
    assert 'value="Bela Vista"' in bad_zip.content.decode()  # what the payer typed stays
    assert charges.requests_log == []


def test_the_page_pays_once_and_a_second_submit_asks_efi_nothing(charges, live):
    charge, token = hosted(live)

    first = Client().post(f"/pay/{token}/card", {**FORM, "payment_token": charges.card_token(outcome="approved")})
    second = Client().post(f"/pay/{token}/card", {**FORM, "payment_token": charges.card_token(outcome="paid")})

    assert (first.status_code, first["Location"]) == (302, f"/pay/{token}")
    assert (second.status_code, second["Location"]) == (302, f"/pay/{token}")
    payin = Payin.objects.get(pk=charge["id"])
    assert payin.status == "PROCESSING"
    assert charges.pays == {payin.rail_charge_id: 1}
    with pytest.raises(InvalidState):
        live_card_pay(payin_id=payin.pk, payment_token=charges.card_token(), installments=1,
                      billing_address=payin.customer["address"])
    assert charges.pays == {payin.rail_charge_id: 1}
    assert payin.customer["address"] == {"street": "Av. Paulista", "number": "1000", "complement": "",
                                         "neighborhood": "Bela Vista", "zipCode": "01310100", "city": "São Paulo",
                                         "state": "SP"}


def test_the_page_lists_efis_installments_for_the_brand(charges, live):
    _, token = hosted(live)

    table = Client().get(f"/pay/{token}/installments?brand=elo")
    unknown = Client().get(f"/pay/{token}/installments?brand=diners")

    assert table.status_code == 200
    assert table.json()["data"][0] == {"installments": 1, "installmentValue": 5000, "hasInterest": False,
                                       "interestPercentage": 0, "label": "1x de R$ 50,00 (sem juros)"}
    assert table.json()["data"][11]["label"] == "12x de R$ 5,17 (com juros)"
    assert unknown.status_code == 400
