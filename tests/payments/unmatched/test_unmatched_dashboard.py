"""Issue 14 on the dashboard: the Unmatched page lists payments with the policy; keeping or sending one back, and
changing the policy, need the money permission (and a second factor for the decisions) and are audited; the API's
decisions are attributed to the key pair."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client

from accounts.models import AccountEvent, Role
from payments.models import UnmatchedKind, UnmatchedPayment
from payments.unmatched import services as unmatched_services
from tests.factories import MembershipFactory, MerchantFactory, totp_enrol

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(merchant) -> UnmatchedPayment:
    with transaction.atomic():
        return unmatched_services.unmatched_record(merchant=merchant, livemode=False, amount=2500,
                                                   kind=UnmatchedKind.UNKNOWN_REFERENCE,
                                                   end_to_end_id="E00000000202611251200dashboard01")


def member(merchant, role: str, *, second_factor: bool = True) -> Client:
    membership = MembershipFactory(merchant=merchant, role=role)
    if second_factor:
        totp_enrol(membership.user)
    client = Client()
    client.force_login(membership.user)
    return client


def test_the_page_lists_them_with_the_policy_and_the_owner_keeps_one(merchant, held):
    client = Client()
    client.force_login(merchant.owner)

    page = client.get("/dashboard/unmatched/").content.decode()
    assert "R$ 25,00" in page and f"/dashboard/unmatched/{held.pk}/" in page
    assert '<option value="hold" selected>Reter</option>' in page  # UNKNOWN_REFERENCE's default (pt-BR here)

    response = client.post(f"/dashboard/unmatched/{held.pk}/decide/", {"action": "accept"})

    assert response.status_code == 302
    held.refresh_from_db()
    assert held.status == "ACCEPTED"
    entry = AccountEvent.objects.get(action=AccountEvent.Action.UNMATCHED_ACCEPTED)
    assert (entry.merchant, entry.actor, entry.obj_id, entry.before, entry.after) == (
        merchant, merchant.owner, str(held.pk), {"status": "HELD"}, {"status": "ACCEPTED"})


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DEVELOPER])
def test_a_role_without_the_money_permission_reads_but_cannot_decide_or_change_the_policy(merchant, held, role):
    client = member(merchant, role)

    page = client.get(f"/dashboard/unmatched/{held.pk}/")
    assert page.status_code == 200 and 'name="action" value="accept"' not in page.content.decode()  # no buttons
    assert client.post(f"/dashboard/unmatched/{held.pk}/decide/", {"action": "refund"}).status_code == 403
    assert client.post("/dashboard/unmatched/policy/", {"DUPLICATE": "accept"}).status_code == 403
    held.refresh_from_db()
    assert held.status == "HELD"
    assert not AccountEvent.objects.filter(action__startswith="unmatched").exists()


def test_a_finance_member_needs_a_second_factor_to_decide(merchant, held):
    without = member(merchant, Role.FINANCE, second_factor=False)
    assert without.post(f"/dashboard/unmatched/{held.pk}/decide/", {"action": "accept"}).status_code == 403
    held.refresh_from_db()
    assert held.status == "HELD"

    with_factor = member(merchant, Role.FINANCE)
    assert with_factor.post(f"/dashboard/unmatched/{held.pk}/decide/", {"action": "accept"}).status_code == 302
    held.refresh_from_db()
    assert held.status == "ACCEPTED"


def test_another_merchants_unmatched_payment_is_404_on_the_dashboard(held):
    stranger = Client()
    stranger.force_login(MerchantFactory().owner)
    assert stranger.get(f"/dashboard/unmatched/{held.pk}/").status_code == 404
    assert stranger.post(f"/dashboard/unmatched/{held.pk}/decide/", {"action": "accept"}).status_code == 404


def test_the_policy_change_is_audited(merchant):
    client = Client()
    client.force_login(merchant.owner)

    client.post("/dashboard/unmatched/policy/", {"DUPLICATE": "accept", "AMOUNT_MISMATCH": "hold"})

    entry = AccountEvent.objects.get(action=AccountEvent.Action.UNMATCHED_POLICY_CHANGED)
    assert (entry.before["DUPLICATE"], entry.after["DUPLICATE"]) == ("refund", "accept")


def test_an_api_decision_is_attributed_to_the_key_pair(api, test_key, held):
    response = api.post(f"/unmatched-payments/{held.pk}/accept")

    assert response.status_code == 200
    entry = AccountEvent.objects.get(action=AccountEvent.Action.UNMATCHED_ACCEPTED)
    assert (entry.actor, entry.actor_key, entry.after) == (None, test_key[0].public_key, {"status": "ACCEPTED"})


def test_staff_see_unmatched_payments_disputes_and_unattributed_notifications_read_only(admin_client, held):
    for path in ("/admin/payments/unmatchedpayment/", f"/admin/payments/unmatchedpayment/{held.pk}/change/",
                 "/admin/payments/dispute/", "/admin/payments/railnotification/?outcome=x"):
        assert admin_client.get(path).status_code == 200, path
    page = admin_client.get("/admin/payments/unmatchedpayment/").content.decode()
    assert str(held.merchant) in page and "Unknown Reference" in page  # the row, with its kind
    assert admin_client.post(f"/admin/payments/unmatchedpayment/{held.pk}/delete/").status_code == 403
