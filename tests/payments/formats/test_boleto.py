import random
from datetime import date, timedelta

import pytest

from payments.formats import boleto

# Reference check digits written out independently of the module, so a shared mistake cannot pass unnoticed.


def ref_mod11_general(digits43: str) -> str:
    weights = [2, 3, 4, 5, 6, 7, 8, 9] * 6
    total = sum(int(d) * w for d, w in zip(reversed(digits43), weights, strict=False))
    result = 11 - total % 11
    return "1" if result in (0, 10, 11) else str(result)


def ref_mod10(digits: str) -> str:
    total = 0
    for i, d in enumerate(reversed(digits)):
        product = int(d) * (2 if i % 2 == 0 else 1)
        total += sum(int(c) for c in str(product))
    return str((10 - total % 10) % 10)


def line_of(formatted: str) -> str:
    return formatted.replace(".", "").replace(" ", "")


# --- due-date factor ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("day", "factor"), [
    (date(2025, 2, 21), "9999"),  # SPEC §3.6: the last day of the first cycle
    (date(2025, 2, 22), "1000"),  # ... and the reset
    (date(2026, 3, 10), "1381"),
])
def test_due_factor_spec_vectors(day, factor):
    assert boleto.due_factor(day) == factor


@pytest.mark.parametrize(("day", "factor"), [
    (date(2000, 7, 3), "1000"),  # FEBRABAN's published table for the first cycle
    (date(2000, 7, 5), "1002"),
    (date(2002, 5, 1), "1667"),
    (date(2010, 11, 17), "4789"),
    (date(2011, 2, 5), "4869"),
])
def test_due_factor_first_cycle_is_days_since_1997_10_07(day, factor):
    assert boleto.due_factor(day) == factor
    assert (day - date(1997, 10, 7)).days == int(factor)


@pytest.mark.parametrize(("day", "factor"), [
    (date(2025, 2, 23), "1001"),
    (date(2026, 1, 1), "1313"),
    (date(2030, 6, 15), "2939"),
    (date(2040, 12, 31), "6791"),
    (date(2049, 10, 13), "9999"),  # the last day of the second cycle
    (date(2049, 10, 14), "1000"),  # the second reset
    (date(2049, 10, 15), "1001"),
    (date(2060, 1, 1), "4731"),
])
def test_due_factor_after_the_reset(day, factor):
    assert boleto.due_factor(day) == factor


def test_due_factor_counts_days_from_the_reset_throughout_the_second_cycle():
    reset = date(2025, 2, 22)

    factors = [boleto.due_factor(reset + timedelta(days=n)) for n in range(0, 9000, 7)]

    assert factors == [f"{1000 + n:04d}" for n in range(0, 9000, 7)]


# --- due date from factor -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("factor", "reference", "expected"), [
    ("9999", date(2025, 2, 1), date(2025, 2, 21)),
    ("1000", date(2025, 2, 1), date(2025, 2, 22)),
    ("1381", date(2026, 1, 1), date(2026, 3, 10)),
    ("1000", date(2001, 1, 1), date(2000, 7, 3)),  # a first-cycle boleto read back then
    ("4789", date(2010, 11, 1), date(2010, 11, 17)),
    ("9999", date(2049, 9, 1), date(2049, 10, 13)),
    ("1000", date(2049, 9, 1), date(2049, 10, 14)),
])
def test_due_date_from_factor(factor, reference, expected):
    assert boleto.due_date_from_factor(factor, reference=reference) == expected


def test_due_date_from_factor_picks_the_nearest_cycle():
    # Factor 1381 is 2001-07-19, 2026-03-10 and 2050-10-30 (9000 days apart); the reference decides.
    assert boleto.due_date_from_factor("1381", reference=date(2026, 3, 10)) == date(2026, 3, 10)
    assert boleto.due_date_from_factor("1381", reference=date(2001, 1, 1)) == date(2026, 3, 10) - timedelta(9000)
    assert boleto.due_date_from_factor("1381", reference=date(2050, 1, 1)) == date(2026, 3, 10) + timedelta(9000)


def test_due_date_from_factor_tie_goes_to_the_later_date():
    first = date(2026, 3, 10)

    tie = first + timedelta(days=4500)

    assert boleto.due_date_from_factor("1381", reference=tie) == first + timedelta(days=9000)
    assert boleto.due_date_from_factor("1381", reference=tie - timedelta(days=1)) == first


def test_due_date_round_trips_within_half_a_cycle_of_the_reference():
    rng = random.Random(3)

    for _ in range(2000):
        reference = date(2020, 1, 1) + timedelta(days=rng.randrange(0, 40 * 365))
        day = reference + timedelta(days=rng.randrange(-4499, 4500))

        assert boleto.due_date_from_factor(boleto.due_factor(day), reference=reference) == day


@pytest.mark.parametrize("factor", ["0000", "0999", "999", "10000", "12a4", "", " 123"])
def test_due_date_from_factor_refuses_malformed_factors(factor):
    with pytest.raises(boleto.BoletoFormatError):
        boleto.due_date_from_factor(factor, reference=date(2026, 1, 1))


# --- a hand-checked boleto ------------------------------------------------------------------------------------------

def test_hand_checked_example():
    # Bank 001, due 2026-03-10, R$ 100.00, agreement 1234567, nosso número 12345.
    #
    # Nosso número DV: 00000000000012345, from the right 5·2 + 4·3 + 3·4 + 2·5 + 1·6 = 10+12+12+10+6 = 50;
    #   50 mod 11 = 6; 11 − 6 = 5.                       free field = 1234567 00000000000012345 5
    # Factor: 2026-03-10 − 1997-10-07 = 10381 days; (10381 − 1000) mod 9000 + 1000 = 1381.
    # Barcode without its DV (43 digits): 001 9 1381 0000010000 1234567000000000000123455
    #   from the right, weights 2..9 cycling, the non-zero terms:
    #   5·2 5·3 4·4 3·5 2·6 1·7                        = 10+15+16+15+12+7   =  75  (nosso número + DV)
    #   7·4 6·5 5·6 4·7 3·8 2·9 1·2                    = 28+30+30+28+24+18+2 = 160  (agreement)
    #   1·7 (amount 0000010000)                        =   7
    #   1·5 8·6 3·7 1·8 (factor 1381)                  = 5+48+21+8          =  82
    #   9·9 1·2 (currency 9, bank 001)                 = 81+2               =  83
    #   total 407 = 37·11, remainder 0, 11 − 0 = 11 → DV 1 (the "11 → 1" rule).
    # Field 1 = 00191234 5 → from the right 5·2 4·1 3·2 2·1 1·2 9·1 1·2 0 0 → 1+0 +4 +6 +2 +2 +9 +2 = 26 → DV 4.
    # Field 2 = 6700000000 → 7·2 = 14 → 1+4, 6·1 = 6 → 11 → DV 9.
    # Field 3 = 0000123455 → 5·2=10→1, 5, 4·2=8, 3, 2·2=4, 1 → 22 → DV 8.
    free = boleto.free_field(nosso_numero=12345, agreement="1234567")

    code = boleto.barcode(bank_code="001", due_date=date(2026, 3, 10), amount_cents=10_000, free_field=free)
    line = boleto.digitable_line_from_barcode(code)

    assert free == "1234567000000000000123455"
    assert code == "0019" "1" "1381" "0000010000" "1234567000000000000123455"
    assert boleto.format_digitable_line(line) == "00191.23454 67000.000009 00001.234558 1 13810000010000"
    assert boleto.barcode_from_digitable_line(line) == code
    assert boleto.nosso_numero_from_free_field(code[19:]) == 12345


def test_barcode_layout():
    free = boleto.free_field(nosso_numero=98765432109876543, agreement="7654321")

    code = boleto.barcode(bank_code="237", due_date=date(2025, 2, 22), amount_cents=1_234_567, free_field=free)

    assert len(code) == 44
    assert code[0:3] == "237"
    assert code[3] == "9"
    assert code[4] == ref_mod11_general(code[:4] + code[5:])
    assert code[5:9] == "1000"
    assert code[9:19] == "0001234567"
    assert code[19:] == free


# --- published examples (barcode, line) from other implementations, different banks and free-field layouts ---------

PUBLISHED = [
    ("35698486900000355000531570585390000000000123", "35690.53154 70585.390001 00000.001230 8 48690000035500"),
    ("23794486900008280000278060000212552500392320", "23790.27804 60000.212559 25003.923205 4 48690000828000"),
    ("34199439500000029801090000015710293013280000", "34191.09008 00015.710296 30132.800001 9 43950000002980"),
    ("74891741500000090751118324121904340836699106", "74891.11836 24121.904346 08366.991068 1 74150000009075"),
    ("39993424800000035003903036010001010312014592", "39993.90309 36010.001018 03120.145929 3 42480000003500"),
]


@pytest.mark.parametrize(("code", "formatted"), PUBLISHED)
def test_published_examples_convert_both_ways(code, formatted):
    line = line_of(formatted)

    assert boleto.digitable_line_from_barcode(code) == line
    assert boleto.barcode_from_digitable_line(line) == code
    assert boleto.format_digitable_line(line) == formatted


def test_barcode_builder_matches_a_published_example():
    # Banco Real (356), due 2011-02-05, R$ 355.00.
    code = boleto.barcode(bank_code="356", due_date=date(2011, 2, 5), amount_cents=35_500,
                          free_field="0531570585390000000000123")

    assert code == PUBLISHED[0][0]


# --- round trips and every check digit ------------------------------------------------------------------------------

def random_barcode(rng: random.Random) -> str:
    return boleto.barcode(
        bank_code=f"{rng.randrange(1000):03d}",
        due_date=date(2000, 7, 3) + timedelta(days=rng.randrange(0, 60 * 365)),
        amount_cents=rng.choice([0, 1, 500, boleto.MAX_AMOUNT_CENTS, rng.randrange(boleto.MAX_AMOUNT_CENTS + 1)]),
        free_field="".join(rng.choice("0123456789") for _ in range(25)),
    )


def test_barcode_and_line_round_trip_for_many_inputs():
    rng = random.Random(7)

    for _ in range(3000):
        code = random_barcode(rng)
        line = boleto.digitable_line_from_barcode(code)

        assert len(line) == 47
        assert line.isdigit()
        assert boleto.barcode_from_digitable_line(line) == code
        assert boleto.digitable_line_from_barcode(boleto.barcode_from_digitable_line(line)) == line


def test_every_check_digit_follows_its_rule():
    rng = random.Random(11)

    for _ in range(3000):
        code = random_barcode(rng)
        line = boleto.digitable_line_from_barcode(code)

        assert code[4] == ref_mod11_general(code[:4] + code[5:])
        assert line[9] == ref_mod10(line[0:9])
        assert line[20] == ref_mod10(line[10:20])
        assert line[31] == ref_mod10(line[21:31])
        assert line[32] == code[4]
        assert line[33:] == code[5:19]


@pytest.mark.parametrize("raw", [10, 11])
def test_general_check_digit_of_10_or_11_becomes_1(raw):
    # Search nosso números until 11 − (sum mod 11) lands on the wanted raw value (0 cannot occur: 11 − r ≥ 1).
    for n in range(1, 10_000):
        free = boleto.free_field(nosso_numero=n)
        body = "0019" + boleto.due_factor(date(2026, 3, 10)) + "0000010000" + free
        total = sum(int(d) * (2 + i % 8) for i, d in enumerate(reversed(body)))
        if 11 - total % 11 == raw:
            break
    else:
        pytest.fail("no nosso número gives the wanted raw DV")

    code = boleto.barcode(bank_code="001", due_date=date(2026, 3, 10), amount_cents=10_000, free_field=free)

    assert code[4] == "1"
    assert boleto.barcode_from_digitable_line(boleto.digitable_line_from_barcode(code)) == code


def test_general_check_digit_is_never_0():
    rng = random.Random(5)

    digits = {random_barcode(rng)[4] for _ in range(2000)}

    assert "0" not in digits
    assert digits == set("123456789")


def test_field_check_digit_of_zeros_is_0():
    assert boleto.field_check_digit("0000000000") == "0"


# --- what is refused ------------------------------------------------------------------------------------------------

HAND_LINE = "00191234546700000000900001234558113810000010000"


@pytest.mark.parametrize(("position", "field"), [(9, 1), (20, 2), (31, 3), (32, 4)])
def test_a_wrong_check_digit_in_any_field_is_refused(position, field):
    for wrong in set("0123456789") - {HAND_LINE[position]}:
        line = HAND_LINE[:position] + wrong + HAND_LINE[position + 1:]

        with pytest.raises(boleto.CheckDigitMismatch):
            boleto.barcode_from_digitable_line(line)


@pytest.mark.parametrize("position", [*range(0, 9), *range(10, 20), *range(21, 31)])
def test_any_single_typo_in_fields_1_to_3_is_refused(position):
    for wrong in set("0123456789") - {HAND_LINE[position]}:
        line = HAND_LINE[:position] + wrong + HAND_LINE[position + 1:]

        with pytest.raises(boleto.CheckDigitMismatch):  # mod 10 catches every single-digit change
            boleto.barcode_from_digitable_line(line)


def test_a_typo_in_field_5_is_caught_by_the_general_check_digit():
    line = HAND_LINE[:-5] + "2" + HAND_LINE[-4:]  # R$ 100.00 → R$ 200.00

    with pytest.raises(boleto.CheckDigitMismatch, match="general"):
        boleto.barcode_from_digitable_line(line)


def test_a_wrong_general_check_digit_in_a_barcode_is_refused():
    code = boleto.barcode_from_digitable_line(HAND_LINE)
    wrong = code[:4] + "2" + code[5:]

    with pytest.raises(boleto.CheckDigitMismatch):
        boleto.digitable_line_from_barcode(wrong)


@pytest.mark.parametrize("line", [
    HAND_LINE[:-1],
    HAND_LINE + "0",
    "",
    "00191.23454 67000.000009 00001.234558 1 13810000010000",  # the display form is not the line
    HAND_LINE[:-1] + "a",
    "٠" + HAND_LINE[1:],  # an Arabic-Indic zero is a digit to str.isdigit, not to us
])
def test_malformed_lines_are_refused(line):
    with pytest.raises(boleto.BoletoFormatError):
        boleto.barcode_from_digitable_line(line)
    with pytest.raises(boleto.BoletoFormatError):
        boleto.format_digitable_line(line)


@pytest.mark.parametrize("code", [
    "0019138100000100001234567000000000000123455",
    "001911381000001000012345670000000000001234550",
    "0019113810000010000123456700000000000012345a",
])
def test_malformed_barcodes_are_refused(code):
    with pytest.raises(boleto.BoletoFormatError):
        boleto.digitable_line_from_barcode(code)


def test_a_currency_other_than_real_is_refused():
    body = "0010" + "1381" + "0000010000" + "1234567000000000000123455"
    code = body[:4] + ref_mod11_general(body) + body[4:]

    with pytest.raises(boleto.BoletoFormatError, match="currency"):
        boleto.digitable_line_from_barcode(code)


def test_errors_are_value_errors():
    assert issubclass(boleto.CheckDigitMismatch, boleto.BoletoFormatError)
    assert issubclass(boleto.BoletoFormatError, ValueError)


@pytest.mark.parametrize("amount", [0, 1, 9_999_999_999])
def test_amounts_that_fit(amount):
    code = boleto.barcode(bank_code="001", due_date=date(2026, 3, 10), amount_cents=amount,
                          free_field=boleto.free_field(nosso_numero=1))

    assert code[9:19] == f"{amount:010d}"


@pytest.mark.parametrize("amount", [10_000_000_000, -1, True])
def test_amounts_that_do_not_fit_are_refused(amount):
    with pytest.raises(boleto.BoletoFormatError):
        boleto.barcode(bank_code="001", due_date=date(2026, 3, 10), amount_cents=amount,
                       free_field=boleto.free_field(nosso_numero=1))


@pytest.mark.parametrize(("bank_code", "free"), [
    ("1", "0" * 25), ("0001", "0" * 25), ("abc", "0" * 25), ("001", "0" * 24), ("001", "0" * 26), ("001", "x" * 25),
])
def test_bad_bank_code_or_free_field_is_refused(bank_code, free):
    with pytest.raises(boleto.BoletoFormatError):
        boleto.barcode(bank_code=bank_code, due_date=date(2026, 3, 10), amount_cents=500, free_field=free)


# --- free field and nosso número ------------------------------------------------------------------------------------

def test_free_field_layout():
    free = boleto.free_field(nosso_numero=42)

    assert free == "0000000" + "00000000000000042" + boleto.nosso_numero_check_digit("00000000000000042")
    assert len(free) == 25


@pytest.mark.parametrize("number", [0, 1, 12345, 10**16, boleto.MAX_NOSSO_NUMERO])
def test_nosso_numero_round_trips(number):
    free = boleto.free_field(nosso_numero=number, agreement="0012345")

    assert boleto.nosso_numero_from_free_field(free) == number
    assert free.startswith("0012345")


def test_nosso_numero_check_digit_10_and_11_become_0():
    # 11 − r is 10 when r = 1 and 11 when r = 0: find a sequence for each and check both print as 0.
    raws = {}
    for n in range(1, 200):
        number = f"{n:017d}"
        total = sum(int(d) * (2 + i % 8) for i, d in enumerate(reversed(number)))
        raws.setdefault(11 - total % 11, number)

    assert boleto.nosso_numero_check_digit(raws[10]) == "0"
    assert boleto.nosso_numero_check_digit(raws[11]) == "0"


def test_a_wrong_nosso_numero_check_digit_is_refused():
    free = boleto.free_field(nosso_numero=12345)
    wrong = free[:-1] + str((int(free[-1]) + 1) % 10)

    with pytest.raises(boleto.CheckDigitMismatch):
        boleto.nosso_numero_from_free_field(wrong)


@pytest.mark.parametrize("number", [-1, 10**17, True])
def test_nosso_numero_out_of_range_is_refused(number):
    with pytest.raises(boleto.BoletoFormatError):
        boleto.free_field(nosso_numero=number)


@pytest.mark.parametrize("agreement", ["", "123456", "12345678", "12345a7"])
def test_bad_agreement_is_refused(agreement):
    with pytest.raises(boleto.BoletoFormatError):
        boleto.free_field(nosso_numero=1, agreement=agreement)


@pytest.mark.parametrize("free", ["0" * 24, "0" * 26, "0" * 24 + "x"])
def test_malformed_free_field_is_refused(free):
    with pytest.raises(boleto.BoletoFormatError):
        boleto.nosso_numero_from_free_field(free)
