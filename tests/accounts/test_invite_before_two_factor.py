"""Issue 37, item 5: the Members page says up front that inviting needs a second factor (with a link to Security), and a
refused invitation keeps what was typed."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import Invitation, Role
from tests.factories import MembershipFactory, MerchantFactory, totp_enrol

NOTICE = ('Inviting, removing or changing members needs two-factor sign-in on your account. <a '
          'href="/dashboard/security/">Turn it on in Security</a> first: it takes a minute with an authenticator app.')


def _admin(*, second_factor: bool) -> Client:
    membership = MembershipFactory(merchant=MerchantFactory(), role=Role.ADMIN)
    if second_factor:
        totp_enrol(membership.user)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(membership.user)
    return client


@pytest.mark.django_db
def test_the_members_page_says_first_that_inviting_needs_a_second_factor():
    without, with_one = _admin(second_factor=False), _admin(second_factor=True)

    assert NOTICE in without.get("/dashboard/members/").content.decode()
    assert NOTICE not in with_one.get("/dashboard/members/").content.decode()


@pytest.mark.django_db
def test_a_refused_invitation_keeps_what_was_typed():
    client = _admin(second_factor=False)

    refused = client.post("/dashboard/members/invite/", {"email": "novo@example.com", "role": "finance"})

    page = refused.content.decode()
    assert refused.status_code == 403
    assert 'value="novo@example.com"' in page
    assert '<option value="finance" selected>' in page
    assert "Turn on two-factor sign-in in Security before inviting a member. What you typed is kept below." in page
    assert NOTICE in page
    assert not Invitation.objects.exists()
