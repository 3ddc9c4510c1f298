"""A merchant's first day, in a real browser: sign up, KYC, staff approval in the admin, two-factor sign-in, a live
key whose secret is shown once, a test charge created through the API and paid with the sandbox button, the balance,
a payout made in the dashboard, its webhook delivery (failed, then resent) — with a screenshot of every page on the
way."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Merchant, User
from integrations.models import ApiKey
from payments.templatetags.payments_format import brl
from tests.e2e.helpers import (
    PASSWORD,
    Api,
    admin_action,
    admin_log_in,
    charge_body,
    path_of,
    section,
    shot,
    two_factor_enrol,
)
from tests.factories import totp_enrol
from webhooks.delivery import delivery_attempt
from webhooks.models import Delivery

pytestmark = pytest.mark.browser

EMAIL = "ana@lojadaana.com.br"
SHOP = "Loja da Ana"
PIX_KEY = "123e4567-e12b-12d1-a456-426655440000"
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def sign_up(page: Page) -> None:
    page.goto("/dashboard/signup/")
    expect(page.get_by_role("heading", name="Create your account")).to_be_visible()
    shot(page, "signup")
    page.get_by_label("Business name").fill(SHOP)
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_role("textbox", name="Password", exact=True).fill(PASSWORD)
    page.get_by_role("textbox", name="Confirm password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("heading", name=SHOP)).to_be_visible()
    expect(page.get_by_role("alert").filter(has_text="Welcome!")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Test mode")).to_be_visible()
    shot(page, "overview-new-account")


def submit_kyc(page: Page) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="KYC").click()
    expect(page.get_by_role("heading", name="Submit your details")).to_be_visible()
    shot(page, "kyc-form")
    page.get_by_label("Legal name").fill("Ana Souza Comércio de Presentes Ltda")
    page.get_by_label("Trading name").fill(SHOP)
    page.get_by_label("CPF or CNPJ").fill("11.222.333/0001-81")
    page.get_by_label("Street").fill("Av. Paulista")
    page.get_by_label("Number").fill("1000")
    page.get_by_label("City").fill("São Paulo")
    page.get_by_label("State").select_option("SP")
    page.get_by_label("CEP").fill("01310-100")
    page.get_by_label("Phone").fill("+55 11 98765-4321")
    page.get_by_label("Document (PDF, PNG or JPEG)").set_input_files(
        {"name": "contrato-social.pdf", "mimeType": "application/pdf", "buffer": PDF})
    page.get_by_role("button", name="Submit for review").click()
    expect(page.get_by_role("alert").filter(has_text="KYC submitted.")).to_be_visible()
    expect(page.locator(".badge", has_text="Submitted")).to_be_visible()
    shot(page, "kyc-submitted")


def approve_kyc_in_admin(staff_page: Page) -> None:
    admin_log_in(staff_page, "staff@pagamentos.test")
    staff_page.goto("/admin/accounts/merchant/")
    staff_page.get_by_role("link", name="Pending review").click()
    expect(staff_page.get_by_role("link", name=SHOP)).to_be_visible()
    shot(staff_page, "admin-kyc-queue")
    staff_page.get_by_role("link", name=SHOP).click()
    expect(staff_page.get_by_text("Download contrato-social")).to_be_visible()
    shot(staff_page, "admin-merchant")
    staff_page.go_back()
    admin_action(staff_page, SHOP, "Approve KYC of the selected merchants")
    expect(staff_page.get_by_text("KYC approved: 1.")).to_be_visible()


def create_key(page: Page, *, mode: str, label: str) -> tuple[str, str]:
    """Create a key pair on the Integrations page; the public and secret keys, read off the page."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Integrations").click()
    page.get_by_label("Label").fill(label)
    page.get_by_role("combobox", name="Mode").select_option(label=mode)
    page.get_by_role("button", name="Create key pair").click()
    once = section(page, re.compile(r"^Your new (live|test) key pair$"))
    expect(once).to_be_visible()
    expect(once.get_by_text("This is the only time it is shown")).to_be_visible()
    return page.get_by_label("Public key").input_value(), page.get_by_label("Secret key").input_value()


def available_on_overview(page: Page) -> str:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview").click()
    return section(page, "Available balance").locator(".stat-value").inner_text()


def attempt_rows(page: Page):
    return section(page, "Attempts").get_by_role("row").filter(has=page.get_by_role("cell"))


def test_merchant_signs_up_goes_live_takes_a_charge_and_pays_out(new_page, server, receiver, enqueued):
    totp_enrol(User.objects.create_superuser(email="staff@pagamentos.test", password=PASSWORD))  # issue 15: staff 2FA
    page, staff_page = new_page(), new_page()

    # Sign up, KYC, a staff user approves it in the admin.
    sign_up(page)
    submit_kyc(page)
    approve_kyc_in_admin(staff_page)
    page.reload()
    expect(page.locator(".badge", has_text="Approved")).to_be_visible()
    expect(page.get_by_text("Approved: you can create live keys")).to_be_visible()

    # Live keys need a second factor (issue 15): the owner turns on two-factor sign-in with an authenticator app.
    two_factor_enrol(page)

    # A live key: its secret is shown once, works, and is gone after a reload.
    live_public, live_secret = create_key(page, mode="Live", label="shop server")
    assert live_secret.startswith("sk_live_")
    shot(page, "integrations-secret-shown-once")
    assert Api(server.url, live_public, live_secret).call("GET", "/account").status_code == 200
    page.reload()  # re-sends the POST: its one-time form token is spent, so no second key and no secret
    expect(page.get_by_role("alert").filter(has_text="That form was already used.")).to_be_visible()
    assert live_secret not in page.content()
    assert ApiKey.objects.filter(merchant__owner__email=EMAIL, livemode=True).count() == 1
    page.goto("/dashboard/integrations/")
    expect(page.get_by_role("cell", name=live_public)).to_be_visible()
    expect(page.get_by_role("cell", name=f"sk_live_…{live_secret[-4:]}")).to_be_visible()
    assert live_secret not in page.content()

    # A test key (the sandbox buttons are test mode's), and a webhook endpoint at a local receiver.
    test_public, test_secret = create_key(page, mode="Test (sandbox)", label="shop server")
    assert test_secret.startswith("sk_test_")
    api = Api(server.url, test_public, test_secret)
    page.goto("/dashboard/integrations/")
    page.get_by_label("URL").fill(receiver.url("/webhooks/pagamentos"))
    page.get_by_label("Description").fill("Shop server")
    page.get_by_role("button", name="Add endpoint").click()
    expect(page.get_by_role("alert").filter(has_text="Endpoint added.")).to_be_visible()
    expect(page.get_by_role("cell", name=receiver.url("/webhooks/pagamentos"))).to_be_visible()
    shot(page, "integrations")
    assert available_on_overview(page) == brl(0)

    # A charge created through the API, found in the dashboard; its payer's pages.
    charge = api.ok("POST", "/payin", charge_body(amount=15_000, reference_id="pedido-1001"))
    boleto = api.ok("POST", "/payin", charge_body(method="BOLETO", amount=8_990, reference_id="pedido-1002"))
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Charges").click()
    expect(page.get_by_role("row").filter(has_text="pedido-1002")).to_be_visible()
    shot(page, "charges")
    page.get_by_label("Charge id or referenceId").fill("pedido-1001")
    page.get_by_role("button", name="Apply").click()
    rows = page.get_by_role("row").filter(has=page.get_by_role("cell"))
    expect(rows).to_have_count(1)
    rows.get_by_role("link").click()
    expect(page.get_by_role("heading", name="Pix charge of R$ 150,00 Pending")).to_be_visible()
    shot(page, "charge-detail-pending")
    page.goto(path_of(charge["paymentUrl"]))
    expect(page.get_by_role("heading").first).to_be_visible()
    shot(page, "pay-page")
    page.goto(path_of(boleto["boleto"]["url"]))
    expect(page.get_by_role("heading", name=f"Boleto de {SHOP}, R$ 89,90")).to_be_visible()  # payers read pt-BR
    shot(page, "boleto")

    # Paid with the sandbox button: the balance moves by the charge's net amount.
    page.goto(f"/dashboard/charges/{charge['id']}/")
    page.get_by_role("button", name="Simulate payment").click()
    expect(page.get_by_role("alert").filter(has_text="Payment simulated: the charge is paid.")).to_be_visible()
    expect(page.locator("h1 .badge")).to_have_text("Paid")
    shot(page, "charge-detail-paid")
    net = api.ok("GET", f"/payin/{charge['id']}")["netAmount"]
    assert 0 < net < 15_000
    assert available_on_overview(page) == brl(net)
    expect(page.get_by_role("row").filter(has_text="pedido-1001")).to_contain_text("Paid")
    shot(page, "overview")

    # A payout requested in the dashboard, confirmed on a second page.
    page.get_by_role("link", name="New payout").click()
    expect(page.get_by_text(f"Available to pay out: {brl(net)}")).to_be_visible()
    page.get_by_label("Amount (R$)").fill("50,00")
    page.get_by_label("Pix key type").select_option("EVP")
    page.get_by_role("textbox", name="Pix key", exact=True).fill(PIX_KEY)
    page.get_by_label("Beneficiary name (optional)").fill("Ana Souza")
    page.get_by_label("Description (optional)").fill("Retirada semanal")
    shot(page, "payout-new")
    page.get_by_role("button", name="Review payout").click()
    expect(page.get_by_role("heading", name="Confirm payout")).to_be_visible()
    assert api.ok("GET", "/balance")["available"] == net  # nothing is sent before the confirmation
    shot(page, "payout-confirm")
    page.get_by_role("button", name="Send R$ 50,00").click()
    expect(page.get_by_role("alert").filter(has_text="Payout of R$ 50,00 sent")).to_be_visible()
    payout_url = page.url
    shot(page, "payout-detail")
    balance = api.ok("GET", "/balance")
    payout = api.ok("GET", f"/payout/{payout_url.rstrip('/').rsplit('/', 1)[-1]}")
    assert balance["available"] == net - 5_000 - payout["fee"]
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Payouts").click()
    expect(page.get_by_text(f"Available to pay out: {brl(balance['available'])}")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text=PIX_KEY)).to_be_visible()
    shot(page, "payouts")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Statement").click()
    expect(page.get_by_role("row").filter(has_text="Pix payout to EVP key")).to_contain_text("-R$ 50,00")
    shot(page, "statement")

    # The payout's webhook: the receiver fails the first attempt; a resend from the dashboard succeeds.
    page.goto(payout_url)
    page.get_by_role("link", name="Delivery details of payout.created").click()
    expect(page.get_by_role("heading", name="Delivery of payout.created")).to_be_visible()
    expect(page.get_by_text("Not attempted yet.")).to_be_visible()
    delivery_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert delivery_id in enqueued["deliveries"]
    receiver.answers.append(500)
    delivery_attempt(delivery_id=delivery_id)
    page.reload()
    expect(attempt_rows(page)).to_have_count(1)
    expect(attempt_rows(page).first).to_contain_text("500")
    page.get_by_role("button", name="Resend").click()
    expect(page.get_by_role("alert").filter(has_text="Delivery queued again.")).to_be_visible()
    delivery_attempt(delivery_id=delivery_id)
    page.reload()
    expect(attempt_rows(page)).to_have_count(2)
    expect(page.locator("dd .badge")).to_have_text("SUCCEEDED")
    shot(page, "delivery-detail")
    event_id = str(Delivery.objects.get(pk=delivery_id).event_id)
    assert [r["status"] for r in receiver.received if r["webhook_id"] == event_id] == [500, 200]
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Webhook deliveries").click()
    expect(page.get_by_role("row").filter(has_text="payout.created")).to_contain_text("SUCCEEDED")
    shot(page, "deliveries")

    # The remaining pages: settings, and the log-in page once logged out.
    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Change password")).to_be_visible()
    shot(page, "settings")
    page.get_by_role("button", name="Log out").click()
    page.goto("/dashboard/login/")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    shot(page, "login")
    assert Merchant.objects.get(owner__email=EMAIL).kyc_status == "APPROVED"
