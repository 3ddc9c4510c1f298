"""The API's JSON renderer: DRF's JSONRenderer, byte for byte, with the common case written by orjson.

DRF writes a body with the standard library's encoder (compact separators, UTF-8 rather than \\u escapes, U+2028 and
U+2029 escaped for JavaScript). For a body made of dicts with string keys, lists, tuples, strings, integers, booleans
and None (every body the API answers with: its schema has no number that is not an integer) orjson writes the same
bytes about ten times faster, a quarter of a 20-charge list page's cost. Anything else (a date, a Decimal, a lazy
translation, an integer beyond 64 bits, a key that is not a string, an indented rendering) goes to DRF's renderer as
before. `tests/config/test_renderers.py` holds the two to the same bytes, over drawn bodies too.
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework.renderers import JSONRenderer

# orjson writes dates, times and dataclasses its own way; passed through, they reach `_refuse` and DRF renders them.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_LINE_SEPARATORS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def plain_json(data: Any) -> bytes | None:
    """orjson's JSON of `data` when it is made of JSON's own types only (dicts with string keys, lists, tuples,
    strings, integers within 64 bits, booleans, None, floats), the JSON the standard library writes of it then (but
    for NaN and Infinity, which orjson writes as null); None for anything else, which the caller gives to its own
    encoder. The renderer below uses it."""
    try:
        return orjson.dumps(data, default=_refuse, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError: a value only the caller's encoder writes
        return None


class ApiJSONRenderer(JSONRenderer):
    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: dict | None = None) -> bytes:
        if data is None or not self.compact or self.ensure_ascii or not self.strict or self.get_indent(
                accepted_media_type, renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        body = plain_json(data)
        if body is None:  # a value only DRF's encoder writes
            return super().render(data, accepted_media_type, renderer_context)
        if body.isascii():  # no U+2028 or U+2029 (non-ASCII bytes in UTF-8): one pass rather than a search for each
            return body
        for raw, escaped in _LINE_SEPARATORS:
            if raw in body:
                body = body.replace(raw, escaped)
        return body
