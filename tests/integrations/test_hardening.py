"""Fixes from the review of the integrations app: proxies, swapped key pairs, the admin's revoke, stored bodies."""

import uuid

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import RequestFactory

from core.requests import client_ip
from integrations.idempotency import Claim, idempotency_claim, idempotency_finish
from integrations.models import ApiKey, IdempotencyKey
from tests.conftest import basic_auth
from tests.factories import UserFactory


@pytest.mark.parametrize(("proxies", "forwarded", "expected"), [
    (0, "203.0.113.9", "10.0.0.2"),  # no trusted proxy: the header is the client's word, ignored
    (1, "203.0.113.9", "203.0.113.9"),
    (1, "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # the left entry was written by the client
    (2, "198.51.100.1, 203.0.113.9, 10.0.0.7", "203.0.113.9"),
    (2, "203.0.113.9", "10.0.0.2"),  # fewer entries than proxies: not behind them, use the peer
])
def test_client_ip_behind_trusted_proxies(settings, proxies, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    request = RequestFactory().get("/account", HTTP_X_FORWARDED_FOR=forwarded, REMOTE_ADDR="10.0.0.2")

    assert client_ip(request) == expected


@pytest.mark.django_db
def test_failed_auth_block_is_per_client_behind_the_load_balancer(client, settings, test_key):
    settings.TRUSTED_PROXY_COUNT = 1
    api_key, secret = test_key
    for _ in range(20):
        client.get("/account", HTTP_AUTHORIZATION=basic_auth(api_key.public_key, "sk_test_wrong"),
                   HTTP_X_FORWARDED_FOR="203.0.113.9", REMOTE_ADDR="10.0.0.2")

    blocked = client.get("/account", HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret),
                         HTTP_X_FORWARDED_FOR="203.0.113.9", REMOTE_ADDR="10.0.0.2")
    other_client = client.get("/account", HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret),
                              HTTP_X_FORWARDED_FOR="198.51.100.4", REMOTE_ADDR="10.0.0.2")

    assert blocked.status_code == 429
    assert other_client.status_code == 200


@pytest.mark.django_db
def test_a_secret_in_the_public_key_slot_never_reaches_the_database(client, test_key, django_assert_num_queries):
    _, secret = test_key

    with django_assert_num_queries(0):
        response = client.get("/account", HTTP_AUTHORIZATION=basic_auth(secret, secret))

    assert response.status_code == 401


@pytest.mark.django_db
def test_staff_revoke_key_pairs_in_the_admin(client, test_key):
    api_key, secret = test_key
    client.force_login(UserFactory(is_staff=True, is_superuser=True))

    client.post("/admin/integrations/apikey/", {"action": "revoke", ACTION_CHECKBOX_NAME: [str(api_key.pk)]})

    assert ApiKey.objects.get(pk=api_key.pk).revoked_at is not None
    assert client.get("/account", HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret)).status_code == 401


@pytest.mark.django_db
def test_a_stored_response_may_hold_uuids(test_key):
    api_key, _ = test_key
    claim: Claim = idempotency_claim(api_key=api_key, key="k", method="POST", path="/x", digest="d")

    class StoredResponse:
        status_code = 201
        data = {"id": uuid.UUID(int=7)}

    idempotency_finish(claim=claim, response=StoredResponse(), keep=True)

    assert IdempotencyKey.objects.get().response_body == {"id": "00000000-0000-0000-0000-000000000007"}
