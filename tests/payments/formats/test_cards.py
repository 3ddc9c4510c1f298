import hashlib
import hmac
from datetime import date

import pytest

from payments.formats import cards

# SPEC §3.7, copied by hand rather than read from the module, so a typo on either side fails a test.
SPEC_TEST_CARDS = {
    "4111111111111111": "PAID",
    "5555555555554444": "PAID",
    "378282246310005": "PAID",
    "6362970000457013": "PAID",
    "6062825624254001": "PAID",
    "4000000000000002": "card_declined",
    "4000000000009995": "insufficient_funds",
    "4000000000000069": "expired_card",
    "4000000000000127": "incorrect_cvc",
    "4000000000000119": "processing_error",
}

ELO_BINS = [
    "401178", "401179", "431274", "438935", "451416", "457393", "457631", "457632", "504175", "506699", "506778",
    "509000", "509999", "627780", "636297", "636368", "650031", "650033", "650035", "650051", "650405", "650439",
    "650485", "650538", "650541", "650598", "650700", "650718", "650720", "650727", "650901", "650978", "651652",
    "651679", "655000", "655019", "655021", "655058",
]
HIPERCARD_BINS = ["606282", "384100", "384140", "384160", "637095", "637568", "637599", "637609", "637612"]


def with_luhn(prefix: str, length: int = 16) -> str:
    """Pad `prefix` with zeros and append the digit that makes it Luhn-valid (computed here, not by the module)."""
    body = prefix.ljust(length - 1, "0")
    doubled = [int(c) * 2 if i % 2 == 0 else int(c) for i, c in enumerate(reversed(body))]
    total = sum(d - 9 if d > 9 else d for d in doubled)
    return body + str((10 - total % 10) % 10)


def test_test_cards_are_the_spec_table():
    assert dict(cards.TEST_CARDS) == SPEC_TEST_CARDS


def test_test_cards_cannot_be_changed_at_runtime():
    with pytest.raises(TypeError):
        cards.TEST_CARDS["4242424242424242"] = "PAID"  # type: ignore[index]


@pytest.mark.parametrize("number", SPEC_TEST_CARDS)
def test_every_test_card_is_a_valid_number(number):
    assert cards.luhn_valid(number)
    assert cards.number_valid(number)


@pytest.mark.parametrize(("number", "expected"), [
    ("6362970000457013", "elo"),
    ("6062825624254001", "hipercard"),
    ("378282246310005", "amex"),
    ("5555555555554444", "mastercard"),
    ("4111111111111111", "visa"),
    ("4000000000000002", "visa"),
    ("4000000000009995", "visa"),
    ("4000000000000069", "visa"),
    ("4000000000000127", "visa"),
    ("4000000000000119", "visa"),
])
def test_test_card_brands(number, expected):
    assert cards.brand(number) == expected


@pytest.mark.parametrize("bin_", ELO_BINS)
def test_elo_wins_over_visa_mastercard_and_discover(bin_):
    number = with_luhn(bin_)

    assert cards.brand(number) == "elo"
    assert cards.number_valid(number)


@pytest.mark.parametrize("bin_", HIPERCARD_BINS)
def test_hipercard_wins_over_diners(bin_):
    number = with_luhn(bin_)

    assert cards.brand(number) == "hipercard"
    assert cards.number_valid(number)


@pytest.mark.parametrize(("bin_", "expected"), [
    ("401177", "visa"), ("401180", "visa"), ("457630", "visa"), ("457633", "visa"),  # just outside Elo in Visa
    ("506698", None), ("506779", None),  # 50 is nobody's outside Elo
    ("650030", "discover"), ("650034", "discover"), ("655020", "discover"), ("651680", "discover"),
    ("384101", "diners"), ("606281", None), ("637096", None),  # just outside Hipercard
])
def test_just_outside_elo_and_hipercard(bin_, expected):
    assert cards.brand(with_luhn(bin_)) == expected


@pytest.mark.parametrize(("prefix", "expected"), [
    ("34", "amex"), ("37", "amex"), ("33", None),
    ("300", "diners"), ("305", "diners"), ("306", None), ("36", "diners"), ("38", "diners"),
    ("6011", "discover"), ("6012", None), ("643", None), ("644", "discover"), ("649", "discover"), ("65", "discover"),
    ("3527", None), ("3528", "jcb"), ("3589", "jcb"), ("3590", None),
    ("50", None), ("51", "mastercard"), ("55", "mastercard"), ("56", None),
    ("2220", None), ("2221", "mastercard"), ("2720", "mastercard"), ("2721", None),
    ("4", "visa"), ("1", None), ("9", None),
])
def test_brand_ranges(prefix, expected):
    assert cards.brand(with_luhn(prefix)) == expected


@pytest.mark.parametrize(("number", "expected"), [
    ("371449635398431", "amex"),
    ("30569309025904", "diners"),
    ("38520000023237", "diners"),
    ("6011111111111117", "discover"),
    ("3530111333300000", "jcb"),
    ("2223003122003222", "mastercard"),
    ("4012888888881881", "visa"),
])
def test_widely_published_test_numbers(number, expected):
    assert cards.number_valid(number)
    assert cards.brand(number) == expected


@pytest.mark.parametrize("number", [
    "4111111111111112", "5555555555554443", "378282246310006", "6362970000457014", "6062825624254000",
    "4102888888881881",  # 4012888888881881 with two adjacent digits swapped
])
def test_luhn_failures(number):
    assert not cards.luhn_valid(number)
    assert not cards.number_valid(number)


@pytest.mark.parametrize("number", [
    "", "4111 1111 1111 1111", "4111-1111-1111-1111", "411111111111111a",
    "４１１１１１１１１１１１１１１１",  # full-width digits: str.isdigit says yes, the rail would not
])
def test_non_digits_are_refused(number):
    assert not cards.luhn_valid(number)
    assert cards.brand(number) is None
    assert not cards.number_valid(number)


@pytest.mark.parametrize(("length", "valid"), [(12, False), (13, True), (16, True), (19, True), (20, False)])
def test_number_lengths(length, valid):
    number = with_luhn("4", length)

    assert cards.luhn_valid(number)
    assert cards.number_valid(number) is valid


def test_unknown_brand_is_refused_even_when_luhn_valid():
    number = with_luhn("9")

    assert cards.luhn_valid(number)
    assert not cards.number_valid(number)


@pytest.mark.parametrize(("cvv", "brand", "valid"), [
    ("123", "visa", True), ("1234", "visa", False), ("12", "visa", False),
    ("123", "mastercard", True), ("123", "elo", True), ("123", "hipercard", True), ("123", None, True),
    ("1234", "amex", True), ("123", "amex", False), ("12345", "amex", False),
    ("12a", "visa", False), ("", "visa", False), (" 123", "visa", False), ("١٢٣", "visa", False),
])
def test_cvv_length_depends_on_brand(cvv, brand, valid):
    assert cards.cvv_valid(cvv, brand) is valid


TODAY = date(2026, 3, 15)


@pytest.mark.parametrize(("month", "year", "valid"), [
    ("03", "2026", True),  # this month is still good
    ("03", "26", True),
    ("02", "2026", False),  # last month is not
    ("02", "26", False),
    ("12", "2025", False),
    ("04", "2026", True),
    ("01", "2027", True),
    ("12", "99", True),  # YY is always 20YY
    ("13", "2027", False),
    ("00", "2027", False),
    ("1", "2027", False),
    ("001", "2027", False),
    ("03", "202", False),
    ("03", "20260", False),
    ("03", "2O26", False),
    ("", "", False),
])
def test_expiry(month, year, valid):
    assert cards.expiry_valid(month, year, today=TODAY) is valid


def test_expiry_on_the_last_day_of_the_card_month():
    assert cards.expiry_valid("03", "2026", today=date(2026, 3, 31))
    assert not cards.expiry_valid("03", "2026", today=date(2026, 4, 1))


def test_fingerprint_is_the_keyed_hmac_of_the_pan():
    number = "4111111111111111"

    value = cards.fingerprint(number, key=b"k1")

    assert value == hmac.new(b"k1", number.encode(), hashlib.sha256).hexdigest()
    assert len(value) == 64
    assert value == cards.fingerprint(number, key=b"k1")
    assert value != cards.fingerprint(number, key=b"k2")
    assert value != cards.fingerprint("5555555555554444", key=b"k1")
    assert value != hashlib.sha256(number.encode()).hexdigest()


def test_fingerprint_refuses_an_empty_key_and_a_formatted_number():
    with pytest.raises(ValueError):
        cards.fingerprint("4111111111111111", key=b"")
    with pytest.raises(ValueError):
        cards.fingerprint("4111 1111 1111 1111", key=b"k")


def test_bin6_and_last4():
    assert cards.bin6("6362970000457013") == "636297"
    assert cards.last4("6362970000457013") == "7013"
    assert cards.last4("378282246310005") == "0005"


@pytest.mark.parametrize("number", ["411111111111", "", "4111 1111 1111 1111"])
def test_bin6_and_last4_refuse_what_is_not_a_pan(number):
    with pytest.raises(ValueError):
        cards.bin6(number)
    with pytest.raises(ValueError):
        cards.last4(number)
