"""Addresses and phones as Brazilian forms write them."""

import re

UF_CODES = (
    "AC", "AL", "AP", "AM", "BA", "CE", "DF", "ES", "GO", "MA", "MT", "MS", "MG", "PA",
    "PB", "PR", "PE", "PI", "RJ", "RN", "RS", "RO", "RR", "SC", "SP", "SE", "TO",
)
_ZIP = re.compile(r"[0-9]{8}")
_PHONE_STRIP = str.maketrans("", "", "+()- ")
_PHONE = re.compile(r"[0-9]{10,13}")


def normalize_zip_code(value: str) -> str | None:
    """'01310-100' → '01310100'; None when it is not 8 digits."""
    digits = value.replace("-", "").replace(".", "").strip()
    return digits if _ZIP.fullmatch(digits) else None


def normalize_phone(value: str) -> str | None:
    """'+55 (11) 98765-4321' → '5511987654321'; None unless 10 to 13 digits remain."""
    digits = value.translate(_PHONE_STRIP)
    return digits if _PHONE.fullmatch(digits) else None
