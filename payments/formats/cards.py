"""Card numbers, brands, CVVs and expiry dates as the `card` field of POST /payin accepts them (SPEC §3.1, §3.7).

Nothing here logs or keeps a PAN: callers store only `brand`, `bin6`, `last4` and `fingerprint`.
"""

import hashlib
import hmac
import re
from datetime import date
from types import MappingProxyType

_NUMBER = re.compile(r"[0-9]{13,19}")
_DIGITS = re.compile(r"[0-9]+")
_MONTH = re.compile(r"0[1-9]|1[0-2]")
_YEAR = re.compile(r"[0-9]{2}|[0-9]{4}")

# (brand, prefix length, first, last): the first row whose prefix range holds the number's prefix wins. Elo and
# Hipercard come first because many of their BINs sit inside Visa (4), Mastercard (5), Discover (65) and Diners (38)
# ranges; checked later they would be taken for those brands and routed to the wrong acquirer.
_ELO_BINS = (
    (401178, 401179), (431274, 431274), (438935, 438935), (451416, 451416), (457393, 457393), (457631, 457632),
    (504175, 504175), (506699, 506778), (509000, 509999), (627780, 627780), (636297, 636297), (636368, 636368),
    (650031, 650033), (650035, 650051), (650405, 650439), (650485, 650538), (650541, 650598), (650700, 650718),
    (650720, 650727), (650901, 650978), (651652, 651679), (655000, 655019), (655021, 655058),
)
_HIPERCARD_BINS = (606282, 384100, 384140, 384160, 637095, 637568, 637599, 637609, 637612)
_RANGES: tuple[tuple[str, int, int, int], ...] = (
    *(("elo", 6, first, last) for first, last in _ELO_BINS),
    *(("hipercard", 6, bin_, bin_) for bin_ in _HIPERCARD_BINS),
    ("amex", 2, 34, 34),
    ("amex", 2, 37, 37),
    ("diners", 3, 300, 305),
    ("diners", 2, 36, 36),
    ("diners", 2, 38, 38),
    ("discover", 4, 6011, 6011),
    ("discover", 3, 644, 649),
    ("discover", 2, 65, 65),
    ("jcb", 4, 3528, 3589),
    ("mastercard", 2, 51, 55),
    ("mastercard", 4, 2221, 2720),
    ("visa", 1, 4, 4),
)

PAID = "PAID"
# Test mode accepts these numbers and no others (SPEC §3.7); the value is what the simulated rail answers.
TEST_CARDS = MappingProxyType({
    "4111111111111111": PAID,
    "5555555555554444": PAID,
    "378282246310005": PAID,
    "6362970000457013": PAID,  # Elo
    "6062825624254001": PAID,  # Hipercard
    "4000000000000002": "card_declined",
    "4000000000009995": "insufficient_funds",
    "4000000000000069": "expired_card",
    "4000000000000127": "incorrect_cvc",
    "4000000000000119": "processing_error",
})


def luhn_valid(number: str) -> bool:
    """Luhn (mod 10) check: catches every single mistyped digit and most swaps before the rail sees the number."""
    if not _DIGITS.fullmatch(number):
        return False
    total = 0
    for position, char in enumerate(reversed(number)):
        digit = int(char)
        if position % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def brand(number: str) -> str | None:
    """'visa', 'mastercard', 'amex', 'elo', 'hipercard', 'diners', 'discover' or 'jcb' from the leading digits."""
    if not _DIGITS.fullmatch(number):
        return None
    prefixes = [int(number[:length]) for length in range(1, min(len(number), 6) + 1)]  # each read once, not per row
    for name, length, first, last in _RANGES:
        if length <= len(prefixes) and first <= prefixes[length - 1] <= last:
            return name
    return None


def number_valid(number: str) -> bool:
    """SPEC §3.1: 13 to 19 digits, Luhn-valid, and a brand we can route."""
    return bool(_NUMBER.fullmatch(number)) and luhn_valid(number) and brand(number) is not None


def cvv_valid(cvv: str, brand: str | None) -> bool:
    """Four digits for Amex (printed on the front), three for every other brand."""
    length = 4 if brand == "amex" else 3
    return len(cvv) == length and bool(_DIGITS.fullmatch(cvv))


def expiry_valid(month: str, year: str, *, today: date) -> bool:
    """Month '01'..'12' and year 'YYYY' or 'YY' (meaning 20YY); a card is good through the last day of its month."""
    if not _MONTH.fullmatch(month) or not _YEAR.fullmatch(year):
        return False
    full_year = int(year) + 2000 if len(year) == 2 else int(year)
    return (full_year, int(month)) >= (today.year, today.month)


def fingerprint(number: str, *, key: bytes) -> str:
    """HMAC-SHA256 hex of the PAN: the same card gives the same value, without the PAN ever being stored.

    Keyed, never a bare hash: with the BIN and last 4 stored beside it, a 16-digit PAN has six unknown digits, one
    of them fixed by Luhn, and a plain SHA-256 of all 100,000 candidates takes well under a second. The number must
    be bare digits, so '4111 1111…' and '41111111…' cannot give two fingerprints for one card.
    """
    _require_number(number)
    if not key:
        raise ValueError("fingerprint needs a non-empty key")
    return hmac.new(key, number.encode("ascii"), hashlib.sha256).hexdigest()


def bin6(number: str) -> str:
    """The first six digits, stored and shown to identify the issuer."""
    _require_number(number)
    return number[:6]


def last4(number: str) -> str:
    """The last four digits, the only part of the PAN shown back to anyone."""
    _require_number(number)
    return number[-4:]


def _require_number(number: str) -> None:
    # On a string shorter than a real PAN, BIN + last 4 together would give away most or all of it.
    if not _NUMBER.fullmatch(number):
        raise ValueError("card number must be 13 to 19 digits")
