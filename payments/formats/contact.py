"""Addresses and phones as Brazilian forms write them."""

import re

UF_CODES = (
    "AC", "AL", "AP", "AM", "BA", "CE", "DF", "ES", "GO", "MA", "MT", "MS", "MG", "PA",
    "PB", "PR", "PE", "PI", "RJ", "RN", "RS", "RO", "RR", "SC", "SP", "SE", "TO",
)
_ZIP = re.compile(r"[0-9]{8}")
_PHONE_STRIP = str.maketrans("", "", "+()- ")
_PHONE = re.compile(r"[0-9]{10,13}")
_PHONE_CHARACTERS = re.compile(r"[0-9+()\- ]*")
_ZIP_CHARACTERS = re.compile(r"\s*[0-9.\-]*\s*")


def normalize_zip_code(value: str) -> str | None:
    """'01310-100' → '01310100'; None when it is not 8 digits."""
    digits = value.replace("-", "").replace(".", "").strip()
    return digits if _ZIP.fullmatch(digits) else None


def normalize_phone(value: str) -> str | None:
    """'+55 (11) 98765-4321' → '5511987654321'; None unless 10 to 13 digits remain."""
    digits = value.translate(_PHONE_STRIP)
    return digits if _PHONE.fullmatch(digits) else None


def zip_code_characters_valid(value: str) -> bool:
    """Whether `value` has only what a CEP is written with (digits, '-', '.'), whatever their number."""
    return _ZIP_CHARACTERS.fullmatch(value) is not None


def phone_characters_valid(value: str) -> bool:
    """Whether `value` has only what a phone number is written with (digits, spaces, + ( ) -), whatever their number."""
    return _PHONE_CHARACTERS.fullmatch(value) is not None
