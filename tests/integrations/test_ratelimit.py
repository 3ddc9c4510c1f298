"""SPEC §1.5: requests per second per key pair (default, per-merchant override), RateLimit-* headers, 429 with
Retry-After, and the blocks after too many failed authentications (the IP's further failures, the key from that IP).
Counters are atomic across connections."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from integrations.models import ApiKey
from tests.conftest import basic_auth, run_in_threads
from tests.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db

TOO_MANY_FAILURES = "Too many failed authentications from this address; retry in a minute"
TOO_MANY_KEY_FAILURES = "Too many failed authentications with this key from this address; retry in a minute"


def rate_headers(response) -> dict:
    return {name: response.get(name) for name in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")}


def assert_rate_limited(response, expected_error, *, limit: int) -> None:
    assert response.status_code == 429
    assert response["Retry-After"] == "1"
    assert rate_headers(response) == {"RateLimit-Limit": str(limit), "RateLimit-Remaining": "0",
                                      "RateLimit-Reset": "1"}
    assert response.json() == expected_error(response, type="rate_limit_error", code="rate_limited",
                                             message="Too many requests")


def wrong_secret_client(api_key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, "sk_test_" + "0" * 48))
    return client


# --- Per key pair ---------------------------------------------------------------------------------------------------
def test_requests_beyond_the_limit_within_one_second_are_refused(api, limit, frozen_clock, expected_error):
    allowed = [api.get("/account") for _ in range(limit)]

    refused = api.get("/account")

    assert [r.status_code for r in allowed] == [200] * limit
    assert [rate_headers(r) for r in allowed] == [
        {"RateLimit-Limit": "5", "RateLimit-Remaining": str(remaining), "RateLimit-Reset": "1"}
        for remaining in (4, 3, 2, 1, 0)
    ]
    assert_rate_limited(refused, expected_error, limit=limit)


def test_the_limit_starts_again_in_the_next_second(api, limit, frozen_clock):
    for _ in range(limit + 2):
        api.get("/account")
    frozen_clock.now += 1

    response = api.get("/account")

    assert response.status_code == 200
    assert rate_headers(response) == {"RateLimit-Limit": "5", "RateLimit-Remaining": "4", "RateLimit-Reset": "1"}


def test_default_limit_is_100_per_second(api, frozen_clock):
    response = api.get("/account")

    assert response.status_code == 200
    assert rate_headers(response) == {"RateLimit-Limit": "100", "RateLimit-Remaining": "99", "RateLimit-Reset": "1"}


@pytest.mark.parametrize("override", [2, 8])
def test_merchant_override_replaces_the_default(override, api, merchant, limit, frozen_clock, expected_error):
    merchant.api_rate_limit = override
    merchant.save(update_fields=["api_rate_limit"])
    allowed = [api.get("/account") for _ in range(override)]

    refused = api.get("/account")

    assert [r.status_code for r in allowed] == [200] * override
    assert allowed[0]["RateLimit-Limit"] == str(override)
    assert allowed[-1]["RateLimit-Remaining"] == "0"
    assert_rate_limited(refused, expected_error, limit=override)


def test_another_key_pair_keeps_its_own_budget(api, merchant, other_key, api_client_for, limit, frozen_clock):
    for _ in range(limit + 1):
        api.get("/account")
    same_merchant = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=False))
    other_merchant = api_client_for(*other_key)

    responses = [same_merchant.get("/account"), other_merchant.get("/account")]

    assert [r.status_code for r in responses] == [200, 200]
    assert [r["RateLimit-Remaining"] for r in responses] == ["4", "4"]
    assert api.get("/account").status_code == 429


def test_rate_limit_headers_are_on_every_authenticated_response(api, limit, frozen_clock, notes_api,
                                                                expected_error):
    responses = {
        "read": api.get("/account"),
        "create": api.post(notes_api, {"note": "hello"}),
        "validation error": api.post(notes_api, {"note": 42}),
        "method not allowed": api.post("/account", {}),
    }

    assert {name: r.status_code for name, r in responses.items()} == {
        "read": 200, "create": 201, "validation error": 400, "method not allowed": 405}
    assert [rate_headers(r) for r in responses.values()] == [
        {"RateLimit-Limit": "5", "RateLimit-Remaining": str(remaining), "RateLimit-Reset": "1"}
        for remaining in (4, 3, 2, 1)
    ]
    refused = responses["method not allowed"]
    assert refused.json() == expected_error(refused, type="invalid_request_error", code="method_not_allowed",
                                            message="Method not allowed")


def test_a_rate_limited_post_does_not_claim_its_idempotency_key(api, merchant, limit, frozen_clock, notes_api):
    for _ in range(limit):
        api.get("/account")
    refused = api.post(notes_api, {"note": "too soon"}, HTTP_IDEMPOTENCY_KEY="retry-me")
    frozen_clock.now += 1

    retried = api.post(notes_api, {"note": "too soon"}, HTTP_IDEMPOTENCY_KEY="retry-me")

    assert refused.status_code == 429
    assert retried.status_code == 201
    assert "Idempotent-Replayed" not in retried
    assert merchant.account_events.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_on_redis_get_exactly_the_limit(test_key, limit, frozen_clock):
    api_key, secret = test_key
    # Just used: no thread writes lastUsedAt, so the rate counter is the only thing the threads contend for.
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=timezone.now())

    def request(_: int) -> int:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret))
        return client.get("/account").status_code

    statuses = run_in_threads(4 * limit, request)

    assert sorted(statuses) == [200] * limit + [429] * (3 * limit)


# --- Failed authentications per IP ----------------------------------------------------------------------------------
def test_a_key_is_refused_from_an_ip_after_twenty_failures_in_a_minute(api, test_key, limit, frozen_clock,
                                                                        expected_error):
    """Right secret or wrong, so that a guesser cannot tell them apart."""
    api_key, _ = test_key
    failures = [wrong_secret_client(api_key).get("/account").status_code for _ in range(20)]

    response = api.get("/account")

    assert failures == [401] * 20
    assert response.status_code == 429
    assert response["Retry-After"] == "60"
    assert response.json() == expected_error(response, type="rate_limit_error", code="rate_limited",
                                             message=TOO_MANY_KEY_FAILURES)


def test_one_bad_client_behind_a_nat_locks_out_no_other_key(api, test_key, merchant, limit, frozen_clock,
                                                             expected_error):
    """Another key pair from the same IP works; only the IP's further failures are refused, and the guessed key."""
    api_key, _ = test_key
    other_key, other_secret = ApiKeyFactory.with_secret(merchant=merchant, livemode=False)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=basic_auth(other_key.public_key, other_secret))
    unknown = APIClient()
    unknown.credentials(HTTP_X_API_KEY="pk_test_" + "0" * 24, HTTP_X_API_SECRET="sk_test_" + "0" * 48)
    failures = [wrong_secret_client(api_key).get("/account").status_code for _ in range(25)]

    works = other.get("/account")
    further_failures = [wrong_secret_client(other_key).get("/account"), unknown.get("/account")]
    still_works = other.get("/account")
    guessed = api.get("/account")

    assert failures == [401] * 20 + [429] * 5
    assert (works.status_code, still_works.status_code) == (200, 200)
    for refused in further_failures:
        assert refused.status_code == 429
        assert refused["Retry-After"] == "60"
        assert refused.json() == expected_error(refused, type="rate_limit_error", code="rate_limited",
                                                message=TOO_MANY_FAILURES)
    assert guessed.status_code == 429
    assert guessed.json() == expected_error(guessed, type="rate_limit_error", code="rate_limited",
                                            message=TOO_MANY_KEY_FAILURES)


def test_nineteen_failures_do_not_block(api, test_key, limit, frozen_clock):
    api_key, _ = test_key
    for _ in range(19):
        wrong_secret_client(api_key).get("/account")

    response = api.get("/account")

    assert response.status_code == 200


def test_every_kind_of_failed_authentication_counts(api, test_key, limit, frozen_clock, expected_error):
    api_key, secret = test_key
    clients = [wrong_secret_client(api_key) for _ in range(18)]
    malformed = APIClient()
    malformed.credentials(HTTP_AUTHORIZATION="Bearer " + secret)
    unknown = APIClient()
    unknown.credentials(HTTP_X_API_KEY="pk_test_unknown", HTTP_X_API_SECRET=secret)
    statuses = [client.get("/account").status_code for client in [*clients, malformed, unknown]]

    further_failure = malformed.get("/account")
    response = api.get("/account")  # 18 failures with this key: it still works

    assert statuses == [401] * 20
    assert further_failure.json() == expected_error(further_failure, type="rate_limit_error", code="rate_limited",
                                                    message=TOO_MANY_FAILURES)
    assert response.status_code == 200


def test_another_ip_is_not_blocked(api, test_key, limit, frozen_clock):
    api_key, _ = test_key
    for _ in range(25):
        wrong_secret_client(api_key).get("/account", REMOTE_ADDR="203.0.113.7")

    blocked = api.get("/account", REMOTE_ADDR="203.0.113.7")
    other_ip = api.get("/account", REMOTE_ADDR="198.51.100.20")

    assert blocked.status_code == 429
    assert other_ip.status_code == 200


def test_failures_from_different_ips_are_counted_apart(api, test_key, limit, frozen_clock):
    api_key, _ = test_key
    for ip in ("203.0.113.7", "198.51.100.20"):
        for _ in range(19):
            wrong_secret_client(api_key).get("/account", REMOTE_ADDR=ip)

    statuses = [api.get("/account", REMOTE_ADDR=ip).status_code for ip in ("203.0.113.7", "198.51.100.20")]

    assert statuses == [200, 200]


def test_failures_are_counted_per_minute(api, test_key, limit, frozen_clock):
    api_key, _ = test_key
    for _ in range(15):
        wrong_secret_client(api_key).get("/account")
    frozen_clock.now += 60
    for _ in range(15):
        wrong_secret_client(api_key).get("/account")

    response = api.get("/account")

    assert response.status_code == 200


def test_successful_requests_do_not_count_as_failures(api, test_key, limit, frozen_clock):
    api_key, _ = test_key
    for _ in range(19):
        wrong_secret_client(api_key).get("/account")
    for _ in range(3):
        api.get("/account")

    response = api.get("/account")

    assert response.status_code == 200
