"""Issue 37, item 4: no dashboard URL answers a GET with an empty 405 (Chromium shows its own error page for one). A
form's URL (the page that answered a POST, e.g. /dashboard/integrations/keys/ after creating a key) redirects to the
page the form is on, and the mode switch lands on a page that reads the same in the other mode."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, get_resolver

from payments.models import Payin
from tests.accounts.test_team_access import dashboard_routes
from tests.factories import MerchantFactory

ZERO = "00000000-0000-0000-0000-000000000000"


def every_dashboard_path() -> list[tuple[str, str]]:
    """(name, path) of the dashboard namespace's routes and the other /dashboard/ URLs (the language switch)."""
    routes = [(name, path) for name, path, _view in dashboard_routes()]
    routes += [(pattern.name, "/" + str(pattern.pattern)) for pattern in get_resolver().url_patterns
               if isinstance(pattern, URLPattern) and str(pattern.pattern).startswith("dashboard/")]
    return routes


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def owner_client() -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(MerchantFactory(name="Loja da Ema").owner)
    return client


def test_the_list_has_the_form_urls_and_the_language_switch():
    paths = dict(every_dashboard_path())

    assert paths["apikey_create"] == "/dashboard/integrations/keys/"
    assert paths["set_language"] == "/dashboard/language/"
    assert paths["logout"] == "/dashboard/logout/"
    assert len(paths) > 50


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_no_dashboard_url_answers_a_get_with_an_empty_405(who, owner_client):
    client = owner_client if who == "owner" else Client(HTTP_ACCEPT_LANGUAGE="en")
    blank, unreadable = [], []

    for name, path in every_dashboard_path():
        response = client.get(path, follow=True)
        statuses = [status for _url, status in response.redirect_chain] + [response.status_code]
        if 405 in statuses:
            blank.append((name, path, statuses))
        elif response.status_code not in (200, 403, 404) or not body(response).strip():
            unreadable.append((name, path, statuses))

    assert blank == []
    assert unreadable == []


@pytest.mark.django_db
def test_a_form_url_redirects_to_the_page_the_form_is_on(owner_client):
    expected = {
        "/dashboard/integrations/keys/": "/dashboard/integrations/",
        f"/dashboard/integrations/keys/{ZERO}/revoke/": "/dashboard/integrations/",
        "/dashboard/webhooks/secret/rotate/": "/dashboard/integrations/",
        f"/dashboard/charges/{ZERO}/cancel/": f"/dashboard/charges/{ZERO}/",
        f"/dashboard/payouts/{ZERO}/cancel/": f"/dashboard/payouts/{ZERO}/",
        f"/dashboard/disputes/{ZERO}/accept/": f"/dashboard/disputes/{ZERO}/",
        f"/dashboard/webhooks/deliveries/{ZERO}/resend/": f"/dashboard/webhooks/deliveries/{ZERO}/",
        "/dashboard/members/1/remove/": "/dashboard/members/",
        "/dashboard/security/recovery-codes/": "/dashboard/security/",
        "/dashboard/mode/": "/dashboard/",
        "/dashboard/logout/": "/dashboard/login/",
    }

    answers = {path: owner_client.get(path) for path in expected}

    assert {path: (r.status_code, r["Location"]) for path, r in answers.items()} == {
        path: (302, target) for path, target in expected.items()}
    assert owner_client.head("/dashboard/integrations/keys/").status_code == 302
    refused = owner_client.put("/dashboard/integrations/keys/")
    assert (refused.status_code, refused["Allow"]) == (405, "POST")


@pytest.mark.django_db
def test_the_mode_switch_lands_on_a_page_that_reads_the_same_in_the_other_mode(owner_client):
    charge = uuid.uuid4()
    expected = {
        "/dashboard/integrations/keys/": "/dashboard/integrations/",  # the answer to "Create key pair"
        "/dashboard/webhooks/secret/reveal/": "/dashboard/integrations/",
        "/dashboard/integrations/": "/dashboard/integrations/",
        "/dashboard/kyc/": "/dashboard/kyc/",
        "/dashboard/charges/": "/dashboard/charges/",
        f"/dashboard/charges/{charge}/": "/dashboard/charges/",  # a charge is of one mode: its list
        f"/dashboard/charges/{charge}/refund/": "/dashboard/charges/",
        f"/dashboard/webhooks/deliveries/{charge}/": "/dashboard/webhooks/deliveries/",
        "/dashboard/members/3/role/": "/dashboard/members/",
        "/dashboard/": "/dashboard/",
        "/dashboard/no-such-page/": "/dashboard/",
        "https://evil.example.com/dashboard/": "/dashboard/",
    }

    landed = {path: owner_client.post("/dashboard/mode/", {"mode": "live", "next": path})["Location"]
              for path in expected}

    assert landed == expected
    assert owner_client.get("/dashboard/integrations/").context["livemode"] is True
    assert not Payin.objects.exists()
