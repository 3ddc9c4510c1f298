"""Interleaved 2 of 5 (ITF), the symbology of the boleto's 44-digit barcode (FEBRABAN, SPEC §3.6).

Each digit is five elements, two of them wide. Digits go in pairs: the first digit of a pair is drawn by the five
bars, the second by the five spaces between them, bar and space alternating (hence "interleaved"), so a code always
has an even number of digits. Around the pairs: the start guard (narrow bar, narrow space, narrow bar, narrow space)
and the stop guard (wide bar, narrow space, narrow bar).

Widths are in narrow units with wide = 3 (FEBRABAN allows a ratio of 2.25 to 3; 3 reads best). On paper FEBRABAN
places the 44 digits in about 103 mm: 405 units of 0.254 mm.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

NARROW = 1
WIDE = 3

# "N" narrow, "W" wide; the same table for bars and for spaces.
PATTERNS: dict[str, str] = {
    "0": "NNWWN",
    "1": "WNNNW",
    "2": "NWNNW",
    "3": "WWNNN",
    "4": "NNWNW",
    "5": "WNWNN",
    "6": "NWWNN",
    "7": "NNNWW",
    "8": "WNNWN",
    "9": "NWNWN",
}
START = "NNNN"  # bar, space, bar, space
STOP = "WNN"  # bar, space, bar
# A scanner needs blank space either side of the code: at least 10 narrow units (ISO/IEC 16390).
QUIET_ZONE = 10

_WIDTH = {"N": NARROW, "W": WIDE}

Module = tuple[bool, int]  # (is a bar, width in narrow units)


def itf_modules(digits: str) -> list[Module]:
    """The barcode as alternating (bar?, width) elements, starting and ending with a bar.

    Raises ValueError for an empty, odd-length or non-digit input: ITF cannot draw those.
    """
    _check(digits)
    widths = START
    for first, second in zip(digits[0::2], digits[1::2], strict=True):
        bars, spaces = PATTERNS[first], PATTERNS[second]
        widths += "".join(bar + space for bar, space in zip(bars, spaces, strict=True))
    widths += STOP
    # Elements alternate strictly, so even positions are bars and odd ones spaces.
    return [(index % 2 == 0, _WIDTH[width]) for index, width in enumerate(widths)]


def itf_svg(digits: str, *, narrow: int = 1, height: int = 50, quiet_zone: int = QUIET_ZONE,
            label: str = "Barcode") -> str:
    """A standalone `<svg>` of the barcode, to inline in HTML: a white background (quiet zones included) and one
    black rect per bar. Coordinates are in user units (`narrow` per narrow element); CSS may scale the element, e.g.
    to 103 mm × 13 mm on paper, since the viewBox keeps the proportions of the bars. `label` (read out before the
    digits by screen readers) is in the page's language."""
    if narrow < 1 or height < 1 or quiet_zone < 0:
        raise ValueError("narrow and height must be positive, quiet_zone not negative")
    modules = itf_modules(digits)
    width = (sum(units for _, units in modules) + 2 * quiet_zone) * narrow
    rects = []
    x = quiet_zone * narrow
    for is_bar, units in modules:
        if is_bar:
            rects.append(f'<rect x="{x}" y="0" width="{units * narrow}" height="{height}"/>')
        x += units * narrow
    label = quoteattr(f"{label} {digits}")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="itf" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" preserveAspectRatio="none" shape-rendering="crispEdges" role="img" aria-label={label}>'
        f'<rect width="{width}" height="{height}" fill="#fff"/>'
        f'<g fill="#000">{"".join(rects)}</g>'
        "</svg>"
    )


def _check(digits: str) -> None:
    if not digits or len(digits) % 2 or not digits.isascii() or not digits.isdigit():
        raise ValueError("ITF encodes a non-empty, even number of ASCII digits")
