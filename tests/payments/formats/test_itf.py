"""Interleaved 2 of 5 for the boleto barcode. The reference table and the decoder below are written out
independently of payments/formats/itf.py, so a shared mistake cannot pass unnoticed."""

import xml.etree.ElementTree as ET
from datetime import date

import pytest

from payments.formats import boleto
from payments.formats.itf import itf_modules, itf_svg

SVG_NS = "{http://www.w3.org/2000/svg}"

# Digit → widths of its five elements (1 narrow, 3 wide), as the ITF standard tabulates them.
REFERENCE = {
    "0": (1, 1, 3, 3, 1),
    "1": (3, 1, 1, 1, 3),
    "2": (1, 3, 1, 1, 3),
    "3": (3, 3, 1, 1, 1),
    "4": (1, 1, 3, 1, 3),
    "5": (3, 1, 3, 1, 1),
    "6": (1, 3, 3, 1, 1),
    "7": (1, 1, 1, 3, 3),
    "8": (3, 1, 1, 3, 1),
    "9": (1, 3, 1, 3, 1),
}
WIDTHS_TO_DIGIT = {widths: digit for digit, widths in REFERENCE.items()}

A_BARCODE = boleto.barcode(bank_code="001", due_date=date(2026, 3, 10), amount_cents=10000,
                           free_field=boleto.free_field(nosso_numero=42))


def itf_decode(modules: list[tuple[bool, int]]) -> str:
    """Read digits back from (bar?, width) elements: check the alternation and the guards, then the pairs."""
    assert all(is_bar == (i % 2 == 0) for i, (is_bar, _) in enumerate(modules)), "bars and spaces must alternate"
    widths = [1 if width == min(w for _, w in modules) else 3 for _, width in modules]
    assert widths[:4] == [1, 1, 1, 1], "start guard"
    assert widths[-3:] == [3, 1, 1], "stop guard"
    body = widths[4:-3]
    assert len(body) % 10 == 0
    digits = ""
    for offset in range(0, len(body), 10):
        chunk = body[offset:offset + 10]
        digits += WIDTHS_TO_DIGIT[tuple(chunk[0::2])] + WIDTHS_TO_DIGIT[tuple(chunk[1::2])]
    return digits


def svg_modules(svg: str) -> list[tuple[bool, int]]:
    """The element list an SVG draws: bars from its black rects, spaces from the gaps between them, in units of the
    narrowest bar."""
    root = ET.fromstring(svg)
    bars = sorted((float(r.get("x")), float(r.get("width"))) for r in root.iter(f"{SVG_NS}rect") if r.get("x"))
    narrow = min(width for _, width in bars)
    modules = []
    for index, (x, width) in enumerate(bars):
        if index:
            previous_x, previous_width = bars[index - 1]
            modules.append((False, round((x - previous_x - previous_width) / narrow)))
        modules.append((True, round(width / narrow)))
    return modules


@pytest.mark.parametrize("digit", sorted(REFERENCE))
def test_each_digit_pattern_as_bars_and_as_spaces(digit):
    # Paired with "0": the first digit is in the bars, the second in the spaces.
    as_bars = itf_modules(digit + "0")[4:-3][0::2]
    as_spaces = itf_modules("0" + digit)[4:-3][1::2]

    assert tuple(width for _, width in as_bars) == REFERENCE[digit]
    assert tuple(width for _, width in as_spaces) == REFERENCE[digit]
    assert sum(1 for _, width in as_bars if width == 3) == 2  # two wide of five: the "2 of 5"


def test_start_and_stop_guards():
    modules = itf_modules("00")

    assert modules[:4] == [(True, 1), (False, 1), (True, 1), (False, 1)]
    assert modules[-3:] == [(True, 3), (False, 1), (True, 1)]


def test_known_pair_12():
    # "1" = W N N N W in the bars, "2" = N W N N W in the spaces, interleaved bar, space, bar, space...
    assert itf_modules("12")[4:-3] == [
        (True, 3), (False, 1), (True, 1), (False, 3), (True, 1), (False, 1), (True, 1), (False, 1), (True, 3),
        (False, 3),
    ]


def test_width_totals():
    # Each pair: 2 wide bars, 3 narrow bars, 2 wide spaces, 3 narrow spaces = 18 units; start 4, stop 5.
    assert sum(width for _, width in itf_modules("00")) == 4 + 18 + 5
    assert len(itf_modules(A_BARCODE)) == 4 + 22 * 10 + 3
    assert sum(width for _, width in itf_modules(A_BARCODE)) == 405  # FEBRABAN's 103 mm at 0.254 mm a unit


@pytest.mark.parametrize("digits", ["00", "12", "0123456789", "9876543210", A_BARCODE])
def test_round_trip_decode(digits):
    assert itf_decode(itf_modules(digits)) == digits


@pytest.mark.parametrize("bad", ["", "1", "123", "12a4", "１２", "12 34", "-12"])
def test_refuses_odd_length_and_non_digits(bad):
    with pytest.raises(ValueError):
        itf_modules(bad)
    with pytest.raises(ValueError):
        itf_svg(bad)


def test_svg_is_well_formed_accessible_and_draws_the_code():
    svg = itf_svg(A_BARCODE, narrow=2, height=60)

    root = ET.fromstring(svg)
    assert root.tag == f"{SVG_NS}svg"
    assert root.get("role") == "img"
    assert root.get("aria-label") == f"Barcode {A_BARCODE}"
    assert root.get("viewBox") == f"0 0 {(405 + 20) * 2} 60"  # 10-unit quiet zone either side
    bars = [r for r in root.iter(f"{SVG_NS}rect") if r.get("x")]
    assert len(bars) == 2 + 22 * 5 + 2
    assert min(float(r.get("x")) for r in bars) == 20  # the quiet zone is kept blank
    assert all(r.get("height") == "60" for r in bars)
    assert itf_decode(svg_modules(svg)) == A_BARCODE


def test_svg_rejects_nonsense_dimensions():
    with pytest.raises(ValueError):
        itf_svg("00", narrow=0)
    with pytest.raises(ValueError):
        itf_svg("00", height=0)
