"""Faster readers for the columns of a list page (`core.api.Listing`), each giving what Django's own gives.

A page of 20 charges decodes 60 timestamps and 60 JSON documents: with Django's readers that was half of the page's
Python. `tests/config/test_pagination.py` holds a page read with these to the model instances the ORM builds of the
same rows, JSON with integers beyond 64 bits included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from django.db.models import JSONField
from psycopg.types.datetime import TimestamptzLoader  # psycopg swaps in its C twin when it registers it

# Every integer orjson would read as a float (beyond 64 bits) has 19 ASCII digits or more in a row. A text's UTF-8
# bytes translated through _DIGITS (b"1" for an ASCII digit, b"0" for any other byte) hold _LONG_RUN where it has
# such a run: found by C loops, where a regular expression's search cost four times the JSON's decoding.
_DIGITS = bytes(0x31 if 0x30 <= byte <= 0x39 else 0x30 for byte in range(256))
_LONG_RUN = b"1" * 19


def compiled_timestamps(cursor: Any) -> None:
    """psycopg's compiled timestamptz loader for this (PostgreSQL) cursor. Django's own, a subclass of the pure-Python
    one (to stamp the connection's zone), parses every value with a regular expression. Django sets the connection's
    TimeZone to its own, so both give the same instants in the same zone (UTC)."""
    cursor.adapters.register_loader("timestamptz", TimestamptzLoader)


def json_value(value: Any, expression: Any, connection: Any) -> Any:
    """JSONField.from_db_value (no custom decoder) by orjson, about five times faster than the standard library. orjson
    reads an integer beyond 64 bits as a float where json keeps an int, and refuses what json takes (NaN, a lone
    surrogate): text that might hold either, and anything not a string, is read by Django's own."""
    if type(value) is str and _LONG_RUN not in value.encode("utf-8", "surrogatepass").translate(_DIGITS):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            pass
    return expression.output_field.from_db_value(value, expression, connection)


def faster(converter: Callable) -> Callable:
    """`converter` (one of the ORM's for a selected column), or its faster equal from this module."""
    if getattr(converter, "__func__", None) is JSONField.from_db_value and converter.__self__.decoder is None:
        return json_value
    return converter
