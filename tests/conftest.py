"""Shared fixtures. Tests that need PostgreSQL or Redis are marked; where those are not configured they skip with a
reason, and with REQUIRE_SERVICES=1 (CI) every skip becomes a failure."""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Callable
from unittest import mock

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection, connections
from django.test import Client
from rest_framework.test import APIClient

from core import cache as shared_cache
from core import readcache
from integrations import authcache
from tests.factories import ApiKeyFactory, MerchantFactory, totp_enrol

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES", "").lower() in ("1", "true", "yes")


def pytest_collection_modifyitems(config, items) -> None:
    on_postgres = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
    on_redis = settings.CACHES["default"]["BACKEND"].endswith("RedisCache") and settings.CELERY_BROKER_URL.startswith(
        "redis://")
    for item in items:
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://..."))
        if "redis" in item.keywords and not on_redis:
            item.add_marker(pytest.mark.skip(reason="needs Redis: set CACHE_URL and CELERY_BROKER_URL to redis://..."))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_SERVICES and report.skipped and not hasattr(report, "wasxfail"):  # an xfail is no skip
        report.outcome = "failed"
        report.longrepr = f"skipped, and REQUIRE_SERVICES forbids skips: {report.longrepr}"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2's deliberate slowness costs ~0.3 s a user; tests create hundreds.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def client():
    """Django's test client with an English browser: the dashboard tests read its English texts (the dashboard follows
    the browser; tests/config/test_language.py covers the pt-BR default). The payer's pages ignore the header: their
    tests read Portuguese."""
    return Client(HTTP_ACCEPT_LANGUAGE="en")


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    shared_cache.flags_clear()
    authcache.clear()
    readcache.clear()
    yield
    cache.clear()
    authcache.clear()
    readcache.clear()


@pytest.fixture
def merchant(db):
    return MerchantFactory()


@pytest.fixture
def admin_user(db, django_user_model):
    """pytest-django's admin_user (behind admin_client), with the second factor the admin requires of staff."""
    user = django_user_model.objects.create_superuser(email="admin@example.com", password="password")
    totp_enrol(user)
    return user


@pytest.fixture
def test_key(merchant):
    """(ApiKey, secret) of a test-mode pair of `merchant`."""
    return ApiKeyFactory.with_secret(merchant=merchant, livemode=False)


def basic_auth(public_key: str, secret_key: str) -> str:
    return "Basic " + base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()


@pytest.fixture
def api_client_for() -> Callable[..., APIClient]:
    """An APIClient authenticated with the given key pair (HTTP Basic)."""

    def make(api_key, secret_key: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret_key))
        return client

    return make


@pytest.fixture
def api(api_client_for, test_key) -> APIClient:
    return api_client_for(*test_key)


def run_in_threads(count: int, work: Callable[[int], object]) -> list:
    """Run `work(i)` in `count` threads released together; each thread closes its own database connection.

    The threads' requests share this process's one Redis connection (`core.cache.send`), which a thread waits for
    at most a second: the bound is for a Redis that hangs, under a sync worker's single thread. Twenty request threads
    in one process on a loaded 2-core machine queued longer than that and got a 503 (twice, under valgrind), which
    is not what these tests are about: here the wait is a minute."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except Exception as exc:  # surfaced to the test as a value
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    with mock.patch.object(shared_cache, "LOCK_WAIT_SECONDS", 60.0):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    return results


PUBLIC_IP = "93.184.216.34"


@pytest.fixture
def public_webhook_targets(settings, monkeypatch) -> None:
    """Production's webhook URL rules (HTTPS, no private targets), with every host resolving to a public address
    without touching the network."""
    settings.WEBHOOKS_ALLOW_HTTP = False
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    monkeypatch.setattr("webhooks.ssrf.resolve", lambda host, port: [PUBLIC_IP])


@pytest.fixture
def on_postgres() -> bool:
    return connection.vendor == "postgresql"


@pytest.fixture(autouse=True)
def _ledger_balanced_after_each_test(request):
    """Every test that touched the database ends with a ledger that passes `ledger_check`: checked inside the test's
    own transaction, before it is rolled back, so the whole suite is one long proof that no code path creates or
    loses money. Tests that corrupt the ledger on purpose are marked `ledger_unchecked`."""
    marker = request.node.get_closest_marker("django_db")
    names = request.fixturenames
    if request.node.get_closest_marker("ledger_unchecked") or not (
            marker or "db" in names or "transactional_db" in names):
        yield
        return
    transactional = "transactional_db" in names or bool(marker and marker.kwargs.get("transaction"))
    request.getfixturevalue("transactional_db" if transactional else "db")
    yield
    from payments.management.commands.ledger_check import Command

    problems, _ = Command().inspect()
    assert problems == [], "the ledger is out of balance after this test"
