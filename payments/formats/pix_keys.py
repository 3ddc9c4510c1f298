"""Pix keys (chaves Pix, SPEC §4.1): whether a key fits its type, and the canonical form the rail is sent.

A key is typed as the DICT stores it, so little is forgiven:

- CPF: exactly 11 digits, check digits valid. Punctuation is refused: `529.982.247-25` is not a key, `52998224725` is
  (the SPEC says "11 digits"; a document field elsewhere strips punctuation, a key does not).
- CNPJ: exactly 14 characters of `[0-9A-Z]` (the alphanumeric CNPJ), check digits valid. No punctuation, and lowercase
  letters are refused: the key is exact.
- EMAIL: at most 77 characters, ASCII, a dot-atom local part and a domain name with a dot (no quoted local parts, no
  IP literals, no `localhost`). Canonical form: the whole address lowercased, as the DICT stores e-mail keys.
- PHONE: `+55`, a two-digit area code, then 8 digits or 9 digits starting with 9 (mobiles). `5511987654321` (without
  the plus) is accepted too; spaces, dashes and parentheses are not. Canonical form: `+5511987654321`. Brazilian area
  codes never contain a 0 and subscriber numbers never start with 0 or 1, so those are refused.
- EVP (the random key): a UUID written 8-4-4-4-12 in hex, 36 characters, either case. Canonical form: lowercase.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

from core.formats.contact import EmailValidator
from core.formats.documents import CHARACTERS, LENGTH, cnpj_fault, cpf_fault, is_valid_cnpj, is_valid_cpf

PIX_KEY_TYPES = ("CPF", "CNPJ", "EMAIL", "PHONE", "EVP")
EMAIL_MAX_LENGTH = 77

# The HTML standard's pattern for an e-mail address (ASCII, lowercase here), with at least one dot in the domain;
# EmailValidator then refuses what it lets through but no mail server takes (leading, trailing or doubled dots).
_EMAIL = re.compile(r"[a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
                    r"(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+")
_PHONE = re.compile(r"\+?55([1-9][1-9])(9[0-9]{8}|[2-9][0-9]{7})")
_EVP = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_validate_email = EmailValidator(allowlist=[])
_PHONE_CHARACTERS = re.compile(r"\+?[0-9]*")
EVP_LENGTH = 36
# The faults of a key, beside those of core.formats.documents (CHARACTERS, LENGTH, ...):
FORMAT = "format"  # the characters and the length are right, their arrangement is not
COUNTRY_CODE = "country_code"  # a phone number that does not start with Brazil's 55


def normalize_pix_key(key_type: str, value: str) -> str | None:
    """The canonical form of `value` as a key of `key_type`, or None if it does not fit (or the type is unknown)."""
    if not isinstance(value, str):
        return None
    if key_type == "CPF":
        return value if is_valid_cpf(value) else None
    if key_type == "CNPJ":
        return value if is_valid_cnpj(value) else None
    if key_type == "EMAIL":
        return _normalize_email(value)
    if key_type == "PHONE":
        match = _PHONE.fullmatch(value)
        return f"+55{match[1]}{match[2]}" if match else None
    if key_type == "EVP":
        return value.lower() if _EVP.fullmatch(value) else None
    return None


def _normalize_email(value: str) -> str | None:
    if len(value) > EMAIL_MAX_LENGTH or not value.isascii():
        return None
    email = value.lower()
    if not _EMAIL.fullmatch(email):
        return None
    try:
        _validate_email(email)
    except ValidationError:
        return None
    return email


def pix_key_fault(key_type: str, value: str) -> str:
    """Why `value`, which normalize_pix_key refused, is not a key of `key_type` (one of PIX_KEY_TYPES): for a CPF or
    a CNPJ, a fault of core.formats.documents; else CHARACTERS, LENGTH, COUNTRY_CODE or FORMAT."""
    if key_type == "CPF":
        return cpf_fault(value) or FORMAT
    if key_type == "CNPJ":
        return cnpj_fault(value) or FORMAT
    if key_type == "EMAIL":
        if len(value) > EMAIL_MAX_LENGTH:
            return LENGTH
        return CHARACTERS if not value.isascii() else FORMAT
    if key_type == "PHONE":
        if not (value.isascii() and _PHONE_CHARACTERS.fullmatch(value)):
            return CHARACTERS
        return COUNTRY_CODE if not value.lstrip("+").startswith("55") else FORMAT
    return LENGTH if len(value) != EVP_LENGTH else FORMAT
