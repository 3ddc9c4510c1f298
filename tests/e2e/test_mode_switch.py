"""Issue 37, item 4 in a real browser: the page that shows a new key is the answer to a POST
(/dashboard/integrations/keys/); switching test/live mode there went back to that URL by GET, which answered an empty
405, and Chromium showed its own error page. Now the switch (and the language switch) land on the Integrations page,
and switching on a charge's page lands on the charges list (the charge is of the other mode)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.helpers import log_in, sandbox_charge
from tests.factories import MerchantFactory

pytestmark = pytest.mark.browser


def documents(page: Page) -> list[tuple[int, str]]:
    """(status, path) of every page the browser loads from now on, redirects included."""
    seen: list[tuple[int, str]] = []
    page.on("response", lambda response: seen.append((response.status, response.url.split("/", 3)[3]))
            if response.request.resource_type == "document" else None)
    return seen


def switch_mode(page: Page, mode: str) -> None:
    page.get_by_role("group", name="Mode").get_by_role("button", name=mode).click()
    expect(page.get_by_role("group", name="Mode").get_by_role("button", name=mode)).to_have_attribute(
        "aria-pressed", "true")


def test_switching_mode_or_language_after_creating_a_key_lands_on_the_integrations_page(page, server):
    merchant = MerchantFactory(name="Loja da Ema")
    log_in(page, merchant.owner.email)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Integrations").click()
    page.get_by_label("Label").fill("shop server")
    page.get_by_role("combobox", name="Mode").select_option(label="Test (sandbox)")
    page.get_by_role("button", name="Create key pair").click()
    expect(page.get_by_role("heading", name="Your new test key pair")).to_be_visible()
    assert page.url == f"{server.url}/dashboard/integrations/keys/"
    loaded = documents(page)

    switch_mode(page, "Live")

    expect(page.get_by_role("heading", name="API key pairs")).to_be_visible()
    assert page.url == f"{server.url}/dashboard/integrations/"
    assert [status for status, _path in loaded] == [302, 200]

    page.get_by_role("button", name="Create key pair").click()  # the form now offers the live mode first
    expect(page.get_by_role("heading", name="Your new live key pair")).to_be_visible()
    loaded.clear()
    page.get_by_role("group", name="Language").get_by_role("button", name="Português (Brasil)").click()

    expect(page.get_by_role("heading", name="Pares de chaves de API")).to_be_visible()
    assert page.url == f"{server.url}/dashboard/integrations/"
    assert 405 not in [status for status, _path in loaded]


def test_switching_mode_on_a_charge_lands_on_the_charges_list(page, server):
    merchant = MerchantFactory(name="Loja da Ema")
    pix = sandbox_charge(merchant, method="PIX", reference_id="pedido-7")
    log_in(page, merchant.owner.email)
    page.goto(f"/dashboard/charges/{pix.pk}/")
    expect(page.get_by_role("heading", name="Pix charge of R$ 80,00")).to_be_visible()

    switch_mode(page, "Live")

    expect(page.get_by_role("heading", name="Charges (live mode)")).to_be_visible()
    assert page.url == f"{server.url}/dashboard/charges/"
    expect(page.get_by_role("row").filter(has_text="pedido-7")).to_have_count(0)  # a test charge, not listed live
    switch_mode(page, "Test")
    expect(page.get_by_role("row").filter(has_text="pedido-7")).to_have_count(1)
