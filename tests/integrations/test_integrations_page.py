"""SPEC §9: the dashboard's Integrations page: create a key pair (the secret shown once), revoke; and §10: the admin
never shows a secret's digest."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages
from rest_framework.test import APIClient

from accounts.models import KycStatus
from integrations.models import ApiKey
from tests.conftest import basic_auth
from tests.factories import ApiKeyFactory, MerchantFactory

pytestmark = pytest.mark.django_db

PAGE = "/dashboard/integrations/"
CREATE = "/dashboard/integrations/keys/"
ALREADY_USED = "That form was already used. Your keys are listed below; create another if needed."
SUSPENDED = "Your account is suspended, so the dashboard is read-only. Contact support."


def form_nonce(client) -> str:
    page = client.get(PAGE)
    assert page.status_code == 200
    return re.search(r'<input type="hidden" name="nonce" value="([^"]+)"', page.content.decode()).group(1)


def shown_pair(response) -> tuple[str, str]:
    html = response.content.decode()
    return (re.search(r'id="new-public" readonly value="([^"]+)"', html).group(1),
            re.search(r'id="new-secret" readonly value="([^"]+)"', html).group(1))


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def account_status(public_key: str, secret: str) -> int:
    return APIClient().get("/account", HTTP_AUTHORIZATION=basic_auth(public_key, secret)).status_code


# --- Create ---------------------------------------------------------------------------------------------------------
def test_creating_a_test_key_shows_its_secret_once(dashboard, merchant):
    nonce = form_nonce(dashboard)

    response = dashboard.post(CREATE, {"label": " shop server ", "mode": "test", "nonce": nonce})

    api_key = ApiKey.objects.get(merchant=merchant)
    public_key, secret = shown_pair(response)
    html = response.content.decode()
    assert response.status_code == 200
    assert "no-store" in [d.strip() for d in response["Cache-Control"].split(",")]
    assert (api_key.public_key, api_key.livemode, api_key.label) == (public_key, False, "shop server")
    assert secret.startswith("sk_test_")
    assert html.count(secret) == 1
    assert "This is the only time it is shown" in html
    assert account_status(public_key, secret) == 200


def test_reloading_the_page_does_not_show_the_secret_again(dashboard, merchant):
    created = dashboard.post(CREATE, {"label": "shop", "mode": "test", "nonce": form_nonce(dashboard)})
    public_key, secret = shown_pair(created)

    reloaded = dashboard.get(PAGE)

    html = reloaded.content.decode()
    assert reloaded.status_code == 200
    assert public_key in html
    assert f"sk_test_…{secret[-4:]}" in html
    assert secret not in html
    assert secret[8:16] not in html
    assert 'id="new-secret"' not in html


def test_reposting_the_same_form_creates_nothing_and_shows_no_secret(dashboard, merchant):
    form = {"label": "shop", "mode": "test", "nonce": form_nonce(dashboard)}
    created = dashboard.post(CREATE, form)
    _, secret = shown_pair(created)

    again = dashboard.post(CREATE, form)

    assert again.status_code == 302
    assert again["Location"] == PAGE
    assert messages_of(again) == [ALREADY_USED]
    assert ApiKey.objects.filter(merchant=merchant).count() == 1
    followed = dashboard.get(again["Location"]).content.decode()
    assert secret not in followed
    assert 'id="new-secret"' not in followed


@pytest.mark.parametrize("nonce", ["", "forged-nonce"])
def test_a_post_without_the_pages_nonce_creates_nothing(nonce, dashboard, merchant):
    form_nonce(dashboard)

    response = dashboard.post(CREATE, {"label": "shop", "mode": "test", "nonce": nonce})

    assert response.status_code == 302
    assert messages_of(response) == [ALREADY_USED]
    assert not ApiKey.objects.exists()


def test_creating_a_live_key_with_kyc_approved(dashboard, merchant):
    response = dashboard.post(CREATE, {"label": "", "mode": "live", "nonce": form_nonce(dashboard)})

    public_key, secret = shown_pair(response)
    assert public_key.startswith("pk_live_")
    assert secret.startswith("sk_live_")
    assert ApiKey.objects.get(merchant=merchant).livemode is True
    assert account_status(public_key, secret) == 200


@pytest.mark.parametrize("status", [KycStatus.NOT_SUBMITTED, KycStatus.SUBMITTED, KycStatus.REJECTED])
def test_live_key_creation_is_refused_before_kyc_approval(status, client):
    merchant = MerchantFactory(kyc_status=status)
    client.force_login(merchant.owner)

    response = client.post(CREATE, {"label": "", "mode": "live", "nonce": form_nonce(client)})

    assert response.status_code == 302
    assert response["Location"] == PAGE
    assert messages_of(response) == ["Live keys can be created once your KYC is approved"]
    assert not ApiKey.objects.exists()


def test_test_key_creation_works_before_kyc(client):
    merchant = MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED)
    client.force_login(merchant.owner)

    response = client.post(CREATE, {"label": "", "mode": "test", "nonce": form_nonce(client)})

    public_key, secret = shown_pair(response)
    assert ApiKey.objects.get(merchant=merchant).public_key == public_key
    assert account_status(public_key, secret) == 200


def test_a_suspended_merchant_cannot_create_keys(dashboard, merchant):
    nonce = form_nonce(dashboard)
    merchant.is_suspended = True
    merchant.save(update_fields=["is_suspended"])

    response = dashboard.post(CREATE, {"label": "", "mode": "test", "nonce": nonce})

    assert response.status_code == 302
    assert response["Location"] == "/dashboard/"
    assert messages_of(response) == [SUSPENDED]
    assert not ApiKey.objects.exists()


def test_create_only_accepts_post_and_a_get_goes_to_the_page(dashboard):
    response = dashboard.get(CREATE)  # a reload or a mode switch on the page that showed a new key (issue 37)

    assert (response.status_code, response["Location"]) == (302, "/dashboard/integrations/")
    assert not ApiKey.objects.exists()


# --- Revoke ---------------------------------------------------------------------------------------------------------
def test_revoking_a_key_refuses_it_on_the_api(dashboard, merchant, test_key):
    api_key, secret = test_key
    assert account_status(api_key.public_key, secret) == 200

    response = dashboard.post(f"/dashboard/integrations/keys/{api_key.pk}/revoke/")

    assert response.status_code == 302
    assert response["Location"] == PAGE
    assert messages_of(response) == [f"Key pair {api_key.public_key} revoked: requests with it now get 401."]
    assert ApiKey.objects.get(pk=api_key.pk).revoked_at is not None
    assert account_status(api_key.public_key, secret) == 401
    assert "revoked " in dashboard.get(PAGE).content.decode()


def test_revoking_twice_says_it_is_already_revoked(dashboard, test_key):
    api_key, _ = test_key
    dashboard.post(f"/dashboard/integrations/keys/{api_key.pk}/revoke/", follow=True)
    revoked_at = ApiKey.objects.get(pk=api_key.pk).revoked_at

    response = dashboard.post(f"/dashboard/integrations/keys/{api_key.pk}/revoke/")

    assert response.status_code == 302
    assert messages_of(response) == ["This key pair is already revoked"]
    assert ApiKey.objects.get(pk=api_key.pk).revoked_at == revoked_at


def test_another_merchants_key_is_not_found(dashboard, other_key):
    api_key, secret = other_key

    response = dashboard.post(f"/dashboard/integrations/keys/{api_key.pk}/revoke/")

    assert response.status_code == 404
    assert ApiKey.objects.get(pk=api_key.pk).revoked_at is None
    assert account_status(api_key.public_key, secret) == 200


def test_a_suspended_merchant_cannot_revoke(dashboard, merchant, test_key):
    api_key, _ = test_key
    merchant.is_suspended = True
    merchant.save(update_fields=["is_suspended"])

    response = dashboard.post(f"/dashboard/integrations/keys/{api_key.pk}/revoke/")

    assert response.status_code == 302
    assert messages_of(response) == [SUSPENDED]
    assert ApiKey.objects.get(pk=api_key.pk).revoked_at is None


# --- The page -------------------------------------------------------------------------------------------------------
def test_the_page_lists_only_the_merchants_keys_without_secrets_or_digests(dashboard, merchant, test_key, other_key):
    api_key, secret = test_key
    live_key, live_secret = ApiKeyFactory.with_secret(merchant=merchant, livemode=True, label="live server")

    response = dashboard.get(PAGE)

    html = response.content.decode()
    assert response.status_code == 200
    assert "no-store" in [d.strip() for d in response["Cache-Control"].split(",")]
    assert api_key.public_key in html
    assert live_key.public_key in html
    assert other_key[0].public_key not in html
    assert f"sk_test_…{secret[-4:]}" in html
    assert f"sk_live_…{live_secret[-4:]}" in html
    assert secret not in html and live_secret not in html
    assert api_key.secret_digest not in html and live_key.secret_digest not in html


def test_the_page_needs_a_login(client):
    response = client.get(PAGE)

    assert response.status_code == 302
    assert response["Location"] == "/dashboard/login/?next=/dashboard/integrations/"


def test_create_and_revoke_need_a_login(client, test_key):
    api_key, _ = test_key

    responses = [client.post(CREATE, {"label": "", "mode": "test", "nonce": "x"}),
                 client.post(f"/dashboard/integrations/keys/{api_key.pk}/revoke/")]

    assert [r.status_code for r in responses] == [302, 302]
    assert all(r["Location"].startswith("/dashboard/login/?next=") for r in responses)
    assert ApiKey.objects.count() == 1
    assert ApiKey.objects.get(pk=api_key.pk).revoked_at is None


# --- Admin ----------------------------------------------------------------------------------------------------------
def test_admin_change_page_of_a_key_does_not_show_its_digest(admin_client, test_key):
    api_key, secret = test_key

    response = admin_client.get(f"/admin/integrations/apikey/{api_key.pk}/change/")

    html = response.content.decode()
    assert response.status_code == 200
    assert api_key.public_key in html
    assert api_key.secret_last4 in html
    assert api_key.secret_digest not in html
    assert api_key.secret_digest[:16] not in html
    assert secret not in html


def test_admin_list_and_search_do_not_show_digests(admin_client, test_key):
    api_key, _ = test_key

    responses = [admin_client.get("/admin/integrations/apikey/"),
                 admin_client.get("/admin/integrations/apikey/", {"q": api_key.public_key})]

    assert [r.status_code for r in responses] == [200, 200]
    assert all(api_key.public_key in r.content.decode() for r in responses)
    assert all(api_key.secret_digest[:16] not in r.content.decode() for r in responses)


def test_admin_cannot_add_a_key(admin_client):
    response = admin_client.get("/admin/integrations/apikey/add/")

    assert response.status_code == 403
