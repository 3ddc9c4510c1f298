"""Secrets the service must read back (a webhook signing secret, a TOTP seed) cannot be digests: they are stored
encrypted, AES-GCM under a key derived for their purpose from a setting (or from SECRET_KEY when it is unset), with
the purpose bound as associated data, so one kind of sealed value never opens as another."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from functools import lru_cache

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings


@lru_cache(maxsize=8)
def _cipher(material: str, purpose: bytes) -> AESGCM:
    return AESGCM(hmac.new(material.encode(), purpose, hashlib.sha256).digest())


def _key_material(key_setting: str) -> str:
    return getattr(settings, key_setting, "") or settings.SECRET_KEY


def seal(value: str, *, key_setting: str, purpose: bytes, aad: bytes) -> str:
    """`value` encrypted: base64 of a fresh 12-byte nonce and the AES-GCM ciphertext."""
    nonce = os.urandom(12)
    cipher = _cipher(_key_material(key_setting), purpose)
    return base64.b64encode(nonce + cipher.encrypt(nonce, value.encode(), aad)).decode()


def unseal(stored: str, *, key_setting: str, purpose: bytes, aad: bytes) -> str:
    raw = base64.b64decode(stored)
    return _cipher(_key_material(key_setting), purpose).decrypt(raw[:12], raw[12:], aad).decode()
