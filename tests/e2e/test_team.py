"""Issue 15 in a real browser: an owner invites a finance member and a developer by e-mail; each sets a password from
the link and sees only what their role allows. The finance member turns on two-factor sign-in with an authenticator
app, makes a payout, signs out, signs in with a code and then with a recovery code; the owner reads all of it in the
audit log."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Merchant
from payments.ledger import services as ledger
from tests.e2e.helpers import log_in, shot, two_factor_enrol
from tests.factories import ApiKeyFactory, MerchantFactory, UserFactory

pytestmark = pytest.mark.browser

SHOP = "Loja da Bia"
FINANCE = "fin@lojadabia.com.br"
DEVELOPER = "dev@lojadabia.com.br"
PIX_KEY = "123e4567-e12b-12d1-a456-426655440000"
NEW_PASSWORD = "another-horse-battery-staple"
INVITATION_LINK = re.compile(r"https?://\S+(/dashboard/invitations/[^/\s]+/)")


def shop_with_balance(amount: int = 100_000) -> Merchant:
    merchant = MerchantFactory(name=SHOP)  # its owner has an authenticator, as the factory enrols one
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=amount, reason="Initial funds",
                             staff=UserFactory(is_staff=True))
    return merchant


def invite(page: Page, mailoutbox, *, email: str, role: str) -> str:
    """Invite someone from the Members page; the path of the link their e-mail carries."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Members").click()
    page.get_by_label("Email").fill(email)
    page.get_by_label("Role").select_option(label=role)
    page.get_by_role("button", name="Send invitation").click()
    expect(page.get_by_role("alert").filter(has_text=f"Invitation sent to {email}.")).to_be_visible()
    message = next(m for m in reversed(mailoutbox) if m.to == [email])
    assert SHOP in message.subject + message.body
    return INVITATION_LINK.search(message.body).group(1)


def accept(page: Page, link: str, *, email: str, screenshot: str = "") -> None:
    """Open the invitation link with no account yet, choose a password and join."""
    page.goto(link)
    expect(page.get_by_text(f"You are invited to join {SHOP} as {email}.")).to_be_visible()
    if screenshot:
        shot(page, screenshot)
    page.get_by_role("textbox", name="Password", exact=True).fill(NEW_PASSWORD)
    page.get_by_role("textbox", name="Confirm password", exact=True).fill(NEW_PASSWORD)
    page.get_by_role("button", name="Create account and join").click()
    expect(page.get_by_role("alert").filter(has_text=f"Welcome to {SHOP}.")).to_be_visible()
    expect(page.get_by_role("heading", name=SHOP)).to_be_visible()


def post_as(page: Page, path: str, data: dict | None = None):
    """A form POST from this page's session, as a hand-made request would send it (the button is not there)."""
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    return page.request.post(path, form=data or {}, headers={"X-CSRFToken": token, "Referer": page.url})


def fill_payout(page: Page, amount: str) -> None:
    page.get_by_label("Amount (R$)").fill(amount)
    page.get_by_label("Pix key type").select_option("EVP")
    page.get_by_role("textbox", name="Pix key", exact=True).fill(PIX_KEY)
    page.get_by_role("button", name="Review payout").click()


def sign_in_with_code(page: Page, email: str, code: str) -> None:
    page.goto("/dashboard/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_role("textbox", name="Password", exact=True).fill(NEW_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Two-factor sign-in")).to_be_visible()
    page.get_by_label("Code").fill(code)
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()


def test_invited_members_join_and_see_only_what_their_role_allows(new_page, server, mailoutbox):
    merchant = shop_with_balance()
    ApiKeyFactory(merchant=merchant, public_key="pk_test_shopserver", secret_last4="abcd")
    owner, finance, developer = new_page(), new_page(), new_page()
    log_in(owner, merchant.owner.email)

    finance_link = invite(owner, mailoutbox, email=FINANCE, role="Finance")
    developer_link = invite(owner, mailoutbox, email=DEVELOPER, role="Developer")
    pending = owner.get_by_role("listitem").filter(has_text="Withdraw")
    expect(pending.filter(has_text=FINANCE)).to_contain_text("Finance")
    expect(pending.filter(has_text=DEVELOPER)).to_contain_text("Developer")
    shot(owner, "members")
    accept(finance, finance_link, email=FINANCE, screenshot="invitation")
    accept(developer, developer_link, email=DEVELOPER)

    # The owner's team now has both, with their roles; the links are spent.
    owner.reload()
    expect(owner.get_by_role("row").filter(has_text=FINANCE)).to_contain_text("Finance")
    expect(owner.get_by_role("row").filter(has_text=DEVELOPER)).to_contain_text("Developer")
    assert finance.goto(developer_link).status == 404
    expect(finance.get_by_text("This invitation link is not valid: it was used")).to_be_visible()

    # Finance: payouts, but no key, secret or endpoint actions, no members management, no audit log.
    for page in (finance, developer):
        page.goto("/dashboard/")
        nav = page.get_by_role("navigation", name="Main")
        expect(nav.get_by_role("link", name="Audit log")).to_have_count(0)
        nav.get_by_role("link", name="Members").click()
        expect(page.get_by_role("button", name="Send invitation")).to_have_count(0)
        expect(page.get_by_role("button", name="Remove")).to_have_count(0)
    finance.get_by_role("navigation", name="Main").get_by_role("link", name="Payouts").click()
    expect(finance.get_by_role("link", name="New payout")).to_be_visible()
    finance.get_by_role("navigation", name="Main").get_by_role("link", name="Integrations").click()
    expect(finance.get_by_role("cell", name="pk_test_shopserver")).to_be_visible()
    for action in ("Create key pair", "Revoke", "Reveal secret", "Rotate secret", "Add endpoint"):
        expect(finance.get_by_role("button", name=action)).to_have_count(0)
    assert post_as(finance, "/dashboard/integrations/keys/", {"label": "mine", "mode": "test"}).status == 403

    # Developer: keys and webhooks, but no payout form, and a payout posted by hand is refused.
    developer.get_by_role("navigation", name="Main").get_by_role("link", name="Integrations").click()
    expect(developer.get_by_role("button", name="Create key pair")).to_be_visible()
    expect(developer.get_by_role("button", name="Revoke")).to_be_visible()
    developer.get_by_role("navigation", name="Main").get_by_role("link", name="Payouts").click()
    expect(developer.get_by_text("Available to pay out:")).to_be_visible()
    expect(developer.get_by_role("link", name="New payout")).to_have_count(0)
    assert developer.goto("/dashboard/payouts/new/").status == 403
    expect(developer.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(developer.get_by_text("Your role in this account does not allow this.")).to_be_visible()
    shot(developer, "forbidden")
    refused = post_as(developer, "/dashboard/payouts/new/", {
        "amount": "50,00", "pix_key_type": "EVP", "pix_key": PIX_KEY, "action": "confirm"})
    assert refused.status == 403
    assert not merchant.payouts.exists()


def test_finance_member_enrols_two_factor_pays_out_signs_in_with_codes_and_the_owner_audits_it(
        new_page, server, mailoutbox):
    merchant = shop_with_balance()
    owner, finance = new_page(), new_page()
    log_in(owner, merchant.owner.email)
    accept(finance, invite(owner, mailoutbox, email=FINANCE, role="Finance"), email=FINANCE)

    # A payout needs a second factor: the form says so and sends nothing.
    finance.get_by_role("navigation", name="Main").get_by_role("link", name="Payouts").click()
    finance.get_by_role("link", name="New payout").click()
    fill_payout(finance, "50,00")
    expect(finance.get_by_text("Turn on two-factor sign-in in Security before doing this.")).to_be_visible()
    assert not merchant.payouts.exists()

    # Enrol with an authenticator app: the key on the page, the app's first code; recovery codes shown once.
    finance.goto("/dashboard/")
    finance.get_by_role("link", name="Security", exact=True).click()
    expect(finance.get_by_test_id("two-factor-status")).to_contain_text("Off.")
    shot(finance, "security-enrol")
    app, recovery_codes = two_factor_enrol(finance)
    expect(finance.get_by_text("10 recovery codes left.")).to_be_visible()

    # Now the payout goes through.
    finance.get_by_role("navigation", name="Main").get_by_role("link", name="Payouts").click()
    finance.get_by_role("link", name="New payout").click()
    fill_payout(finance, "50,00")
    expect(finance.get_by_role("heading", name="Confirm payout")).to_be_visible()
    finance.get_by_role("button", name="Send R$ 50,00").click()
    expect(finance.get_by_role("alert").filter(has_text="Payout of R$ 50,00 sent")).to_be_visible()

    # Out, and in again with the app's code; out, and in with a recovery code, which is then used up.
    log_out(finance)
    sign_in_with_code(finance, FINANCE, app.code())
    expect(finance.get_by_role("heading", name=SHOP)).to_be_visible()
    log_out(finance)
    sign_in_with_code(finance, FINANCE, recovery_codes[0])
    expect(finance.get_by_role("alert").filter(has_text="You used a recovery code; 9 are left.")).to_be_visible()
    finance.get_by_role("link", name="Security", exact=True).click()
    expect(finance.get_by_text("9 recovery codes left.")).to_be_visible()
    log_out(finance)
    finance.get_by_label("Email").fill(FINANCE)
    finance.get_by_role("textbox", name="Password", exact=True).fill(NEW_PASSWORD)
    finance.get_by_role("button", name="Log in").click()
    finance.get_by_label("Code").fill(recovery_codes[0])
    finance.get_by_role("button", name="Verify").click()
    expect(finance.get_by_text("That code is not right.")).to_be_visible()

    # The owner's audit log has each of those steps, with who did it.
    owner.get_by_role("navigation", name="Main").get_by_role("link", name="Audit log").click()
    expect(owner.get_by_role("heading", name="Audit log")).to_be_visible()
    rows = owner.get_by_role("row")
    expect(rows.filter(has_text="Member invited").filter(has_text=FINANCE)).to_contain_text(merchant.owner.email)
    for action, count in (("Member joined", 1), ("Two-factor sign-in enabled", 1), ("Payout created", 1),
                          ("Recovery code used", 1), ("Signed in", 3), ("Sign-in failed", 1)):
        expect(rows.filter(has_text=action).filter(has_text=FINANCE), action).to_have_count(count)
    expect(rows.filter(has_text="Payout created")).to_contain_text("5000")
    expect(rows.filter(has_text="Signed in").filter(has_text=merchant.owner.email)).to_have_count(1)
    shot(owner, "audit-log")
