"""The per-process key cache must never serve a key pair longer than its version token says it is current."""

import pytest
import redis
from django.utils import timezone

from accounts.models import KycStatus
from accounts.services import kyc_reject
from integrations import authcache, ratelimit
from integrations.models import ApiKey
from tests.factories import ApiKeyFactory, MerchantFactory, UserFactory


@pytest.mark.django_db
def test_a_warm_request_makes_no_database_query(api, django_assert_num_queries):
    api.get("/account")  # gives the pair its version token
    api.get("/account")  # caches it against that token

    with django_assert_num_queries(0):
        response = api.get("/account")

    assert response.status_code == 200


@pytest.mark.django_db
def test_a_change_made_by_another_process_is_seen_on_the_next_request(api, test_key):
    api_key, _ = test_key
    assert api.get("/account").status_code == 200
    # Another process revokes the key: the row changes and the token moves; this process's entry stays behind.
    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=timezone.now())
    ratelimit.versions_bump([api_key.public_key], "another-process")

    response = api.get("/account")

    assert response.status_code == 401


@pytest.mark.django_db
def test_an_entry_older_than_the_backstop_is_reloaded(api, test_key):
    api_key, _ = test_key
    api.get("/account")  # gives the pair its version token
    assert api.get("/account").status_code == 200
    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=timezone.now())  # a change whose token was lost
    assert api.get("/account").status_code == 200  # within the backstop the entry still serves

    authcache._entries[api_key.public_key].loaded_at -= authcache.MAX_AGE_SECONDS + 1
    response = api.get("/account")

    assert response.status_code == 401


@pytest.mark.django_db
def test_a_kyc_decision_reaches_live_keys_on_the_next_request(api_client_for):
    merchant = MerchantFactory(kyc_status=KycStatus.APPROVED)
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))
    assert client.get("/account").status_code == 200
    from accounts.models import Merchant

    Merchant.objects.filter(pk=merchant.pk).update(kyc_status=KycStatus.SUBMITTED)  # as a resubmission would
    kyc_reject(merchant=Merchant.objects.get(pk=merchant.pk), actor=UserFactory(is_staff=True), reason="blurred")

    response = client.get("/account")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "kyc_not_approved"


@pytest.mark.django_db
def test_an_admin_edit_of_the_merchant_is_served_at_once(api, merchant, client):
    assert api.get("/account").json()["name"] == merchant.name
    client.force_login(UserFactory(is_staff=True, is_superuser=True))

    client.post(f"/admin/accounts/merchant/{merchant.pk}/change/", {
        "name": "Renamed Shop", "api_rate_limit": "50",
        "kyc-TOTAL_FORMS": "0", "kyc-INITIAL_FORMS": "0", "account_events-TOTAL_FORMS": "0",
        "account_events-INITIAL_FORMS": "0"})
    response = api.get("/account")

    assert response.json()["name"] == "Renamed Shop"
    assert response["RateLimit-Limit"] == "50"


@pytest.mark.django_db
def test_redis_down_is_a_503_in_the_error_shape(api, monkeypatch):
    def broken(packet, replies):
        raise redis.ConnectionError("Connection refused")

    monkeypatch.setattr(ratelimit, "redis_client", lambda: object())
    monkeypatch.setattr(ratelimit, "send", broken)

    response = api.get("/account")

    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert response.json() == {"error": {
        "type": "api_error", "code": "service_unavailable",
        "message": "The service cannot check rate limits right now; retry in a moment",
        "param": None, "details": [], "requestId": response["X-Request-Id"]}}


def test_the_gate_packet_is_what_the_generic_packer_builds():
    from core.cache import pack as _pack
    from integrations.ratelimit import _gate_packet

    packet = _gate_packet(b"rl:authblock:::1", b"rl:key:pk_test_x:1", b"authv:pk_test_x")

    assert packet == _pack([("GET", "rl:authblock:::1"), ("SET", "rl:key:pk_test_x:1", 0, "EX", 2, "NX"),
                            ("INCR", "rl:key:pk_test_x:1"), ("GET", "authv:pk_test_x")])


def test_a_thread_per_request_server_does_not_exhaust_redis_connections():
    import threading

    errors = []

    def request_in_a_new_thread():
        try:
            ratelimit.gate(ip="203.0.113.1", public_key="pk_test_" + "x" * 24)
        except Exception as error:
            errors.append(error)

    for _ in range(150):  # more threads than the pool's 100 connections
        thread = threading.Thread(target=request_in_a_new_thread)
        thread.start()
        thread.join()

    assert errors == []
    assert len(ratelimit.redis_client().connection_pool._in_use_connections) == 1


@pytest.mark.django_db
def test_a_flushed_cache_cannot_revive_a_revoked_key(api, test_key):
    from django.core.cache import cache

    api_key, _ = test_key
    api.get("/account")
    api.get("/account")
    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=timezone.now())
    ratelimit.versions_bump([api_key.public_key], "revoked")  # another process revoked it

    cache.clear()  # then Redis restarts empty: the token is gone
    response = api.get("/account")

    assert response.status_code == 401
