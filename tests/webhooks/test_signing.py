"""Our signatures against the Standard Webhooks scheme, written here independently, and the reference package."""

import base64
import hashlib
import hmac
from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from tests.factories import MerchantFactory
from webhooks import services, signing
from webhooks.models import WebhookSecret


def independent_verify(secret: str, headers: dict, body: bytes) -> bool:
    """The receiver's side, from the scheme's text: base64-decode the part after whsec_, HMAC-SHA256 over
    "{id}.{timestamp}.{body}", compare with each space-separated v1 signature."""
    key = base64.b64decode(secret.split("_", 1)[1])
    content = headers["webhook-id"].encode() + b"." + headers["webhook-timestamp"].encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()
    signatures = [s.split(",", 1)[1] for s in headers["webhook-signature"].split(" ") if s.startswith("v1,")]
    return any(hmac.compare_digest(expected, s) for s in signatures)


def test_secret_format():
    secret = signing.secret_generate()

    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret[len("whsec_"):])) == 32
    assert secret != signing.secret_generate()


def test_signature_verifies_independently_and_with_the_reference_package():
    secret = signing.secret_generate()
    body = b'{"id":"evt","type":"payin.paid"}'
    now = int(timezone.now().timestamp())

    headers = signing.headers([secret], message_id="01a1f000-0000-7000-8000-000000000001", timestamp=now, body=body)

    assert set(headers) == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    assert headers["webhook-signature"].startswith("v1,")
    assert independent_verify(secret, headers, body)
    assert Webhook(secret).verify(body, headers) == {"id": "evt", "type": "payin.paid"}


def test_a_tampered_body_or_wrong_secret_does_not_verify():
    secret = signing.secret_generate()
    body = b'{"amount":100}'
    headers = signing.headers([secret], message_id="m1", timestamp=1_700_000_000, body=body)

    assert not independent_verify(secret, headers, b'{"amount":999}')
    assert not independent_verify(signing.secret_generate(), headers, body)


def test_known_vector():
    # Computed by hand from the scheme: key = 32 zero bytes.
    secret = "whsec_" + base64.b64encode(bytes(32)).decode()
    expected = base64.b64encode(hmac.new(bytes(32), b"msg_1.1700000000.{}", hashlib.sha256).digest()).decode()

    assert signing.signature(secret, message_id="msg_1", timestamp=1_700_000_000, body=b"{}") == f"v1,{expected}"


@pytest.mark.django_db
def test_rotation_signs_with_both_secrets_for_24_hours():
    merchant = MerchantFactory()
    old = services.signing_secret_reveal(merchant=merchant, livemode=False)

    new = services.signing_secret_rotate(merchant=merchant, livemode=False)
    active = services.signing_secrets_active(merchant_id=merchant.pk, livemode=False)
    headers = signing.headers(active, message_id="m", timestamp=1, body=b"{}")

    assert active == [new, old]
    assert len(headers["webhook-signature"].split(" ")) == 2
    assert independent_verify(old, headers, b"{}") and independent_verify(new, headers, b"{}")
    WebhookSecret.objects.filter(merchant=merchant).update(rotated_at=timezone.now() - timedelta(hours=24, seconds=1))
    assert services.signing_secrets_active(merchant_id=merchant.pk, livemode=False) == [new]


@pytest.mark.django_db
def test_secrets_are_per_merchant_and_mode_and_stored_encrypted():
    merchant, other = MerchantFactory(), MerchantFactory()

    test_secret = services.signing_secret_reveal(merchant=merchant, livemode=False)
    live_secret = services.signing_secret_reveal(merchant=merchant, livemode=True)
    other_secret = services.signing_secret_reveal(merchant=other, livemode=False)

    assert len({test_secret, live_secret, other_secret}) == 3
    assert services.signing_secret_reveal(merchant=merchant, livemode=False) == test_secret
    stored = " ".join(WebhookSecret.objects.values_list("secret_encrypted", flat=True))
    for secret in (test_secret, live_secret, other_secret):
        assert secret not in stored and secret[6:] not in stored
