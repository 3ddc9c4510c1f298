"""The per-process key cache must never serve a key pair longer than its version token says it is current."""

import socket
import time

import pytest
from django.conf import settings
from django.utils import timezone

from accounts.models import KycStatus
from accounts.services import kyc_reject
from core import cache as shared_cache
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
    assert response.json()["error"]["code"] == "api_key_revoked"


@pytest.mark.django_db
def test_a_revoked_pair_stays_refused_while_cached(api, test_key):
    """The revoked row is what the cache now holds: every later request, served from it, is refused too."""
    api_key, _ = test_key
    api.get("/account")
    api.get("/account")
    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=timezone.now())
    ratelimit.versions_bump([api_key.public_key], "revoked")
    api.get("/account")  # reloads and caches the revoked pair

    codes = [api.get("/account").json()["error"]["code"] for _ in range(3)]

    assert codes == ["api_key_revoked"] * 3
    assert authcache._entries[api_key.public_key].api_key.revoked_at is not None


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


def redis_at(monkeypatch, location: str) -> None:
    """Point the rate limiter's Redis client at another server, built as settings.CACHES builds it (1 s timeouts)."""
    client = shared_cache.redis_client_build({**settings.CACHES["default"], "LOCATION": location})
    monkeypatch.setattr(ratelimit, "redis_client", lambda: client)


def assert_service_unavailable(response) -> None:
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert response.json() == {"error": {
        "type": "api_error", "code": "service_unavailable",
        "message": "The service cannot check rate limits right now; retry in a moment",
        "param": None, "details": [], "requestId": response["X-Request-Id"]}}


@pytest.mark.django_db
def test_redis_down_is_a_503_in_the_error_shape(api, monkeypatch):
    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    redis_at(monkeypatch, f"redis://127.0.0.1:{port}/0")

    assert_service_unavailable(api.get("/account"))


@pytest.mark.django_db
def test_a_redis_that_hangs_is_a_503_within_its_timeout(api, monkeypatch):
    """A server that accepts the connection and never answers: one socket timeout (1 s), no retries."""
    with socket.socket() as hanging:
        hanging.bind(("127.0.0.1", 0))
        hanging.listen()
        redis_at(monkeypatch, f"redis://127.0.0.1:{hanging.getsockname()[1]}/0")
        start = time.monotonic()
        response = api.get("/account")
        waited = time.monotonic() - start

    assert_service_unavailable(response)
    assert 0.9 < waited < 2.5


def test_a_thread_per_request_server_does_not_exhaust_redis_connections():
    import threading

    errors = []
    pool = shared_cache.redis_client().connection_pool
    (idle_before, _), (in_use_before, _) = pool.get_connection_count()

    def request_in_a_new_thread():
        try:
            ratelimit.gate(ip="203.0.113.1", public_key="pk_test_" + "x" * 24)
        except Exception as error:
            errors.append(error)

    for _ in range(150):
        thread = threading.Thread(target=request_in_a_new_thread)
        thread.start()
        thread.join()

    (idle, _), (in_use, _) = pool.get_connection_count()
    assert errors == []
    # Each request borrowed an idle connection and gave it back: none in use, at most the first one opened.
    assert in_use == 0
    assert idle <= max(idle_before + in_use_before, 1)


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
