"""Issue 15: every dashboard POST checks the member's role on the server, the second factor gates sensitive actions,
invitations, removal, two-factor sign-in with a recovery code, the second step's throttle, the audit log."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from accounts import members, roles, services
from accounts.models import AccountEvent, Membership, Merchant, Role
from tests.factories import MembershipFactory, MerchantFactory, UserFactory, totp_code, totp_enrol

# Dashboard routes open without a merchant role, each with why: they are about the visitor's own sign-in or account.
PERSONAL_ROUTES = {
    "signup", "login", "logout", "password_reset", "password_reset_done", "password_reset_confirm",
    "password_reset_complete", "login_verify", "invitation_accept",  # before sign-in, or the sign-in itself
    "security", "two_factor_enable", "two_factor_disable", "recovery_codes_new", "session_end",  # the user's own
}


def dashboard_routes() -> list[tuple[str, str, object]]:
    """(name, a concrete path, view) of every route in the dashboard namespace."""
    resolver = next(r for r in get_resolver().url_patterns
                    if isinstance(r, URLResolver) and r.namespace == "dashboard")
    routes = []
    for pattern in resolver.url_patterns:
        assert isinstance(pattern, URLPattern)
        path = "/dashboard/" + re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: {"uuid": "00000000-0000-0000-0000-000000000000",
                                                                       "int": "1"}.get(m.group(1), "x"),
                                      str(pattern.pattern))
        routes.append((pattern.name, path, pattern.callback))
    return routes


def test_every_dashboard_route_declares_its_permission_or_is_personal():
    undeclared = [name for name, _path, view in dashboard_routes()
                  if not hasattr(view, "required_permission") and name not in PERSONAL_ROUTES]

    assert undeclared == []


def _member(role: str) -> tuple[Client, Membership]:
    merchant = MerchantFactory()
    membership = MembershipFactory(merchant=merchant, role=role, user=UserFactory())
    totp_enrol(membership.user)  # the second factor is not what this test is about
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(membership.user)
    return client, membership


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Role.ADMIN, Role.DEVELOPER, Role.FINANCE, Role.VIEWER])
def test_every_dashboard_post_refuses_a_role_without_the_right(role):
    client, _membership = _member(role)
    refused, allowed = [], []
    for name, path, view in dashboard_routes():
        permission = getattr(view, "required_permission", None)
        if permission is None:
            continue
        response = client.post(path, {})
        if roles.role_allows(role, permission) and permission != roles.READ:
            allowed.append((name, response.status_code))
        else:
            refused.append((name, response.status_code))

    assert refused and all(status == 403 for _name, status in refused), refused
    assert all(status != 403 for _name, status in allowed), allowed


@pytest.mark.django_db
def test_a_finance_member_without_a_second_factor_cannot_make_a_payout_but_can_read():
    merchant = MerchantFactory()
    finance = MembershipFactory(merchant=merchant, role=Role.FINANCE).user
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(finance)

    page = client.get("/dashboard/payouts/")
    refused = client.post("/dashboard/payouts/new/", {"action": "review"})

    assert page.status_code == 200
    assert refused.status_code == 403
    assert "Turn on two-factor sign-in" in refused.content.decode()


@pytest.mark.django_db
def test_another_merchants_object_is_a_404():
    client, _membership = _member(Role.FINANCE)
    other = MerchantFactory()
    other_member = MembershipFactory(merchant=other, role=Role.VIEWER)

    response = client.post(f"/dashboard/members/{other_member.pk}/remove/")

    assert response.status_code == 403  # finance may not manage members at all
    owner_client = Client()
    owner_client.force_login(MerchantFactory().owner)
    assert owner_client.post(f"/dashboard/members/{other_member.pk}/remove/").status_code == 404


@pytest.mark.django_db
def test_invitation_acceptance_by_a_new_person_and_removal_ends_their_access(client):
    merchant = MerchantFactory()
    client.force_login(merchant.owner)

    client.post("/dashboard/members/invite/", {"email": "dev@example.com", "role": "developer"})
    link = re.search(r"(/dashboard/invitations/\S+/)", mail.outbox[-1].body).group(1)
    newcomer = Client(HTTP_ACCEPT_LANGUAGE="en")
    joined = newcomer.post(link, {"password": "a-long-passphrase-1", "password_confirm": "a-long-passphrase-1"})
    reused = Client().get(link)

    assert joined.status_code == 302
    assert mail.outbox[-1].alternatives  # HTML too
    member = Membership.objects.get(merchant=merchant, user__email="dev@example.com")
    assert member.role == Role.DEVELOPER
    assert newcomer.get("/dashboard/integrations/").status_code == 200
    assert newcomer.post("/dashboard/payouts/new/", {}).status_code == 403
    assert reused.status_code == 404

    client.post(f"/dashboard/members/{member.pk}/remove/")

    assert newcomer.get("/dashboard/").status_code == 302  # signed out at once
    actions = list(merchant.account_events.values_list("action", flat=True))
    assert {"member_invited", "member_joined", "member_removed"} <= set(actions)


@pytest.mark.django_db
def test_an_admin_cannot_touch_the_owner(client):
    admin_client, admin = _member(Role.ADMIN)
    owner = Membership.objects.get(merchant=admin.merchant, role=Role.OWNER)

    response = admin_client.post(f"/dashboard/members/{owner.pk}/remove/", follow=True)

    assert Membership.objects.filter(pk=owner.pk).exists()
    assert "Only the owner can change the owner" in response.content.decode()


@pytest.mark.django_db
def test_totp_enrolment_sign_in_with_a_code_and_with_a_recovery_code():
    merchant = MerchantFactory(owner_two_factor=False)
    owner = merchant.owner
    browser = Client(HTTP_ACCEPT_LANGUAGE="en")
    browser.force_login(owner)
    browser.get("/dashboard/security/")

    enabled = browser.post("/dashboard/security/two-factor/enable/", {"code": totp_code(owner)})
    codes = re.findall(r"<li><code>([a-z0-9]{5}-[a-z0-9]{5})</code></li>", enabled.content.decode())
    browser.post("/dashboard/logout/")
    first = Client()
    first.post("/dashboard/login/", {"username": owner.email, "password": "correct-horse-battery"})
    signed_in = first.post("/dashboard/login/verify/", {"code": totp_code(owner)})
    second = Client()
    second.post("/dashboard/login/", {"username": owner.email, "password": "correct-horse-battery"})
    with_recovery = second.post("/dashboard/login/verify/", {"code": codes[0]})
    third = Client()
    third.post("/dashboard/login/", {"username": owner.email, "password": "correct-horse-battery"})
    reused = third.post("/dashboard/login/verify/", {"code": codes[0]})

    assert len(codes) == 10
    assert signed_in.status_code == 302 and first.get("/dashboard/").status_code == 200
    assert with_recovery.status_code == 302 and second.get("/dashboard/").status_code == 200
    assert reused.status_code == 400
    actions = set(merchant.account_events.values_list("action", flat=True))
    assert {"two_factor_enabled", "signed_in", "recovery_code_used", "sign_in_failed"} <= actions
    # Each in the language of the request that caused it (the second sign-in's browser asked for none: pt-BR).
    assert [m.subject for m in mail.outbox] == ["Two-factor sign-in turned on",
                                                "Um código de recuperação foi usado para entrar"]


@pytest.mark.django_db
def test_the_second_step_is_throttled_per_account():
    owner = MerchantFactory().owner
    client = Client()
    client.post("/dashboard/login/", {"username": owner.email, "password": "correct-horse-battery"})

    wrong = [client.post("/dashboard/login/verify/", {"code": "000000"}).status_code for _ in range(5)]
    locked = client.post("/dashboard/login/verify/", {"code": totp_code(owner)})

    assert wrong == [400] * 5
    assert locked.status_code == 429
    assert client.get("/dashboard/").status_code == 302


@pytest.mark.django_db
def test_the_admin_signs_in_through_the_dashboard_and_requires_a_second_factor():
    staff = UserFactory(is_staff=True, is_superuser=True, two_factor=False)
    client = Client()

    login_page = client.get("/admin/login/?next=/admin/")
    client.force_login(staff)
    admin = client.get("/admin/")

    assert login_page.status_code == 302 and login_page["Location"].startswith("/dashboard/login/?next=")
    assert admin.status_code == 302 and admin["Location"] == "/dashboard/security/"


@pytest.mark.django_db
def test_the_dashboard_and_the_admin_send_a_content_security_policy(admin_client):
    dashboard = Client().get("/dashboard/login/")
    admin = admin_client.get("/admin/")

    assert "script-src 'self'" in dashboard["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in admin["Content-Security-Policy"]


@pytest.mark.django_db
def test_the_audit_log_is_for_owners_and_admins_and_exports_csv(client):
    merchant = MerchantFactory()
    viewer = MembershipFactory(merchant=merchant, role=Role.VIEWER).user
    client.force_login(merchant.owner)
    client.post("/dashboard/members/invite/", {"email": "fin@example.com", "role": "finance"},
                HTTP_USER_AGENT="pytest-browser")

    page = client.get("/dashboard/audit/", {"action": "member_invited"})
    csv_body = b"".join(client.get("/dashboard/audit.csv").streaming_content).decode()
    reader = Client()
    reader.force_login(viewer)

    assert page.status_code == 200 and "Member invited" in page.content.decode()
    assert "member_invited" in csv_body and "pytest-browser" in csv_body
    assert reader.get("/dashboard/audit/").status_code == 403
    entry = AccountEvent.objects.get(merchant=merchant, action="member_invited")
    with pytest.raises(ValueError):
        entry.save()


# --- Ownership of several merchants (issue 37, item 16) --------------------------------------------------------------
def _owner_client(merchant) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(merchant.owner)
    return client


@pytest.mark.django_db
def test_ownership_goes_to_a_member_who_owns_another_merchant():
    shop, other_shop = MerchantFactory(name="Loja A"), MerchantFactory(name="Loja B")
    newcomer = other_shop.owner  # owns Loja B, and joins Loja A as an admin
    target = MembershipFactory(merchant=shop, user=newcomer, role=Role.ADMIN)
    former_owner = shop.owner
    client = _owner_client(shop)

    response = client.post(f"/dashboard/members/{target.pk}/transfer/", follow=True)

    assert response.status_code == 200
    assert "Ownership transferred. You are now an admin." in response.content.decode()
    shop.refresh_from_db()
    other_shop.refresh_from_db()
    assert (shop.owner, other_shop.owner) == (newcomer, newcomer)
    assert list(newcomer.owned_merchants.order_by("name")) == [shop, other_shop]
    assert sorted(Membership.objects.filter(user=newcomer).values_list("merchant__name", "role")) == [
        ("Loja A", Role.OWNER), ("Loja B", Role.OWNER)]
    assert Membership.objects.get(merchant=shop, user=former_owner).role == Role.ADMIN
    entry = AccountEvent.objects.get(merchant=shop, action=AccountEvent.Action.MEMBER_ROLE_CHANGED)
    assert (entry.actor, entry.obj_id, entry.before, entry.after, entry.reason) == (
        former_owner, str(newcomer.pk), {"role": Role.ADMIN}, {"role": Role.OWNER},
        f"ownership transferred to {newcomer.email}")


@pytest.mark.django_db
def test_the_owner_of_two_merchants_works_in_each_as_the_owner():
    shop, other_shop = MerchantFactory(name="Loja A"), MerchantFactory(name="Loja B")
    owner = shop.owner
    target = MembershipFactory(merchant=other_shop, user=owner, role=Role.ADMIN)
    _owner_client(other_shop).post(f"/dashboard/members/{target.pk}/transfer/")
    MembershipFactory(merchant=shop, role=Role.ADMIN)
    client = _owner_client(shop)

    for merchant in (shop, other_shop):
        client.post("/dashboard/merchant/", {"merchant": str(merchant.pk)})
        page = client.get("/dashboard/members/")

        admin = Membership.objects.get(merchant=merchant, role=Role.ADMIN)
        assert page.status_code == 200
        assert f'action="/dashboard/members/{admin.pk}/transfer/"' in page.content.decode()  # the owner's control


@pytest.mark.django_db
def test_a_second_transfer_by_a_former_owner_is_refused_and_leaves_one_owner():
    shop = MerchantFactory()
    first, second = (MembershipFactory(merchant=shop, role=Role.ADMIN) for _ in range(2))
    client = _owner_client(shop)
    actor = Membership.objects.get(merchant=shop, role=Role.OWNER)

    client.post(f"/dashboard/members/{first.pk}/transfer/")
    with pytest.raises(members.OwnerOnly):  # a stale second tab: the sender's membership as it was read before
        members.ownership_transfer(None, actor=actor, member_id=second.pk)

    assert list(Membership.objects.filter(merchant=shop, role=Role.OWNER).values_list("pk", flat=True)) == [first.pk]
    shop.refresh_from_db()
    assert shop.owner == first.user


@pytest.mark.django_db
def test_a_password_change_is_audited_in_every_merchant_its_user_owns():
    shop, other_shop = MerchantFactory(), MerchantFactory()
    Merchant.objects.filter(pk=other_shop.pk).update(owner=shop.owner)

    services.password_change(user=shop.owner, password="another-horse-battery", actor=shop.owner, how="test")

    assert sorted(AccountEvent.objects.filter(action=AccountEvent.Action.PASSWORD_CHANGED).values_list(
        "merchant_id", flat=True)) == sorted([shop.pk, other_shop.pk])
