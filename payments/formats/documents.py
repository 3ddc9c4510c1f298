"""Brazilian tax documents: CPF (11 digits) and CNPJ (14 characters; alphanumeric since July 2026).

Both carry two check digits computed mod 11. For the alphanumeric CNPJ each character counts as its ASCII code
minus 48 (so '0'..'9' are 0..9 and 'A'..'Z' are 17..42); the check digits themselves are always numeric.
"""

import re
import string

# Drops the punctuation and upper-cases ASCII letters only: str.upper() would turn "ß" into "SS" (and "ı", "ſ" into
# "I", "S"), making a valid-looking document out of characters no document has.
_STRIP = str.maketrans(string.ascii_lowercase, string.ascii_uppercase, ".-/ ")
_CPF = re.compile(r"[0-9]{11}")
_CNPJ = re.compile(r"[0-9A-Z]{12}[0-9]{2}")


def normalize(value: str) -> str:
    """Drop the punctuation people type (`123.456.789-09`, `12.ABC.345/01DE-35`) and upper-case letters."""
    return value.translate(_STRIP)


def cpf_check_digits(base: str) -> str:
    values = [int(c) for c in base]
    first = _mod11(values, list(range(10, 1, -1)))
    second = _mod11([*values, first], list(range(11, 1, -1)))
    return f"{first}{second}"


def cnpj_check_digits(base: str) -> str:
    values = [ord(c) - 48 for c in base]
    first = _mod11(values, [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2])
    second = _mod11([*values, first], [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2])
    return f"{first}{second}"


def _mod11(values: list[int], weights: list[int]) -> int:
    remainder = sum(v * w for v, w in zip(values, weights, strict=True)) % 11
    return 0 if remainder < 2 else 11 - remainder


def is_valid_cpf(value: str) -> bool:
    if not _CPF.fullmatch(value) or len(set(value)) == 1:
        return False
    return cpf_check_digits(value[:9]) == value[9:]


def is_valid_cnpj(value: str) -> bool:
    if not _CNPJ.fullmatch(value) or len(set(value)) == 1:
        return False
    return cnpj_check_digits(value[:12]) == value[12:]


def document_type(value: str) -> str | None:
    """'CPF' or 'CNPJ' for a valid normalized document, None for anything else."""
    if is_valid_cpf(value):
        return "CPF"
    if is_valid_cnpj(value):
        return "CNPJ"
    return None
