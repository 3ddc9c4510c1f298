"""Issue 38 (f): the hosted card page in Chromium. A live card charge created without a token is paid on its page:
the card is tokenized in the browser by Efí's library (here the fake Charges API's stand-in for it, served from the
fake's origin, the one origin the page's CSP allows besides ours), the installments come from Efí's table, and only
the token, the installments and the billing address reach our server."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from payments.models import Payin
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.payins.test_payin_api import ADDRESS_IN, payin_body
from tests.payments.rails.conftest import NO_PIX_API
from tests.payments.rails.efi_charges_fake import FakeEfiCharges
from tests.payments.rails.efi_fake import Certificates

pytestmark = pytest.mark.slow


@pytest.fixture
def fake(tmp_path, settings, server) -> Iterator[FakeEfiCharges]:
    running = FakeEfiCharges(Certificates(tmp_path / "certificates")).start()
    origin = "https://" + urlsplit(running.url).netloc
    settings.PAYMENTS_RAIL = "efi"
    settings.EFI_BASE_URL = NO_PIX_API
    settings.EFI_CHARGES_BASE_URL = running.url
    settings.EFI_CLIENT_ID, settings.EFI_CLIENT_SECRET = running.client_id, running.client_secret
    settings.EFI_CA_FILE = str(running.certificates.ca_file)
    settings.EFI_WEBHOOK_SECRET = "hosted-card-notification-secret"
    settings.EFI_PAYEE_CODE = "payee0123456789"
    settings.EFI_TOKENIZER_SCRIPT_URL = running.tokenizer_script_url
    settings.EFI_TOKENIZER_CONNECT_ORIGINS = [origin]
    try:
        yield running
    finally:
        running.stop()
    assert running.errors == [], running.errors


@pytest.fixture
def card_page(browser, server):
    """A browser context that trusts the fake's test certificate, with our requests' bodies recorded."""
    context = browser.new_context(base_url=server.url, ignore_https_errors=True, timezone_id="America/Sao_Paulo",
                                  locale="pt-BR")  # the page follows the browser (ADR 0082): a Brazilian payer
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.sent = []
    page.on("request", lambda request: page.sent.append((request.url, request.post_data or "")))
    yield page
    context.close()


def live_card_charge(amount: int = 30_000) -> dict:
    merchant = MerchantFactory()
    client = APIClient()
    key, secret = ApiKeyFactory.with_secret(merchant=merchant, livemode=True)
    client.credentials(HTTP_X_API_KEY=key.public_key, HTTP_X_API_SECRET=secret)
    body = payin_body("CREDIT_CARD", amount=amount, items=[{"title": "Bicicleta", "quantity": 1, "unitPrice": amount}])
    body["customer"]["address"] = dict(ADDRESS_IN)
    del body["card"]
    response = client.post("/payin", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def fill_card(page, number: str) -> None:
    page.get_by_label("Número do cartão").fill(number)
    page.get_by_label("Número do cartão").blur()
    page.get_by_label("Mês de validade (MM)").fill("12")
    page.get_by_label("Ano de validade (AAAA)").fill("2031")
    page.get_by_label("Código de segurança (CVV)").fill("123")
    page.get_by_label("Bairro").fill("Bela Vista")


def test_a_payer_pays_in_three_installments_and_the_number_never_reaches_us(card_page, fake, server):
    charge = live_card_charge()
    path = urlsplit(charge["paymentUrl"]).path

    response = card_page.goto(path)

    csp = response.headers["content-security-policy"]
    origin = "https://" + urlsplit(fake.url).netloc
    assert f"script-src 'self' {origin};" in csp and f"connect-src 'self' {origin} {origin};" in csp
    assert "form-action 'self'" in csp
    fill_card(card_page, "4111 1111 1111 1111")
    installments = card_page.get_by_label("Parcelas")
    expect(installments.locator("option")).to_have_count(12)
    expect(installments.locator("option").nth(2)).to_have_text("3x de R$ 100,00 (sem juros)")
    installments.select_option("3")
    card_page.get_by_role("button", name="Pagar R$ 300,00").click()

    expect(card_page.get_by_role("status")).to_contain_text("Pago")
    payin = Payin.objects.get(pk=charge["id"])
    assert (payin.status, payin.card["installments"], payin.card["installmentValue"]) == ("PAID", 3, 10_000)
    assert payin.customer["address"]["neighborhood"] == "Bela Vista"
    assert fake.tokenizations == [{"payee_code": "payee0123456789", "environment": "production", "last4": "1111"}]
    [paid] = [r for r in fake.requests_log if r["path"].endswith("/pay")]
    assert paid["body"]["payment"]["credit_card"]["installments"] == 3
    ours = [data for url, data in card_page.sent if url.startswith(server.url)]
    assert any("payment_token=" in data for data in ours)
    assert not any("4111" in data or "cvv" in data.lower() for data in ours)


def test_a_refused_card_shows_the_reason_and_the_charge_failed(card_page, fake, server):
    charge = live_card_charge()
    card_page.goto(urlsplit(charge["paymentUrl"]).path)

    fill_card(card_page, "4000000000000002")
    card_page.get_by_role("button", name="Pagar R$ 300,00").click()

    expect(card_page.get_by_role("status")).to_contain_text("Falhou")
    expect(card_page.get_by_text("Saldo insuficiente.")).to_be_visible()
    assert Payin.objects.get(pk=charge["id"]).failure_code == "insufficient_funds"


def test_other_pages_keep_their_strict_policy(card_page, fake, server):
    charge = live_card_charge()
    Payin.objects.filter(pk=charge["id"]).update(status="FAILED")

    response = card_page.goto(urlsplit(charge["paymentUrl"]).path)

    csp = response.headers["content-security-policy"]
    assert "script-src 'self';" in csp and "form-action 'none'" in csp
    expect(card_page.locator("[data-card-form]")).to_have_count(0)
