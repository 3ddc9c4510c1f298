"""The one CSV writer of every export (the statement, the audit log): streamed, and safe to open in a spreadsheet.

A text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return would be run as a formula by Excel,
LibreOffice or Google Sheets (CSV injection: `=HYPERLINK(...)` in a User-Agent, a description or a name). Such a cell
is written with a single quote before it, which spreadsheets show as text. Integers are written as numbers and need
no guard (a negative amount stays a number); every other value is written as its text, guarded.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.http import StreamingHttpResponse

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str | int:
    """A value as its CSV cell: an integer as a number, None as empty, anything else as text a spreadsheet will not
    run as a formula."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value)
    return f"'{text}" if text.startswith(FORMULA_START) else text


class _Echo:
    """csv.writer writes each row here and gets the row's text back, to yield it."""

    def write(self, value: str) -> str:
        return value


def csv_lines(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The header, then each row, as CSV lines (every cell through `csv_cell`)."""
    writer = csv.writer(_Echo())
    yield writer.writerow([csv_cell(name) for name in header])
    for row in rows:
        yield writer.writerow([csv_cell(value) for value in row])


def csv_response(*, header: Sequence[str], rows: Iterable[Sequence[Any]], filename: str) -> StreamingHttpResponse:
    """A download of `rows` (any iterable: a queryset's iterator is never held in memory whole), private to the
    person who asked for it."""
    response = StreamingHttpResponse(csv_lines(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "private, no-store"
    return response
