"""The payer's pages in a real browser: Portuguese in a browser set to Portuguese, copy buttons and the countdown
included (their words come from the page); English on the pay page of a browser set to English, whose printable
boleto is still Portuguese (a Brazilian bank document). Each is screenshotted."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from payments.models import PayinStatus, PaymentMethod
from tests.e2e.helpers import shot
from tests.factories import MerchantFactory
from tests.payments.hosted.test_pages import make_payin

pytestmark = pytest.mark.ledger_unchecked  # the charges are written in the status each page needs, not paid


def test_payer_pages_are_in_portuguese(new_page, server):
    page = new_page(locale="pt-BR")
    merchant = MerchantFactory(name="Café da Ana")
    pix = make_payin(merchant, PaymentMethod.PIX)
    boleto = make_payin(merchant, PaymentMethod.BOLETO, boleto_instructions="Não receber após o vencimento")
    card = make_payin(merchant, PaymentMethod.CREDIT_CARD, status=PayinStatus.FAILED, paid_at=None,
                      failure_message="The card was declined.")

    page.goto(f"/pay/{pix.public_token}")

    expect(page.locator("html")).to_have_attribute("lang", "pt-br")
    expect(page.get_by_role("heading", name="Pague com Pix")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("Aguardando pagamento")
    expect(page.get_by_text("Abra o app do seu banco e escolha Pix.")).to_be_visible()
    expect(page.locator("[data-countdown]")).to_contain_text("Tempo restante:")
    expect(page.get_by_role("button", name="Copiar código")).to_be_visible()
    expect(page.get_by_text("Pagamento processado pela Pagamentos em nome de Café da Ana.")).to_be_visible()
    shot(page, "pay-page-pt")

    page.goto(f"/pay/{boleto.public_token}")
    expect(page.get_by_role("heading", name="Pague com boleto")).to_be_visible()
    page.get_by_role("link", name="Abrir boleto para impressão").click()
    expect(page.get_by_role("button", name="Imprimir")).to_be_visible()
    expect(page.get_by_role("link", name="Voltar à página de pagamento")).to_be_visible()
    expect(page.get_by_text("Não receber após o vencimento", exact=False)).to_have_count(1)
    shot(page, "boleto-pt")

    page.goto(f"/pay/{card.public_token}")
    expect(page.get_by_role("status")).to_contain_text("Falhou")
    expect(page.get_by_text("O cartão foi recusado.")).to_be_visible()
    shot(page, "pay-page-card-failed-pt")


def test_an_english_browser_reads_the_pay_page_in_english_and_the_boleto_in_portuguese(page, server):
    """Issue 37, item 18: Chromium set to English (its Accept-Language: en-US) asks for English first."""
    merchant = MerchantFactory(name="Café da Ana")
    pix = make_payin(merchant, PaymentMethod.PIX)
    boleto = make_payin(merchant, PaymentMethod.BOLETO)

    page.goto(f"/pay/{pix.public_token}")

    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("heading", name="Pay with Pix")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("Waiting for payment")
    expect(page.get_by_role("button", name="Copy code")).to_be_visible()

    page.goto(f"/pay/{boleto.public_token}/boleto")

    expect(page.locator("html")).to_have_attribute("lang", "pt-br")
    expect(page.get_by_role("button", name="Imprimir")).to_be_visible()
    expect(page.get_by_role("link", name="Voltar à página de pagamento")).to_be_visible()
    shot(page, "boleto-english-browser")
