"""Fixtures of the integrations tests: more merchants and keys, a frozen rate-limit clock, the test-only POST endpoint,
and the SPEC §1.1 error body every API error must have."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from accounts.models import KycStatus
from integrations import ratelimit, services
from tests.factories import ApiKeyFactory, MerchantFactory

# 2027-01-15T08:00:00.250Z: a quarter of a second into a second and well inside a minute, so no fixed window of the
# rate limiter ends during a test.
FROZEN_TIME = 1_800_000_000.25


def error_body(response, *, type: str, code: str, message: str, param: str | None = None,
               details: list | None = None) -> dict:
    """The whole error body the SPEC requires; its requestId must be the response's own X-Request-Id."""
    return {"error": {"type": type, "code": code, "message": message, "param": param, "details": details or [],
                      "requestId": response["X-Request-Id"]}}


@pytest.fixture
def expected_error() -> Callable[..., dict]:
    return error_body


@pytest.fixture
def live_key(merchant):
    """(ApiKey, secret) of a live-mode pair of `merchant` (KYC approved by the factory's default)."""
    return ApiKeyFactory.with_secret(merchant=merchant, livemode=True)


@pytest.fixture
def other_merchant(db):
    return MerchantFactory()


@pytest.fixture
def other_key(other_merchant):
    return ApiKeyFactory.with_secret(merchant=other_merchant, livemode=False)


@pytest.fixture
def unapproved_merchant(db):
    return MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED)


@pytest.fixture
def header_client() -> Callable[..., APIClient]:
    """An APIClient sending the pair as x-api-key / x-api-secret headers."""

    def make(api_key, secret_key: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_X_API_KEY=api_key.public_key, HTTP_X_API_SECRET=secret_key)
        return client

    return make


@pytest.fixture
def frozen_clock(monkeypatch) -> SimpleNamespace:
    """The rate limiter's clock, frozen at FROZEN_TIME; tests move it with `clock.now += seconds`. Only the limiter's
    reference to `time` is replaced, so nothing else in the process sees a frozen clock."""
    clock = SimpleNamespace(now=FROZEN_TIME)
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: clock.now))
    return clock


@pytest.fixture
def notes_api(settings):
    """Routes the project's URLs plus the test-only idempotent POST /test/notes (tests/integrations/urls.py)."""
    settings.ROOT_URLCONF = "tests.integrations.urls"
    return "/test/notes"


@pytest.fixture
def every_log(caplog) -> pytest.LogCaptureFixture:
    """caplog at DEBUG on the root logger and on every logger that exists, so nothing is filtered out by a level."""
    caplog.set_level(logging.DEBUG)
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            caplog.set_level(logging.DEBUG, logger=name)
    return caplog


@pytest.fixture
def services_clock(monkeypatch) -> SimpleNamespace:
    """The clock integrations.services reads (and only it), frozen; tests move it with `clock.now += timedelta`."""
    clock = SimpleNamespace(now=datetime(2027, 1, 15, 8, 0, 0, 123456, tzinfo=UTC))
    monkeypatch.setattr(services, "timezone", SimpleNamespace(now=lambda: clock.now))
    return clock


@pytest.fixture
def limit(settings) -> int:
    """A per-key-pair limit of 5 requests a second, and the default 20 failed authentications a minute per IP."""
    settings.API_RATE_LIMIT = 5
    settings.API_AUTH_FAILURES_PER_MINUTE = 20
    return 5


@pytest.fixture
def dashboard(client, merchant):
    """The Django test client, logged in as `merchant`'s owner."""
    client.force_login(merchant.owner)
    return client
