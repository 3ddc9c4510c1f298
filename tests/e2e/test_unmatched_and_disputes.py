"""Issue 14 in a real browser: the dashboard's Unmatched payments and Disputes pages.

A payer pays a PENDING Pix charge with another amount (through the sandbox, in the test process): the owner finds the
payment under "Unmatched", keeps it and sees the overview's available balance grow by the amount less the fee, then
sets "accept" for that kind, and the next such payment is accepted on arrival. A Viewer reads the payment, but the
server refuses its decision. A paid card charge is charged back: the owner follows the charge page to the dispute,
reads its deadline, sends evidence and sees it under review, its amount held on the overview meanwhile.

The browser asks for English, as in the other browser tests (the dashboard follows the browser's languages).
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Merchant, Role
from core import dates
from payments.models import Dispute, Payin, UnmatchedPayment, UnmatchedStatus
from payments.payins import sandbox
from payments.payins import services as payins
from payments.payins.validation import payin_request_validate
from tests.e2e.helpers import log_in, section
from tests.factories import MembershipFactory, MerchantFactory, totp_enrol

pytestmark = pytest.mark.browser

SHOP = "Loja do Caio"
SAO_PAULO = ZoneInfo("America/Sao_Paulo")
REFUSED = "Your role in this account does not allow this. Ask an owner or admin."


@pytest.fixture(autouse=True)
def _fees(settings):
    """Fees stated here, so the amounts the pages show are known: 0.99 % on Pix, 3.99 % + R$ 0,39 on a card."""
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED = 99, 399, 39


# --- Data, made in the test process through the services --------------------------------------------------------------
def charge_create(merchant: Merchant, *, method: str, amount: int, reference_id: str) -> Payin:
    """A test-mode charge, as POST /payin makes it: a Pix starts PENDING, the sandbox's test card is paid at once."""
    body = {"paymentMethod": method, "amount": amount, "referenceId": reference_id, "payerIp": "203.0.113.20",
            "isPhysicalProduct": False, "items": [{"title": "Curso de cerâmica", "quantity": 1, "unitPrice": amount}],
            "customer": {"name": "Bruna Lima", "document": "529.982.247-25", "email": "bruna@example.com"}}
    if method == "CREDIT_CARD":
        body["card"] = {"holderName": "BRUNA LIMA", "number": "4111111111111111", "expirationMonth": "11",
                        "expirationYear": "2031", "cvv": "321"}
    data = payin_request_validate(body, merchant=merchant, livemode=False, today=dates.sao_paulo_today())
    return payins.payin_create(merchant=merchant, livemode=False, data=data)


def pay_another_amount(merchant: Merchant, payin: Payin, amount: int) -> UnmatchedPayment:
    """The payer's bank sends `amount` naming the charge: an AMOUNT_MISMATCH unmatched payment."""
    sandbox.payin_simulate(merchant=merchant, payin_id=payin.pk, action="pay", amount=amount)
    return UnmatchedPayment.objects.filter(payin=payin).latest("created_at")


@pytest.fixture
def mismatch(server) -> tuple[Merchant, Payin, UnmatchedPayment]:
    """A shop whose PENDING Pix charge of R$ 150,00 was paid with R$ 100,00, held by the default policy."""
    merchant = MerchantFactory(name=SHOP)
    pix = charge_create(merchant, method="PIX", amount=15_000, reference_id="pedido-150")
    unmatched = pay_another_amount(merchant, pix, 10_000)
    assert unmatched.status == UnmatchedStatus.HELD
    return merchant, pix, unmatched


# --- What the browser does -------------------------------------------------------------------------------------------
def nav_to(page: Page, name: str) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True).click()


def stat(page: Page, heading: str):
    """The value of one of the overview's balance cards."""
    return section(page, heading).locator(".stat-value")


def unmatched_row(page: Page, amount: str):
    return page.get_by_role("table").get_by_role("row").filter(has_text=amount)


def post_form(page: Page, path: str, data: dict[str, str]) -> None:
    """Submit a form to `path` from the page, as a hand-made form in the browser would: with the CSRF token every
    dashboard page carries (the language switch's form), so that a refusal is the server's role check."""
    page.evaluate("""([path, data]) => {
      const form = document.createElement("form");
      form.method = "post";
      form.action = path;
      const token = document.querySelector("input[name=csrfmiddlewaretoken]").value;
      for (const [name, value] of Object.entries({csrfmiddlewaretoken: token, ...data})) {
        const input = document.createElement("input");
        input.type = "hidden";
        input.name = name;
        input.value = value;
        form.append(input);
      }
      document.body.append(form);
      form.submit();
    }""", [path, data])
    page.wait_for_url(f"**{path}")


# --- Unmatched payments ----------------------------------------------------------------------------------------------
def test_the_owner_keeps_an_unmatched_payment_then_accepts_the_kind_on_arrival(page, mismatch):
    merchant, pix, _ = mismatch

    log_in(page, merchant.owner.email)
    expect(page.get_by_role("heading", name=SHOP)).to_be_visible()
    expect(stat(page, "Available balance")).to_have_text("R$ 0,00")
    expect(stat(page, "Held balance")).to_have_text("R$ 100,00")
    nav_to(page, "Unmatched")

    expect(page.get_by_role("heading", name="Unmatched payments")).to_be_visible()
    row = unmatched_row(page, "R$ 100,00")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Amount Mismatch")
    expect(row).to_contain_text("Held")
    expect(row).to_contain_text("Bruna Lima")
    row.get_by_role("link").click()

    expect(page.get_by_role("heading", name="Unmatched payment R$ 100,00")).to_contain_text("Held")
    details = section(page, "Details")
    expect(details).to_contain_text("Amount Mismatch")
    expect(details.get_by_role("link", name=str(pix.pk))).to_be_visible()  # the charge it named
    page.get_by_role("button", name="Keep it (move to available)").click()

    expect(page.get_by_role("alert").filter(has_text="Done: the payment is now Accepted.")).to_be_visible()
    expect(page.get_by_role("heading", name="Unmatched payment R$ 100,00")).to_contain_text("Accepted")
    expect(page.get_by_role("button", name="Keep it (move to available)")).to_have_count(0)
    expect(section(page, "Details")).to_contain_text("R$ 0,99")  # the fee: 0.99 % of R$ 100,00
    nav_to(page, "Overview")
    expect(stat(page, "Available balance")).to_have_text("R$ 99,01")
    expect(section(page, "Held balance")).to_have_count(0)  # nothing is held: the overview drops that stat

    nav_to(page, "Unmatched")
    expect(page.get_by_label("Amount Mismatch")).to_have_value("hold")  # the default for another amount
    page.get_by_label("Amount Mismatch").select_option(label="Accept")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("alert").filter(has_text="What happens to unmatched payments was saved.")).to_be_visible()
    expect(page.get_by_label("Amount Mismatch")).to_have_value("accept")

    second = pay_another_amount(merchant, pix, 5_000)
    page.reload()

    assert second.status == UnmatchedStatus.ACCEPTED
    expect(unmatched_row(page, "R$ 50,00")).to_contain_text("Accepted")
    expect(unmatched_row(page, "R$ 100,00")).to_contain_text("Accepted")
    nav_to(page, "Overview")
    expect(stat(page, "Available balance")).to_have_text("R$ 148,51")  # 99,01 + 50,00 less its 0,50 fee


@pytest.fixture
def viewer_page(new_page, mismatch) -> Page:
    """A Viewer of the shop, with an authenticator, signed in in a browser of their own."""
    merchant, _, _ = mismatch
    membership = MembershipFactory(merchant=merchant, role=Role.VIEWER)
    totp_enrol(membership.user)
    page = new_page()
    log_in(page, membership.user.email)
    return page


def test_a_viewer_reads_an_unmatched_payment_and_the_server_refuses_its_decisions(viewer_page, mismatch):
    _, _, unmatched = mismatch
    nav_to(viewer_page, "Unmatched")
    row = unmatched_row(viewer_page, "R$ 100,00")
    expect(row).to_contain_text("Amount Mismatch")
    row.get_by_role("link").click()
    expect(viewer_page.get_by_role("heading", name="Unmatched payment R$ 100,00")).to_contain_text("Held")

    with viewer_page.expect_response(f"**/unmatched/{unmatched.pk}/decide/") as decided:
        post_form(viewer_page, f"/dashboard/unmatched/{unmatched.pk}/decide/", {"action": "accept"})

    assert decided.value.status == 403
    expect(viewer_page.get_by_text(REFUSED)).to_be_visible()

    with viewer_page.expect_response("**/unmatched/policy/") as policy:
        post_form(viewer_page, "/dashboard/unmatched/policy/", {"AMOUNT_MISMATCH": "accept"})

    assert policy.value.status == 403
    expect(viewer_page.get_by_text(REFUSED)).to_be_visible()
    viewer_page.goto(f"/dashboard/unmatched/{unmatched.pk}/")
    expect(viewer_page.get_by_role("heading", name="Unmatched payment R$ 100,00")).to_contain_text("Held")
    unmatched.refresh_from_db()
    assert unmatched.status == UnmatchedStatus.HELD
    nav_to(viewer_page, "Unmatched")
    expect(viewer_page.get_by_label("Amount Mismatch")).to_have_value("hold")  # the policy is unchanged


def test_a_viewer_is_offered_no_decision(viewer_page, mismatch):
    _, _, unmatched = mismatch

    viewer_page.goto(f"/dashboard/unmatched/{unmatched.pk}/")

    expect(viewer_page.get_by_role("heading", name="Unmatched payment R$ 100,00")).to_be_visible()
    expect(viewer_page.get_by_role("button", name="Keep it (move to available)")).to_have_count(0)
    expect(viewer_page.get_by_role("button", name="Send it back to the payer")).to_have_count(0)
    nav_to(viewer_page, "Unmatched")
    expect(viewer_page.get_by_role("button", name="Save")).to_have_count(0)


# --- Disputes --------------------------------------------------------------------------------------------------------
def test_the_owner_answers_a_chargeback_with_evidence(page, server):
    merchant = MerchantFactory(name=SHOP)
    card = charge_create(merchant, method="CREDIT_CARD", amount=8_000, reference_id="pedido-80")
    assert card.status == "PAID"
    sandbox.payin_simulate(merchant=merchant, payin_id=card.pk, action="chargeback")
    dispute = Dispute.objects.get(payin=card)
    due = dispute.evidence_due_by.astimezone(SAO_PAULO).strftime("%d/%m/%Y %H:%M") + " (Brasília time)"

    log_in(page, merchant.owner.email)
    expect(stat(page, "Held balance")).to_have_text("R$ 80,00")
    page.goto(f"/dashboard/charges/{card.pk}/")
    disputes = section(page, "Disputes")
    expect(disputes.get_by_role("row").filter(has_text="R$ 80,00")).to_contain_text("Chargeback")
    expect(disputes).to_contain_text("Open")
    expect(disputes).to_contain_text(due)
    disputes.get_by_role("link").click()

    expect(page.get_by_role("heading", name="Dispute of R$ 80,00")).to_contain_text("Open")
    expect(page.get_by_role("status").filter(has_text="Without evidence by then")).to_have_text(
        f"Answer by {due}. Without evidence by then, the dispute is lost.")
    facts = section(page, "Dispute")
    expect(facts).to_contain_text("Evidence due by")
    expect(facts).to_contain_text(due)
    expect(facts).to_contain_text("R$ 80,00")
    expect(section(page, "Evidence")).to_contain_text("No evidence sent.")
    page.get_by_label("Your evidence").fill("Curso entregue em 10/03; a aluna assistiu às 8 aulas.")
    page.get_by_role("button", name="Send evidence").click()

    expect(page.get_by_role("alert").filter(has_text="Evidence sent. The dispute is under review.")).to_be_visible()
    expect(page.get_by_role("heading", name="Dispute of R$ 80,00")).to_contain_text("Under Review")
    expect(section(page, "Evidence")).to_contain_text("Curso entregue em 10/03; a aluna assistiu às 8 aulas.")
    expect(page.get_by_label("Your evidence")).to_have_count(0)  # sent once
    nav_to(page, "Disputes")
    expect(page.get_by_role("row").filter(has_text="R$ 80,00")).to_contain_text("Under Review")
    nav_to(page, "Overview")
    expect(stat(page, "Held balance")).to_have_text("R$ 80,00")  # still held while the network decides
