"""Issue 37, item 1 in a real browser: every destructive button asks first, from static/js/app.js (the pages'
Content-Security-Policy blocks inline handlers, so the old `onsubmit="return confirm(…)"` never ran and each of these
acted on the first click). Dismissing the dialog sends nothing and leaves the object as it was; accepting it does the
action. No page logs a Content-Security-Policy violation on the way."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Membership, Merchant, Role
from integrations.models import ApiKey
from payments.ledger import services as ledger
from payments.models import Dispute, Payin, Payout
from payments.payins import sandbox
from payments.payouts import services as payouts
from payments.payouts.validation import payout_request_validate
from tests.e2e.helpers import log_in, sandbox_charge
from tests.factories import ApiKeyFactory, MembershipFactory, MerchantFactory, UserFactory
from webhooks import services as webhooks
from webhooks.models import WebhookSecret

pytestmark = pytest.mark.browser

SHOP = "Loja da Dora"
DEVELOPER = "dev@lojadadora.com.br"


@dataclass
class Shop:
    merchant: Merchant
    key: ApiKey
    pending_pix: Payin
    payout: Payout
    dispute: Dispute
    developer: Membership


@pytest.fixture
def shop(server) -> Shop:
    """A test-mode shop with one of each object a destructive button acts on."""
    merchant = MerchantFactory(name=SHOP)
    key = ApiKeyFactory(merchant=merchant, public_key="pk_test_confirmme", secret_last4="wxyz")
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=50_000, reason="Initial funds",
                             staff=UserFactory(is_staff=True))
    payout = payouts.payout_create(merchant=merchant, livemode=False, data=payout_request_validate(
        {"amount": 1_000, "pixKeyType": "EVP", "pixKey": "123e4567-e12b-12d1-a456-426655440000",
         "referenceId": "saque-1"}, merchant=merchant))
    card = sandbox_charge(merchant, method="CREDIT_CARD", reference_id="pedido-card")
    sandbox.payin_simulate(merchant=merchant, payin_id=card.pk, action="chargeback")
    webhooks.signing_secret_get_or_create(merchant=merchant, livemode=False)
    pending_pix = sandbox_charge(merchant, method="PIX", reference_id="pedido-pix")
    return Shop(merchant=merchant, key=key, pending_pix=pending_pix,
                payout=payout, dispute=Dispute.objects.get(payin=card),
                developer=MembershipFactory(merchant=merchant, role=Role.DEVELOPER, user=UserFactory(email=DEVELOPER)))


@dataclass
class Action:
    button: str
    url: Callable[[Shop], str]
    question: str
    state: Callable[[Shop], object]  # what the action changes, read from the database
    done: str  # the message the page shows once it is done
    row: str = ""  # the table row holding the button, when there are several


def _secret(shop: Shop) -> str:
    return WebhookSecret.objects.get(merchant=shop.merchant, livemode=False).secret_encrypted


ACTIONS = {
    "revoke key": Action(
        "Revoke", lambda s: "/dashboard/integrations/",
        "Revoke pk_test_confirmme? Requests with it will fail at once.",
        lambda s: ApiKey.objects.get(pk=s.key.pk).revoked_at is not None,
        "Key pair pk_test_confirmme revoked", row="pk_test_confirmme"),
    "cancel charge": Action(
        "Cancel charge", lambda s: f"/dashboard/charges/{s.pending_pix.pk}/",
        "Cancel this charge? The payer will no longer be able to pay it.",
        lambda s: Payin.objects.get(pk=s.pending_pix.pk).status, "Charge canceled."),
    "cancel payout": Action(
        "Cancel payout", lambda s: f"/dashboard/payouts/{s.payout.pk}/",
        "Cancel this payout? The money goes back to your available balance.",
        lambda s: Payout.objects.get(pk=s.payout.pk).status, "Payout canceled"),
    "accept dispute": Action(
        "Accept dispute", lambda s: f"/dashboard/disputes/{s.dispute.pk}/",
        "Accept this dispute? The held amount goes back to the payer.",
        lambda s: Dispute.objects.get(pk=s.dispute.pk).status, "Dispute accepted."),
    "rotate secret": Action(
        "Rotate secret", lambda s: "/dashboard/integrations/",
        "Rotate the signing secret? The old one keeps signing for 24 hours.", _secret, "Signing secret rotated."),
    "remove member": Action(
        "Remove", lambda s: "/dashboard/members/",
        f"Remove {DEVELOPER} from the team? Their sessions end at once.",
        lambda s: Membership.objects.filter(pk=s.developer.pk).exists(), "Member removed", row=DEVELOPER),
    "make owner": Action(
        "Make owner", lambda s: "/dashboard/members/",
        f"Make {DEVELOPER} the owner? You become an admin.",
        lambda s: Merchant.objects.get(pk=s.merchant.pk).owner_id, "Ownership transferred.", row=DEVELOPER),
}


def _watch(page: Page) -> tuple[list[str], list[str], list[str]]:
    """The dialogs' messages, the POSTs sent and the console's CSP complaints, as they happen."""
    questions: list[str] = []
    posts: list[str] = []
    violations: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    return questions, posts, violations


@pytest.mark.parametrize("name", list(ACTIONS))
def test_a_destructive_button_asks_first_and_dismissing_sends_nothing(page, shop, name):
    action = ACTIONS[name]
    questions, posts, violations = _watch(page)
    log_in(page, shop.merchant.owner.email)
    page.goto(action.url(shop))
    scope = page.get_by_role("row").filter(has_text=action.row) if action.row else page
    button = scope.get_by_role("button", name=action.button, exact=True)
    before = action.state(shop)
    posts.clear()

    def dismiss(dialog) -> None:
        questions.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    button.click()
    page.wait_for_timeout(500)  # a submission would have left by now

    assert questions == [action.question]
    assert posts == []
    assert action.state(shop) == before
    expect(button).to_be_visible()  # still on the page, nothing happened

    def accept(dialog) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    button.click()

    expect(page.get_by_role("alert").filter(has_text=re.compile(re.escape(action.done)))).to_be_visible()
    assert questions == [action.question, action.question]
    assert len(posts) == 1
    assert action.state(shop) != before
    assert violations == []
