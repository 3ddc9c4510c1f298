"""Browser fixtures: Debian's chromium driven by Playwright (never a downloaded browser), against pytest-django's live
server, which runs in this process (so the `settings` fixture and monkeypatches reach it).

Nothing here talks to a Celery broker: the enqueue functions are replaced by recorders, and a test runs a webhook
delivery itself with `webhooks.delivery.delivery_attempt`, as the worker would.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import REQUIRE_SERVICES
from tests.e2e.helpers import DESKTOP, Receiver, receiver_start

CHROMIUM = "/usr/bin/chromium"


def _unavailable(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"browser tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="package")
def browser() -> Iterator:
    """One headless chromium for the whole tests/e2e package, closed when the package is done."""
    if not os.path.exists(CHROMIUM):
        _unavailable(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed: pip install -e '.[dev]'")
    with pytest.MonkeyPatch.context() as patch:
        # Playwright's sync API runs its event loop on this thread, so Django's guard believes the test is async
        # code and refuses the ORM. The tests are plain synchronous code; the guard is lifted only while this
        # package runs (the browser, and with it the loop, is gone before the rest of the suite).
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                  args=["--disable-gpu", "--no-sandbox", "--hide-scrollbars"])
            yield chromium
            chromium.close()


@pytest.fixture
def enqueued(monkeypatch) -> dict[str, list[str]]:
    """What would have gone to the broker, by kind; the tests run what they need themselves."""
    from payments.payouts import services as payouts
    from webhooks import services, tasks

    calls: dict[str, list[str]] = {"deliveries": [], "payouts": [], "retries": []}
    monkeypatch.setattr(services, "_enqueue", lambda ids: calls["deliveries"].extend(ids))
    monkeypatch.setattr(payouts, "dispatch_soon", lambda: calls["payouts"].append("dispatch"))

    class _Retry:
        @staticmethod
        def apply_async(kwargs, countdown=None, **options) -> None:
            calls["retries"].append(kwargs["delivery_id"])

    monkeypatch.setattr(tasks, "delivery_attempt", _Retry)
    return calls


@pytest.fixture
def server(live_server, transactional_db, settings, enqueued, tmp_path):
    """The live server, configured for a local run: webhooks may go to http://127.0.0.1, links point at it, and
    KYC uploads land in a temporary folder."""
    settings.PUBLIC_BASE_URL = live_server.url
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return live_server


@pytest.fixture
def new_page(browser, server) -> Iterator[Callable]:
    """Open a page in a fresh browser context (its own cookies: one per user), 1280×900, with the live server as
    its base URL. Chromium's language is English (en-US) unless `locale` says otherwise."""
    contexts = []

    def open_page(*, locale: str = "en-US"):
        context = browser.new_context(viewport=DESKTOP, base_url=server.url, device_scale_factor=1,
                                      timezone_id="America/Sao_Paulo", locale=locale)
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page):
    return new_page()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = receiver_start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()
