"""Issue 37, item 3 in a real browser: the navigation fits one row at 1280 px (it wrapped into four) and folds behind a
menu button at 390 px (it filled the first screen); /favicon.ico is served (every page asked for a missing one); the
date inputs take and show dates as the pages print them (Chromium drew `type="date"` in the browser's locale); a
timestamp keeps "(horário de Brasília)" on one line (it wrapped to four lines on the charge page). In Portuguese,
the dashboard's longer language, and in English. Screenshots: overview, a charge, payouts and Security, 1280 and
390 px, in Portuguese (`-pt`), and the phone's open menu."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Merchant
from payments.ledger import services as ledger
from payments.models import Payin
from payments.payins import sandbox
from payments.payouts import services as payouts
from payments.payouts.validation import payout_request_validate
from tests.e2e.helpers import (
    DESKTOP,
    MOBILE,
    SCREENSHOTS,
    _capture,
    log_in,
    no_horizontal_scroll,
    sandbox_charge,
    second_step,
    shot,
)
from tests.factories import MerchantFactory, UserFactory

pytestmark = pytest.mark.browser

PRINTED_DATE = re.compile(r"^\d{2}/\d{2}/\d{4}$")

# The boxes of the main navigation's links: how many rows they make, and whether they are on screen.
_NAV_ROWS = """() => {
  const links = [...document.querySelectorAll('nav[aria-label] a')];
  const tops = new Set(links.map((a) => Math.round(a.getBoundingClientRect().top)));
  return {links: links.length, rows: tops.size, visible: links.filter((a) => a.offsetParent !== null).length};
}"""

# Each timestamp with its zone: how many lines it takes, and whether it sticks out of the box it is in.
_TIMESTAMPS = """() => [...document.querySelectorAll('time.zoned')].filter((t) => t.offsetParent !== null).map((t) => {
  const box = t.getBoundingClientRect(), parent = t.parentElement.getBoundingClientRect();
  const lines = new Set([...t.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
  return {text: t.textContent, lines: lines, outside: Math.round(box.right - parent.right)};
})"""


def shop_with_activity() -> tuple[Merchant, Payin]:
    merchant = MerchantFactory(name="Padaria Pão de Queijo da Conceição")  # a long name, as real ones are
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=50_000, reason="Initial funds",
                             staff=UserFactory(is_staff=True))
    paid = sandbox_charge(merchant, method="PIX", reference_id="pedido-1001")
    sandbox.payin_simulate(merchant=merchant, payin_id=paid.pk, action="pay")
    sandbox_charge(merchant, method="PIX", reference_id="pedido-1002")
    payouts.payout_create(merchant=merchant, livemode=False, data=payout_request_validate(
        {"amount": 12_345, "pixKeyType": "EVP", "pixKey": "123e4567-e12b-12d1-a456-426655440000",
         "referenceId": "saque-1"}, merchant=merchant))
    return merchant, paid


def in_portuguese(page: Page) -> None:
    page.get_by_role("group", name="Language").get_by_role("button", name="Português (Brasil)").click()
    expect(page.get_by_role("navigation", name="Principal")).to_be_visible()


@pytest.mark.parametrize("language", ["en", "pt-BR"])
def test_the_navigation_is_one_row_at_1280_px_and_a_menu_at_390_px(page, server, language):
    merchant, _paid = shop_with_activity()
    log_in(page, merchant.owner.email)
    if language == "pt-BR":
        in_portuguese(page)
    nav = page.locator("nav[aria-label]")

    assert page.evaluate(_NAV_ROWS) == {"links": 11, "rows": 1, "visible": 11}
    header = page.locator("header.top").bounding_box()
    assert header["height"] <= 110, header
    expect(page.locator(".menu-button")).to_be_hidden()

    page.set_viewport_size(MOBILE)
    menu = page.locator(".menu-button")
    expect(menu).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(nav).to_be_hidden()
    heading = page.get_by_role("heading", level=1).bounding_box()
    assert heading["y"] + heading["height"] < 250, heading  # the page starts on the first screen
    expect(page.get_by_role("group", name=re.compile("Mode|Modo"))).to_be_visible()  # the mode stays in sight

    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    assert page.evaluate(_NAV_ROWS) == {"links": 11, "rows": 11, "visible": 11}  # a list, one link a line
    assert no_horizontal_scroll(page) == (True, "")
    if language == "pt-BR":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        _capture(page, SCREENSHOTS / "menu-open-mobile.png")
    page.keyboard.press("Escape")
    expect(nav).to_be_hidden()
    expect(menu).to_be_focused()
    menu.click()
    nav.get_by_role("link", name=re.compile("^(Payouts|Saques)$")).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(re.compile("Payouts|Saques"))
    expect(nav).to_be_hidden()  # a new page starts folded
    page.set_viewport_size(DESKTOP)


def test_without_javascript_the_navigation_stays_open_on_a_phone(browser, server):
    merchant, _paid = shop_with_activity()
    context = browser.new_context(viewport=MOBILE, base_url=server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/dashboard/login/")
        page.get_by_label("Email").fill(merchant.owner.email)
        page.get_by_role("textbox", name="Password", exact=True).fill("correct-horse-battery")
        page.get_by_role("button", name="Log in").click()
        second_step(page, merchant.owner.email)

        expect(page.get_by_role("navigation", name="Main")).to_be_visible()
        expect(page.locator(".menu-button")).to_be_hidden()
    finally:
        context.close()


def test_every_page_finds_its_favicon(page, server):
    merchant, paid = shop_with_activity()
    missing = []
    page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
    log_in(page, merchant.owner.email)

    for path in ("/dashboard/", f"/dashboard/charges/{paid.pk}/", "/dashboard/payouts/", "/dashboard/security/",
                 "/dashboard/login/"):
        page.goto(path)
    icon = page.request.get("/favicon.ico")

    assert missing == []
    assert icon.status == 200
    assert icon.headers["content-type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    assert icon.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert page.locator('link[rel="icon"]').get_attribute("href") == "/favicon.ico"


def test_date_inputs_take_and_show_dates_as_the_pages_print_them(page, server):
    merchant, paid = shop_with_activity()
    log_in(page, merchant.owner.email)
    in_portuguese(page)
    page.get_by_role("navigation", name="Principal").get_by_role("link", name="Cobranças").click()
    printed = page.locator("time.zoned .when").first.inner_text()  # "07/12/2026 20:00"
    day = printed.split(" ")[0]
    assert PRINTED_DATE.match(day)
    since = page.get_by_role("textbox", name="De")
    expect(since).to_have_attribute("placeholder", "dd/mm/aaaa")
    assert since.get_attribute("type") == "text"

    since.fill(day)
    page.get_by_label("Até").fill(day)
    page.get_by_role("button", name="Aplicar").click()

    expect(page.get_by_role("textbox", name="De")).to_have_value(day)
    expect(page.get_by_role("row").filter(has_text="pedido-1001")).to_have_count(1)
    page.goto(f"/dashboard/charges/?created_from={paid.created_at.date().isoformat()}")  # an older link's format
    expect(page.get_by_role("textbox", name="De")).to_have_value(re.compile(PRINTED_DATE.pattern))
    page.goto("/dashboard/audit/")
    expect(page.get_by_label("De")).to_have_attribute("placeholder", "dd/mm/aaaa")
    page.get_by_label("De").fill("31/02/2026")
    page.get_by_role("button", name="Filtrar").click()
    expect(page.get_by_text("Informe uma data como 31/12/2026.")).to_be_visible()


@pytest.mark.parametrize("viewport", [DESKTOP, MOBILE], ids=["1280", "390"])
def test_a_timestamp_keeps_its_zone_on_one_line(page, server, viewport):
    merchant, paid = shop_with_activity()
    log_in(page, merchant.owner.email)
    in_portuguese(page)
    page.set_viewport_size(viewport)

    page.goto(f"/dashboard/charges/{paid.pk}/")

    stamps = page.evaluate(_TIMESTAMPS)
    assert len(stamps) >= 5
    assert all(s["text"].endswith("(horário de Brasília)") for s in stamps), stamps
    assert [s for s in stamps if s["lines"] > 2 or s["outside"] > 0] == []


def test_screenshots_of_overview_charge_payouts_and_security_in_portuguese(page, server):
    merchant, paid = shop_with_activity()
    log_in(page, merchant.owner.email)
    in_portuguese(page)

    shot(page, "overview-pt")
    page.goto(f"/dashboard/charges/{paid.pk}/")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Pix")
    shot(page, "charge-detail-pt")
    page.goto("/dashboard/payouts/")
    expect(page.get_by_role("row").filter(has_text="R$ 123,45")).to_be_visible()
    shot(page, "payouts-pt")
    page.goto("/dashboard/security/")
    expect(page.get_by_test_id("two-factor-status")).to_be_visible()
    shot(page, "security-pt")
