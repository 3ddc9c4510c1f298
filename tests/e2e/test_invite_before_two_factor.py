"""Issue 37, item 5 in a real browser: an admin without a second factor is told on the Members page, before typing
anything, that inviting needs two-factor sign-in, with a link to Security; if they send the invitation anyway the
server refuses it and what they typed is still in the form."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Invitation, Role
from tests.e2e.helpers import log_in, section
from tests.factories import MembershipFactory, MerchantFactory, UserFactory

pytestmark = pytest.mark.browser

NOTICE = ("Inviting, removing or changing members needs two-factor sign-in on your account. Turn it on in Security "
          "first: it takes a minute with an authenticator app.")


def test_an_admin_without_a_second_factor_is_told_first_and_keeps_what_was_typed(page, server):
    merchant = MerchantFactory(name="Loja do Rui")
    admin = MembershipFactory(merchant=merchant, role=Role.ADMIN, user=UserFactory(email="admin@lojadorui.com.br"))
    log_in(page, admin.user.email)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Members").click()

    invite = section(page, "Invite a member")
    notice = invite.get_by_test_id("needs-second-factor")
    expect(notice).to_have_text(NOTICE)
    invite.get_by_label("Email").fill("novo@lojadorui.com.br")
    invite.get_by_label("Role").select_option(label="Finance")
    response_of = []
    page.on("response", lambda r: response_of.append(r.status) if r.url.endswith("/members/invite/") else None)
    page.get_by_role("button", name="Send invitation").click()

    expect(page.get_by_role("alert").filter(has_text="Turn on two-factor sign-in in Security before inviting a "
                                                     "member. What you typed is kept below.")).to_be_visible()
    assert response_of == [403]
    expect(invite.get_by_label("Email")).to_have_value("novo@lojadorui.com.br")
    expect(invite.get_by_label("Role")).to_have_value("finance")
    assert not Invitation.objects.exists()
    expect(notice).to_be_visible()
    notice.get_by_role("link", name="Turn it on in Security").click()
    expect(page.get_by_role("heading", name="Two-factor sign-in")).to_be_visible()


def test_the_notice_is_not_shown_to_an_owner_with_a_second_factor(page, server):
    merchant = MerchantFactory(name="Loja do Rui")  # the factory's owner has an authenticator
    log_in(page, merchant.owner.email)

    page.goto("/dashboard/members/")

    expect(page.get_by_role("button", name="Send invitation")).to_be_visible()
    expect(page.get_by_test_id("needs-second-factor")).to_have_count(0)
