"""FEBRABAN "boleto de cobrança": the 44-digit barcode and the 47-digit digitable line (SPEC §3.6).

Barcode (positions 1-based):

    1-3 bank code · 4 currency (9 = real) · 5 general check digit · 6-9 due-date factor · 10-19 amount in cents
    · 20-44 free field (25 digits, the bank's to define)

Digitable line, the same digits reordered so a person can type them, with a mod-10 check digit per field:

    field 1  bank + currency + free[0:5]  + DV   (10)
    field 2  free[5:15]                   + DV   (11)
    field 3  free[15:25]                  + DV   (11)
    field 4  the barcode's general check digit   (1)
    field 5  due-date factor + amount            (14)

Everything here is digits only; punctuation exists only in `format_digitable_line`, for display.
"""

import re
from datetime import date, timedelta

BARCODE_LENGTH = 44
LINE_LENGTH = 47
CURRENCY_REAL = "9"
MAX_AMOUNT_CENTS = 9_999_999_999  # ten digits in the barcode

_FACTOR_BASE = date(1997, 10, 7)
_FACTOR_CYCLE = 9000  # factors run 1000..9999 and then start again at 1000 (first reset: 2025-02-22)
_BANK_CODE = re.compile(r"[0-9]{3}")
_FACTOR = re.compile(r"[1-9][0-9]{3}")

# Free-field layout (ours; FEBRABAN leaves the 25 digits to the bank):
#
#     1-7   agreement code ("convênio") with the bank, "0000000" until the bank assigns one
#     8-24  nosso número: the per-boleto sequence, 17 digits, zero-padded
#     25    the nosso número's check digit: mod 11 over its 17 digits, weights 2..9 from the right, 10 and 11 → 0
#
# Seventeen digits hold any sequence a database will ever hand out, and keeping the agreement in front means the
# same sequence under two agreements still gives two different barcodes.
AGREEMENT_LENGTH = 7
NOSSO_NUMERO_LENGTH = 17
MAX_NOSSO_NUMERO = 10**NOSSO_NUMERO_LENGTH - 1
_AGREEMENT = re.compile(r"[0-9]{7}")
_FREE_FIELD = re.compile(r"[0-9]{25}")


class BoletoFormatError(ValueError):
    """A barcode, line or one of their parts is malformed: wrong length, a non-digit, a value that does not fit."""


class CheckDigitMismatch(BoletoFormatError):
    """The digits are well formed but a check digit disagrees: almost always a typo in a line someone typed."""


def due_factor(d: date) -> str:
    """Four-digit due-date factor with the February 2025 reset: 2025-02-21 → '9999', 2025-02-22 → '1000'.

    The 1000 offset keeps the first cycle identical to the pre-reset rule (days since 1997-10-07), so boletos
    issued before the reset still read the same.
    """
    days = (d - _FACTOR_BASE).days
    return f"{(days - 1000) % _FACTOR_CYCLE + 1000:04d}"


def due_date_from_factor(factor: str, *, reference: date) -> date:
    """The due date a factor stands for, chosen as the one nearest `reference` (usually today).

    A factor repeats every 9000 days (about 24.6 years), so it names a date only together with a reference;
    on an exact tie (4500 days either way) the later date wins, since boletos are read before they fall due.
    """
    if not _FACTOR.fullmatch(factor):
        raise BoletoFormatError(f"due-date factor must be 4 digits from 1000 to 9999, got {factor!r}")
    first = _FACTOR_BASE + timedelta(days=int(factor))  # the date in the 2000-07-03..2025-02-21 cycle
    cycles = ((reference - first).days + _FACTOR_CYCLE // 2) // _FACTOR_CYCLE
    return first + timedelta(days=cycles * _FACTOR_CYCLE)


def free_field(*, nosso_numero: int, agreement: str = "0" * AGREEMENT_LENGTH) -> str:
    """The 25-digit free field carrying the nosso número and its check digit (layout in the comment above)."""
    if isinstance(nosso_numero, bool) or not 0 <= nosso_numero <= MAX_NOSSO_NUMERO:
        raise BoletoFormatError(f"nosso número must be an integer from 0 to {MAX_NOSSO_NUMERO}")
    if not _AGREEMENT.fullmatch(agreement):
        raise BoletoFormatError("agreement must be 7 digits")
    number = f"{nosso_numero:0{NOSSO_NUMERO_LENGTH}d}"
    return f"{agreement}{number}{nosso_numero_check_digit(number)}"


def nosso_numero_check_digit(number: str) -> str:
    """Mod 11 with weights 2..9 from the right; 10 and 11 become 0 so the digit is always a single digit."""
    dv = 11 - _weighted_mod11(number)
    return "0" if dv >= 10 else str(dv)


def nosso_numero_from_free_field(free_field: str) -> int:
    """Read the nosso número back out of a free field, refusing one whose check digit does not match."""
    if not _FREE_FIELD.fullmatch(free_field):
        raise BoletoFormatError("free field must be 25 digits")
    number = free_field[AGREEMENT_LENGTH:-1]
    if nosso_numero_check_digit(number) != free_field[-1]:
        raise CheckDigitMismatch("nosso número check digit does not match")
    return int(number)


def barcode(*, bank_code: str, due_date: date, amount_cents: int, free_field: str) -> str:
    """The 44-digit barcode; the general check digit goes in position 5, over the other 43 digits."""
    if not _BANK_CODE.fullmatch(bank_code):
        raise BoletoFormatError("bank code must be 3 digits")
    if isinstance(amount_cents, bool) or not 0 <= amount_cents <= MAX_AMOUNT_CENTS:
        raise BoletoFormatError(f"amount must be from 0 to {MAX_AMOUNT_CENTS} cents to fit the barcode's 10 digits")
    if not _FREE_FIELD.fullmatch(free_field):
        raise BoletoFormatError("free field must be 25 digits")
    body = f"{bank_code}{CURRENCY_REAL}{due_factor(due_date)}{amount_cents:010d}{free_field}"
    return body[:4] + general_check_digit(body) + body[4:]


def general_check_digit(digits43: str) -> str:
    """Barcode position 5: mod 11, weights 2..9 from the right; 0, 10 and 11 become 1 (FEBRABAN never uses 0)."""
    dv = 11 - _weighted_mod11(digits43)
    return "1" if dv in (0, 10, 11) else str(dv)


def field_check_digit(digits: str) -> str:
    """Mod 10 for the line's fields 1-3: weights 2,1,2,1… from the right, the digits of each product summed."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        product = int(char) * (2 if position % 2 == 0 else 1)
        total += product // 10 + product % 10
    return str((10 - total % 10) % 10)


def _weighted_mod11(digits: str) -> int:
    return sum(int(char) * (2 + position % 8) for position, char in enumerate(reversed(digits))) % 11


def digitable_line_from_barcode(barcode: str) -> str:
    """The 47-digit line for a barcode, after checking the barcode itself (a bad barcode must not become a line)."""
    _check_barcode(barcode)
    free = barcode[19:]
    field1 = barcode[0:4] + free[0:5]
    field2 = free[5:15]
    field3 = free[15:25]
    return (
        field1 + field_check_digit(field1)
        + field2 + field_check_digit(field2)
        + field3 + field_check_digit(field3)
        + barcode[4]
        + barcode[5:19]
    )


def barcode_from_digitable_line(line: str) -> str:
    """The barcode a typed line stands for; every field's check digit and the general one must match."""
    if len(line) != LINE_LENGTH or not line.isascii() or not line.isdigit():
        raise BoletoFormatError(f"digitable line must be {LINE_LENGTH} digits")
    fields = ((1, line[0:9], line[9]), (2, line[10:20], line[20]), (3, line[21:31], line[31]))
    for number, digits, dv in fields:
        if field_check_digit(digits) != dv:
            raise CheckDigitMismatch(f"check digit of field {number} of the digitable line does not match")
    code = line[0:4] + line[32] + line[33:47] + line[4:9] + line[10:20] + line[21:31]
    _check_barcode(code)  # the general check digit (field 4) guards field 5, which has no DV of its own
    return code


def _check_barcode(code: str) -> None:
    if len(code) != BARCODE_LENGTH or not code.isascii() or not code.isdigit():
        raise BoletoFormatError(f"barcode must be {BARCODE_LENGTH} digits")
    if code[3] != CURRENCY_REAL:
        raise BoletoFormatError("currency code must be 9 (real)")
    if general_check_digit(code[:4] + code[5:]) != code[4]:
        raise CheckDigitMismatch("general check digit does not match")


def format_digitable_line(line: str) -> str:
    """'00190.00009 01234.567890 12345.678905 1 13810000010000': the five groups printed on the boleto.

    The line is verified first: a display helper is the last place a wrong digit could slip onto paper.
    """
    barcode_from_digitable_line(line)
    return f"{line[0:5]}.{line[5:10]} {line[10:15]}.{line[15:21]} {line[21:26]}.{line[26:32]} {line[32]} {line[33:]}"
