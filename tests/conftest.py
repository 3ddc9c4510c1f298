"""Shared fixtures. Every test runs on PostgreSQL and Redis (`make test` starts embedded ones, CI points at the
machine's); nothing skips: with REQUIRE_SERVICES=1 (CI) a skip is a failure."""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Callable
from urllib.parse import parse_qsl, quote, urlencode

import environ
import pytest
import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django.test import Client
from rest_framework.test import APIClient

from core import readcache
from integrations import authcache
from tests.factories import ApiKeyFactory, MerchantFactory, totp_enrol

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES", "").lower() in ("1", "true", "yes")


def pytest_configure(config) -> None:
    """Under pytest-xdist each worker gets Redis databases of its own (pytest-django already gives each its own test
    database): the tests flush the cache, which must not wipe another worker's counters mid-test. The environment is
    changed too, for the servers and workers the end-to-end tests start."""
    offset = 2 * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    if not offset:
        return
    for name, number_key in (("CACHE_URL", "db"), ("CELERY_BROKER_URL", "virtual_host")):
        url = os.environ.get(name) or (settings.CELERY_BROKER_URL if name == "CELERY_BROKER_URL" else None)
        if url:
            os.environ[name] = _redis_database_moved(url, number_key, offset)
    env = environ.Env()
    settings.CACHES = {"default": {**env.cache("CACHE_URL"), "OPTIONS": {
        **env.cache("CACHE_URL").get("OPTIONS", {}), "socket_timeout": 1, "socket_connect_timeout": 1}}}
    settings.CELERY_BROKER_URL = os.environ["CELERY_BROKER_URL"]
    from config.celery import app

    app.conf.broker_url = settings.CELERY_BROKER_URL


def _redis_database_moved(url: str, number_key: str, offset: int) -> str:
    """The URL with its Redis database number + offset: `?db=`/`?virtual_host=` for a Unix socket, else the `/N`."""
    base, _, query = url.partition("?")
    if base.startswith(("redis+socket://", "unix://", "redis:///")):
        options = dict(parse_qsl(query))
        options[number_key] = str(int(options.get(number_key, 0)) + offset)
        return f"{base}?{urlencode(options)}"
    host, number = re.fullmatch(r"(.*?)(?:/(\d+))?/?", base).groups()
    return f"{host}/{int(number or 0) + offset}" + (f"?{query}" if query else "")


def subprocess_database_url() -> str:
    """The URL of the test database, for the servers and workers a test starts (the host may be a socket folder)."""
    params = connections["default"].get_connection_params()
    credentials = quote(params.get("user") or "", safe="") + (
        ":" + quote(params["password"], safe="") if params.get("password") else "")
    host = params.get("host") or "127.0.0.1"
    if host.startswith("/"):
        return f"postgres://{credentials}@/{params['dbname']}?host={host}"
    return f"postgres://{credentials}@{host}:{params.get('port') or 5432}/{params['dbname']}"


def broker_redis() -> redis.Redis:
    """A plain Redis client on the broker's database (the tests that start workers empty it first): kombu's
    `redis+socket://` URL of the embedded server is redis-py's `unix://`."""
    url = settings.CELERY_BROKER_URL
    if url.startswith("redis+socket://"):
        base, _, query = url.removeprefix("redis+socket://").partition("?")
        url = f"unix://{base}?db={dict(parse_qsl(query)).get('virtual_host', 0)}"
    return redis.Redis.from_url(url)


# Whole folders of slow tests: the soak test, the browser tests, schema fuzzing. Single slow tests elsewhere (those that
# start gunicorn or a Celery worker) carry @pytest.mark.slow themselves.
SLOW_FOLDERS = ("tests/soak/", "tests/e2e/", "tests/fuzz/")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.nodeid.startswith(SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)


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
    the browser; tests/core/test_language.py covers the pt-BR default). The payer's pages' tests use a Portuguese
    browser (tests/payments/hosted/conftest.py)."""
    return Client(HTTP_ACCEPT_LANGUAGE="en")


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()  # FLUSHDB of the cache's Redis database: counters, tokens and flags (core.cache) alike
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
    """Run `work(i)` in `count` threads released together; each thread closes its own database connection."""
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
