"""The log-in form works with the keyboard alone: focus starts in the email field, Tab moves through the form in
order, Enter submits."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import PASSWORD
from tests.factories import MerchantFactory

pytestmark = pytest.mark.browser


def focused(page) -> str:
    return page.evaluate("() => document.activeElement.getAttribute('name') || document.activeElement.textContent")


def test_log_in_with_the_keyboard_only(page, server):
    merchant = MerchantFactory(name="Loja do Teclado", owner_two_factor=False)  # the password form alone
    page.goto("/dashboard/login/")

    assert focused(page) == "username"  # autofocus
    page.keyboard.type(merchant.owner.email)
    page.keyboard.press("Tab")
    assert focused(page) == "password"
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Tab")
    assert focused(page) == "Log in"
    page.keyboard.press("Shift+Tab")
    assert focused(page) == "password"
    page.keyboard.press("Enter")

    expect(page.get_by_role("heading", name="Loja do Teclado")).to_be_visible()
    expect(page).to_have_url(f"{server.url}/dashboard/")
