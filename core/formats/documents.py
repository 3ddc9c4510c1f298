"""Brazilian tax documents: CPF (11 digits) and CNPJ (14 characters; alphanumeric since July 2026).

Both carry two check digits computed mod 11. For the alphanumeric CNPJ each character counts as its ASCII code
minus 48 (so '0'..'9' are 0..9 and 'A'..'Z' are 17..42); the check digits themselves are always numeric.
"""

import operator
import re
import string

# Drops the punctuation and upper-cases ASCII letters only: str.upper() would turn "ß" into "SS" (and "ı", "ſ" into
# "I", "S"), making a valid-looking document out of characters no document has.
_STRIP = str.maketrans(string.ascii_lowercase, string.ascii_uppercase, ".-/ ")
_CPF = re.compile(r"[0-9]{11}")
_CNPJ = re.compile(r"[0-9A-Z]{12}[0-9]{2}")
_ALPHANUMERIC = re.compile(r"[0-9A-Z]*")


def normalize(value: str) -> str:
    """Drop the punctuation people type (`123.456.789-09`, `12.ABC.345/01DE-35`) and upper-case letters."""
    return value.translate(_STRIP)


_CPF_WEIGHTS = (tuple(range(10, 1, -1)), tuple(range(11, 1, -1)))
_CNPJ_WEIGHTS = ((5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2), (6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2))


def cpf_check_digits(base: str) -> str:
    return _check_digits(base, _CPF_WEIGHTS)


def cnpj_check_digits(base: str) -> str:
    return _check_digits(base, _CNPJ_WEIGHTS)


def _check_digits(base: str, weights: tuple[tuple[int, ...], tuple[int, ...]]) -> str:
    """The two mod-11 check digits of `base` (ASCII), each character counting as its code minus 48: the weighted sum
    of the codes less 48 times the sum of the weights, so the values are never made one by one (a third of a CPF's
    check, 34,000 instructions before). The second digit weighs the first too."""
    first_weights, second_weights = weights
    if not base.isascii() or len(base) != len(first_weights):
        raise ValueError(f"{len(base)} characters where the check digits weigh {len(first_weights)}")
    codes = base.encode("ascii")
    first = _mod11(sum(map(operator.mul, codes, first_weights)) - 48 * sum(first_weights))
    # map stops with the codes: the last weight is the first check digit's.
    second = _mod11(sum(map(operator.mul, codes, second_weights)) - 48 * (sum(second_weights) - second_weights[-1])
                    + first * second_weights[-1])
    return f"{first}{second}"


def _mod11(total: int) -> int:
    remainder = total % 11
    return 0 if remainder < 2 else 11 - remainder


def is_valid_cpf(value: str) -> bool:
    if not _CPF.fullmatch(value) or len(set(value)) == 1:
        return False
    return cpf_check_digits(value[:9]) == value[9:]


def is_valid_cnpj(value: str) -> bool:
    if not _CNPJ.fullmatch(value) or len(set(value)) == 1:
        return False
    return cnpj_check_digits(value[:12]) == value[12:]


# Why a value is not a valid document, for a message that names exactly that (and never repeats the value):
CHARACTERS = "characters"  # a character no such document has (a CPF: digits only; a CNPJ: digits and A-Z)
LENGTH = "length"  # not 11 (CPF) or 14 (CNPJ) characters
CHECK_DIGIT_CHARACTERS = "check_digit_characters"  # a CNPJ whose last two characters are not digits
REPEATED = "repeated"  # one character repeated: its check digits would add up, but no such document exists
CHECK_DIGITS = "check_digits"  # the check digits do not match the rest


def cpf_fault(value: str) -> str | None:
    """What is wrong with `value` (normalized) as a CPF, one of the faults above; None for a valid CPF (exactly when
    is_valid_cpf says so)."""
    if not (value.isascii() and value.isdigit()):
        return CHARACTERS
    if len(value) != 11:
        return LENGTH
    if len(set(value)) == 1:
        return REPEATED
    return None if cpf_check_digits(value[:9]) == value[9:] else CHECK_DIGITS


def cnpj_fault(value: str) -> str | None:
    """What is wrong with `value` (normalized) as a CNPJ; None for a valid CNPJ (exactly when is_valid_cnpj says so)."""
    if not _ALPHANUMERIC.fullmatch(value):
        return CHARACTERS
    if len(value) != 14:
        return LENGTH
    if not value[12:].isdigit():
        return CHECK_DIGIT_CHARACTERS
    if len(set(value)) == 1:
        return REPEATED
    return None if cnpj_check_digits(value[:12]) == value[12:] else CHECK_DIGITS


def document_fault(value: str) -> tuple[str | None, str] | None:
    """What is wrong with `value` (normalized) as a CPF or a CNPJ: (the document its length makes it, or None when
    it is neither length or has a character neither has, the fault); None for a valid document."""
    if not _ALPHANUMERIC.fullmatch(value):
        return None, CHARACTERS
    if len(value) == 11:
        fault = cpf_fault(value)
        return None if fault is None else ("CPF", fault)
    if len(value) == 14:
        fault = cnpj_fault(value)
        return None if fault is None else ("CNPJ", fault)
    return None, LENGTH


def document_type(value: str) -> str | None:
    """'CPF' or 'CNPJ' for a valid normalized document, None for anything else."""
    if is_valid_cpf(value):
        return "CPF"
    if is_valid_cnpj(value):
        return "CNPJ"
    return None
