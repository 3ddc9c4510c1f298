"""Statements sent with numbered placeholders ($1, $2…), their values bound by the server (`core.inserts.execute`)."""

from __future__ import annotations

import functools
import itertools
import re

from django.db.backends.postgresql.base import CursorMixin
from psycopg import RawCursor


class NumberedCursor(CursorMixin, RawCursor):
    """psycopg's cursor for numbered placeholders ($1, $2…), given the %s SQL that Django's execute wrappers see (and
    may extend: integrations.idempotency adds a WITH clause), numbered by `numbered` as it goes to psycopg: the values
    are bound by the server and the SQL is sent as it is, never parsed again."""

    def execute(self, query, params=None, **kwargs):
        return super().execute(query if params is None else numbered(query), params, **kwargs)

    def executemany(self, query, params_seq, **kwargs):
        return super().executemany(numbered(query), params_seq, **kwargs)


_PERCENT = re.compile(r"%(.?)", re.DOTALL)
_NUMBERED_CACHED_LENGTH = 16_384  # longer statements (a batch of hundreds of rows) are numbered anew, not kept


def numbered(sql: str) -> str:
    """`sql` with its %s placeholders numbered $1, $2… in order (and %% made %), as psycopg numbers them; any other
    % (psycopg's %b, %t and %(name)s among them, which nothing here uses) is refused with a ValueError. Statements
    up to _NUMBERED_CACHED_LENGTH characters are numbered once per process."""
    return _numbered_cached(sql) if len(sql) <= _NUMBERED_CACHED_LENGTH else _numbered(sql)


def _numbered(sql: str) -> str:
    count = itertools.count(1)

    def replace(match: re.Match) -> str:
        if match[1] == "s":
            return f"${next(count)}"
        if match[1] == "%":
            return "%"
        raise ValueError(f"only %s placeholders (and %%) are numbered, not {match[0]!r}")

    return _PERCENT.sub(replace, sql)


_numbered_cached = functools.lru_cache(maxsize=256)(_numbered)
