"""The API's JSON parser: DRF's, plus a limit on how deep a body may nest.

Python's JSON parser recurses once per level: a 2 KB body of a thousand `[` raised RecursionError, a 500 with a
traceback. Bodies that nest deeper than MAX_DEPTH are refused as `malformed_json` before anything parses them (the
deepest body the API takes nests 3 levels: a charge's customer address)."""

from __future__ import annotations

import io
import re
from typing import IO, Any

from rest_framework.parsers import JSONParser

from core.errors import MalformedJson

MAX_DEPTH = 32
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")
TOO_DEEP_MESSAGE = f"The request body nests deeper than {MAX_DEPTH} levels"


def too_deep(raw: bytes) -> bool:
    """Whether the JSON text `raw` nests deeper than MAX_DEPTH (counting its brackets outside strings)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:  # the common case, at C speed: it cannot nest deeper
        return False
    depth = 0
    for bracket in _BRACKET.findall(_STRING.sub(b'""', raw)):
        depth += 1 if bracket in b"[{" else -1
        if depth > MAX_DEPTH:
            return True
    return False


class JsonParser(JSONParser):
    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: dict | None = None) -> Any:
        raw = stream.read()
        if too_deep(raw):
            raise MalformedJson(TOO_DEEP_MESSAGE)
        return super().parse(io.BytesIO(raw), media_type, parser_context)
