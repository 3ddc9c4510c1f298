"""API key material: generation, the keyed digest of secrets, and the deterministic demo pair."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from core.codes import BASE62, random_code

PUBLIC_KEY_LENGTH = 24
# 43 base62 characters carry 43 × log2(62) ≈ 256.03 bits; 48 leave a margin.
SECRET_KEY_LENGTH = 48


@dataclass(frozen=True)
class KeyPair:
    public_key: str
    secret_key: str


def _prefix(kind: str, livemode: bool) -> str:
    return f"{kind}_{'live' if livemode else 'test'}_"


def generate_pair(*, livemode: bool) -> KeyPair:
    return KeyPair(
        public_key=_prefix("pk", livemode) + random_code(PUBLIC_KEY_LENGTH),
        secret_key=_prefix("sk", livemode) + random_code(SECRET_KEY_LENGTH),
    )


@lru_cache(maxsize=1)
def _digest_key() -> bytes:
    if settings.API_KEY_DIGEST_KEY:
        return settings.API_KEY_DIGEST_KEY.encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"api-key-digest", hashlib.sha256).digest()


def secret_digest(secret_key: str) -> str:
    """Keyed digest of a secret. Secrets are 256-bit random, so one HMAC is as strong as a slow hash and costs
    microseconds on every request; the server-side key makes a stolen table useless on its own."""
    return hmac.new(_digest_key(), secret_key.encode(), hashlib.sha256).hexdigest()


def secret_matches(secret_key: str, digest: str) -> bool:
    return hmac.compare_digest(secret_digest(secret_key), digest)


def derived_base62(label: bytes, length: int) -> str:
    """A string only this installation can produce (an HMAC of SECRET_KEY), the same on every call."""
    number = int.from_bytes(hmac.new(settings.SECRET_KEY.encode(), label, hashlib.sha512).digest(), "big")
    chars = []
    for _ in range(length):
        number, index = divmod(number, 62)
        chars.append(BASE62[index])
    return "".join(chars)


def demo_pair() -> KeyPair:
    """The demo merchant's test pair, derived from this installation's SECRET_KEY: `seed_demo` can print it on
    every run without storing the secret anywhere. Test mode only; never used for a live key."""
    return KeyPair(public_key="pk_test_" + derived_base62(b"demo-public-key", PUBLIC_KEY_LENGTH),
                   secret_key="sk_test_" + derived_base62(b"demo-secret-key", SECRET_KEY_LENGTH))
