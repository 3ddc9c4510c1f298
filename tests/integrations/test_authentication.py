"""SPEC §1.2: API key pairs on every endpoint (HTTP Basic or x-api-key + x-api-secret), revocation, the KYC gate,
suspension, GET /account and lastUsedAt."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.models import KycStatus
from accounts.services import merchant_suspend
from integrations import services
from integrations.models import ApiKey
from tests.conftest import basic_auth
from tests.factories import ApiKeyFactory, MerchantFactory

pytestmark = pytest.mark.django_db

BAD_AUTHORIZATION = "The Authorization header must be: Basic base64(PUBLIC_KEY:SECRET_KEY)"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def account_body(merchant, *, livemode: bool) -> dict:
    return {"merchantId": str(merchant.id), "name": merchant.name, "livemode": livemode,
            "kycStatus": merchant.kyc_status}


def assert_invalid_api_key(response, expected_error, message: str = "Invalid API key") -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="api"'
    assert response["Content-Type"] == "application/json"
    assert response.json() == expected_error(response, type="authentication_error", code="invalid_api_key",
                                             message=message)


# --- GET /account -----------------------------------------------------------------------------------------------------
def test_account_answers_the_merchant_and_mode_of_the_calling_key(api, merchant):
    response = api.get("/account")

    assert response.status_code == 200
    assert response.json() == {"merchantId": str(merchant.id), "name": merchant.name, "livemode": False,
                               "kycStatus": "APPROVED"}
    assert response["Api-Version"] == "2026-11-20"
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("form", ["basic", "headers"])
def test_both_credential_forms_are_accepted(form, test_key, merchant, api_client_for, header_client):
    client = api_client_for(*test_key) if form == "basic" else header_client(*test_key)

    response = client.get("/account")

    assert response.status_code == 200
    assert response.json() == account_body(merchant, livemode=False)


def test_basic_scheme_name_is_case_insensitive(test_key, merchant):
    api_key, secret = test_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="basic " + b64(f"{api_key.public_key}:{secret}"))

    response = client.get("/account")

    assert response.status_code == 200
    assert response.json() == account_body(merchant, livemode=False)


# --- Refusals -------------------------------------------------------------------------------------------------------
def test_no_credentials_is_authentication_required(expected_error):
    response = APIClient().get("/account")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="api"'
    assert response["Content-Type"] == "application/json"
    assert response.json() == expected_error(
        response, type="authentication_error", code="authentication_required",
        message="Authentication required: send your API key pair with HTTP Basic or x-api-key and x-api-secret")


def test_wrong_secret_is_refused(test_key, expected_error):
    api_key, secret = test_key
    wrong_secret = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, wrong_secret))

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error)


def test_unknown_public_key_is_refused(test_key, expected_error):
    _, secret = test_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic_auth("pk_test_" + "x" * 24, secret))

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error)


@pytest.mark.parametrize("header", [
    pytest.param("Bearer {public}:{secret}", id="not-basic"),
    pytest.param("Basic", id="basic-without-credentials"),
    pytest.param("Basic ", id="basic-empty"),
    pytest.param("Basic !!not*base64!!", id="bad-base64"),
    pytest.param("Basic {b64_no_colon}", id="no-colon"),
    pytest.param("Basic {b64_no_public}", id="empty-public-key"),
    pytest.param("Basic {b64_no_secret}", id="empty-secret"),
    pytest.param("Basic {b64_latin1}", id="not-utf8"),
])
def test_malformed_authorization_header_is_refused(header, test_key, expected_error):
    api_key, secret = test_key
    value = header.format(
        public=api_key.public_key, secret=secret,
        b64_no_colon=b64(api_key.public_key + secret),
        b64_no_public=b64(":" + secret),
        b64_no_secret=b64(api_key.public_key + ":"),
        b64_latin1=base64.b64encode(f"{api_key.public_key}:{secret}\xe9".encode("latin-1")).decode(),
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=value)

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error, BAD_AUTHORIZATION)


def test_revoked_key_is_refused_on_the_next_request_naming_the_revocation(api, test_key, expected_error):
    api_key, _ = test_key
    assert api.get("/account").status_code == 200  # the pair is in this process's key cache now

    services.apikey_revoke(api_key=api_key)
    response = api.get("/account")

    revoked_at = ApiKey.objects.get(pk=api_key.pk).revoked_at
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="api"'
    assert response.json() == expected_error(
        response, type="authentication_error", code="api_key_revoked",
        message=f"This API key pair was revoked on {revoked_at.strftime('%Y-%m-%dT%H:%M:%S.')}"
                f"{revoked_at.microsecond // 1000:03d}Z; use an active pair (dashboard: Integrations)")


@pytest.mark.parametrize("form", ["basic", "headers"])
def test_revoked_key_with_a_mistyped_secret_stays_invalid_api_key(form, test_key, api_client_for, header_client,
                                                                   expected_error):
    api_key, secret = test_key
    services.apikey_revoke(api_key=api_key)
    mistyped = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    client = api_client_for(api_key, mistyped) if form == "basic" else header_client(api_key, mistyped)

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error)


def test_mistyped_secret_of_an_active_key_is_invalid_api_key(test_key, api_client_for, expected_error):
    api_key, secret = test_key

    response = api_client_for(api_key, secret[:-1]).get("/account")

    assert_invalid_api_key(response, expected_error)


def test_both_forms_naming_the_same_pair_are_accepted(test_key, merchant):
    api_key, secret = test_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret),
                       HTTP_X_API_KEY=api_key.public_key, HTTP_X_API_SECRET=secret)

    response = client.get("/account")

    assert response.status_code == 200
    assert response.json() == account_body(merchant, livemode=False)


@pytest.mark.parametrize("which", ["other-merchant", "same-merchant"])
def test_both_forms_naming_different_pairs_are_refused(which, test_key, other_key, merchant, expected_error):
    api_key, secret = test_key
    second_key, second_secret = other_key if which == "other-merchant" else ApiKeyFactory.with_secret(
        merchant=merchant, livemode=False)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret),
                       HTTP_X_API_KEY=second_key.public_key, HTTP_X_API_SECRET=second_secret)

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error,
                           "The Authorization header and the x-api-key headers name different key pairs")


def test_both_forms_with_the_same_public_key_but_another_secret_are_refused(test_key, expected_error):
    api_key, secret = test_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret),
                       HTTP_X_API_KEY=api_key.public_key, HTTP_X_API_SECRET=secret + "x")

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error,
                           "The Authorization header and the x-api-key headers name different key pairs")


@pytest.mark.parametrize("sent", [
    pytest.param({"key": True}, id="only-x-api-key"),
    pytest.param({"secret": True}, id="only-x-api-secret"),
    pytest.param({"key": True, "secret": True, "empty_secret": True}, id="empty-x-api-secret"),
])
def test_only_one_of_the_api_key_headers_is_refused(sent, test_key, expected_error):
    api_key, secret = test_key
    headers = {}
    if sent.get("key"):
        headers["HTTP_X_API_KEY"] = api_key.public_key
    if sent.get("secret"):
        headers["HTTP_X_API_SECRET"] = "" if sent.get("empty_secret") else secret
    client = APIClient()
    client.credentials(**headers)

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error, "Send both x-api-key and x-api-secret")


def test_a_test_secret_with_a_live_public_key_is_refused(test_key, live_key, expected_error):
    live_api_key, _ = live_key
    _, test_secret = test_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic_auth(live_api_key.public_key, test_secret))

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error)


def test_a_live_secret_with_a_test_public_key_is_refused(test_key, live_key, expected_error):
    test_api_key, _ = test_key
    _, live_secret = live_key
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=test_api_key.public_key, HTTP_X_API_SECRET=live_secret)

    response = client.get("/account")

    assert_invalid_api_key(response, expected_error)


def test_failed_authentication_does_not_touch_last_used_at(test_key):
    api_key, secret = test_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret + "0"))

    client.get("/account")

    assert ApiKey.objects.get(pk=api_key.pk).last_used_at is None


# --- KYC gate and suspension ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [KycStatus.NOT_SUBMITTED, KycStatus.SUBMITTED, KycStatus.REJECTED])
def test_live_key_is_refused_until_kyc_is_approved(status, api_client_for, expected_error):
    merchant = MerchantFactory(kyc_status=status)
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))

    response = client.get("/account")

    assert response.status_code == 403
    assert response.json() == expected_error(
        response, type="permission_error", code="kyc_not_approved",
        message="Live keys work once the account's KYC is approved; use your test keys until then")


def test_live_key_works_once_kyc_is_approved(live_key, merchant, api_client_for):
    client = api_client_for(*live_key)

    response = client.get("/account")

    assert response.status_code == 200
    assert response.json() == {"merchantId": str(merchant.id), "name": merchant.name, "livemode": True,
                               "kycStatus": "APPROVED"}


@pytest.mark.parametrize("status", [KycStatus.NOT_SUBMITTED, KycStatus.SUBMITTED, KycStatus.REJECTED])
def test_test_key_works_before_kyc_approval(status, api_client_for):
    merchant = MerchantFactory(kyc_status=status)
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=False))

    response = client.get("/account")

    assert response.status_code == 200
    assert response.json() == {"merchantId": str(merchant.id), "name": merchant.name, "livemode": False,
                               "kycStatus": status.value}


@pytest.mark.parametrize("livemode", [False, True], ids=["test", "live"])
def test_suspended_merchant_is_refused_in_both_modes(livemode, merchant, api_client_for, expected_error):
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=livemode))
    assert client.get("/account").status_code == 200
    merchant_suspend(merchant=merchant, actor=None, reason="tests")

    response = client.get("/account")

    assert response.status_code == 403
    assert response.json() == expected_error(response, type="permission_error", code="account_suspended",
                                             message="This account is suspended; contact support")


def test_suspended_merchant_without_kyc_gets_account_suspended_on_a_live_key(api_client_for, expected_error):
    merchant = MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED, is_suspended=True)
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))

    response = client.get("/account")

    assert response.status_code == 403
    assert response.json() == expected_error(response, type="permission_error", code="account_suspended",
                                             message="This account is suspended; contact support")


# --- lastUsedAt -----------------------------------------------------------------------------------------------------
def apikey_updates(queries: CaptureQueriesContext) -> list[str]:
    table = ApiKey._meta.db_table
    return [q["sql"] for q in queries.captured_queries
            if q["sql"].lstrip().upper().startswith("UPDATE") and table in q["sql"]]


def test_last_used_at_is_written_on_first_use(api, test_key, services_clock):
    api_key, _ = test_key

    with CaptureQueriesContext(connection) as queries:
        response = api.get("/account")

    assert response.status_code == 200
    assert len(apikey_updates(queries)) == 1
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at == services_clock.now


def test_last_used_at_is_not_rewritten_within_a_minute(api, test_key, services_clock):
    api_key, _ = test_key
    first_use = services_clock.now
    api.get("/account")
    services_clock.now = first_use + timedelta(seconds=59)

    with CaptureQueriesContext(connection) as queries:
        response = api.get("/account")

    assert response.status_code == 200
    assert apikey_updates(queries) == []
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at == first_use


def test_last_used_at_is_rewritten_after_a_minute(api, test_key, services_clock):
    api_key, _ = test_key
    api.get("/account")
    services_clock.now += timedelta(minutes=1, seconds=1)

    with CaptureQueriesContext(connection) as queries:
        response = api.get("/account")

    assert response.status_code == 200
    assert len(apikey_updates(queries)) == 1
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at == services_clock.now


def test_last_used_at_older_than_a_minute_in_the_database_is_refreshed(api, test_key):
    api_key, _ = test_key
    long_ago = datetime(2020, 1, 1, tzinfo=UTC)
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=long_ago)

    response = api.get("/account")

    assert response.status_code == 200
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at > long_ago + timedelta(days=365)
