"""Live mode on the Efí rail, against the fake Efí of `efi_fake` over mutual TLS: the settings an operator sets,
pointed at the fake, and the fake's notifications delivered to our public route through Django's test client."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.test import Client

from tests.factories import ApiKeyFactory
from tests.payments.rails.efi_fake import Certificates, FakeEfi

WEBHOOK_SECRET = "w3bh00k-s3cret-0f-the-test"
PIX_KEY = "platform-key@example.com"


def efi_settings(settings, fake: FakeEfi, *, timeout: float = 3.0) -> None:
    settings.PAYMENTS_RAIL = "efi"
    settings.EFI_BASE_URL = fake.url
    settings.EFI_CLIENT_ID, settings.EFI_CLIENT_SECRET = fake.client_id, fake.client_secret
    settings.EFI_CERT_FILE = str(fake.certificates.client_file)
    settings.EFI_CA_FILE = str(fake.certificates.ca_file)
    settings.EFI_TIMEOUT_SECONDS = timeout
    settings.EFI_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.PIX_KEY = fake.pix_key
    settings.EFI_PAYEE_CODE = "0123456789abcdef0123456789abcdef"
    settings.API_RATE_LIMIT = 1_000_000


@pytest.fixture(scope="session")
def certificates(tmp_path_factory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("efi-certificates"))


@pytest.fixture
def efi(settings, certificates) -> Iterator[FakeEfi]:
    """The fake Efí, running, with our notification URL registered as `rail_setup` would (on the test server)."""
    fake = FakeEfi(certificates, pix_key=PIX_KEY).start()
    efi_settings(settings, fake)
    fake.set_webhook(f"http://testserver/rails/efi/webhook/{WEBHOOK_SECRET}?ignorar=")
    notifier = Client()

    def deliver(url: str, body) -> int:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return notifier.post(path, data=json.dumps(body), content_type="application/json").status_code

    fake.notification_transport = deliver
    try:
        yield fake
    finally:
        fake.stop()
        assert fake.errors == [], fake.errors  # the fake itself never broke


@pytest.fixture
def live(api_client_for, merchant):
    """A live key pair of the merchant."""
    return api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))


def dashboard_live(client, user) -> None:
    """`client` signed in to the dashboard as `user`, looking at live mode."""
    client.force_login(user)
    session = client.session
    session["livemode"] = True
    session.save()


PAYEE_CODE = "0123456789abcdef0123456789abcdef"
NO_PIX_API = "https://127.0.0.1:9"  # the discard port: refused at once, never a real bank


def efi_charges_settings(settings, fake, *, timeout: float = 3.0) -> None:
    """The Charges API's settings pointed at `fake` (a FakeEfiCharges); the Pix API's are left as they are."""
    settings.PAYMENTS_RAIL = "efi"
    settings.EFI_BASE_URL = NO_PIX_API  # the Pix API is not under test here: reconciliation's Pix calls fail at once
    settings.EFI_CHARGES_BASE_URL = fake.url
    settings.EFI_CLIENT_ID, settings.EFI_CLIENT_SECRET = fake.client_id, fake.client_secret
    settings.EFI_CA_FILE = str(fake.certificates.ca_file)
    settings.EFI_TIMEOUT_SECONDS = timeout
    settings.EFI_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.EFI_PAYEE_CODE = PAYEE_CODE
    settings.API_RATE_LIMIT = 1_000_000


@pytest.fixture
def charges(settings, certificates):
    """The fake Charges API, running, its form-POST notifications delivered to our route through Django's test
    client (the notification URL is built from PUBLIC_BASE_URL, as in production)."""
    from tests.payments.rails.efi_charges_fake import FakeEfiCharges

    fake = FakeEfiCharges(certificates).start()
    efi_charges_settings(settings, fake)
    settings.PUBLIC_BASE_URL = "http://testserver"
    notifier = Client()

    held: list[tuple[str, str]] = []

    def deliver(url: str, token: str) -> int:
        # Efí notifies after it answers: a notification made while the fake serves one of our calls (its server
        # thread, where the test's database transaction is not visible) waits for `deliver_held`.
        if threading.current_thread() is not threading.main_thread():
            held.append((url, token))
            return 0
        return notifier.post(urlsplit(url).path, data={"notification": token}).status_code

    def deliver_held() -> list[int]:
        sent, held[:] = list(held), []
        return [deliver(url, token) for url, token in sent]

    fake.notification_transport = deliver
    fake.deliver_held = deliver_held
    try:
        yield fake
    finally:
        fake.stop()
        assert fake.errors == [], fake.errors
