"""Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`.

The signing secret must be shown to the merchant again (reveal), so unlike API secrets it cannot be a digest: it is
stored encrypted (AES-GCM) under a key derived from SECRET_KEY, or WEBHOOK_SECRET_ENCRYPTION_KEY when set.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from core import crypto

PREFIX = "whsec_"


def secret_generate() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


_SEALED = {"key_setting": "WEBHOOK_SECRET_ENCRYPTION_KEY", "purpose": b"webhook-signing-secret", "aad": b"whsec"}


def secret_encrypt(secret: str) -> str:
    return crypto.seal(secret, **_SEALED)


def secret_decrypt(stored: str) -> str:
    return crypto.unseal(stored, **_SEALED)


def signature(secret: str, *, message_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def headers(secrets_: list[str], *, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The signing headers; during a rotation's grace period one signature per secret, space-separated."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(s, message_id=message_id, timestamp=timestamp, body=body)
                                      for s in secrets_),
    }
