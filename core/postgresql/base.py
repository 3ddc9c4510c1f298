"""Django's PostgreSQL backend, with its health check (a `SELECT 1` before a reused connection's first query of a
request) only for a connection that sat idle, and its timestamps read by psycopg's C parser.

A connection used a moment ago is almost surely alive, and the check was a whole round trip on every API request: a
tenth of the cost of reading a charge. A connection idle for more than `HEALTH_CHECK_AFTER_IDLE_SECONDS` (long enough
for PostgreSQL to have restarted or a proxy to have dropped it) is checked as before. The price: after a database
restart, each busy connection can answer one request with a 500 before it is replaced (the request's error marks
the connection, and Django replaces it when the request ends).

Django reads every `timestamptz` through its own loader (`psycopg_any.BaseTzLoader`), a subclass of psycopg's
pure-Python one, which parses the text with a regular expression: 2.85 µs a value against 0.5 for psycopg's C
parser (2,000 rows of three timestamps, `psycopg[binary]`), and a page of 20 charges or a batch of payouts read
back reads dozens of them. `_TimestamptzLoader` is Django's loader with the parse done by the loader psycopg itself
registers for the type (the C one when the binary package is installed): the same value in the connection's time
zone, then its `tzinfo` set to Django's, so it returns exactly what Django's does.
"""

from __future__ import annotations

import functools
import time

import psycopg
from django.db.backends.postgresql import base
from psycopg.adapt import AdaptersMap, Loader
from psycopg.pq import Format
from psycopg.types.datetime import TimestamptzLoader as PythonTimestamptzLoader

HEALTH_CHECK_AFTER_IDLE_SECONDS = 5.0
# What psycopg reads a text timestamptz with when nobody registered another: C with psycopg[binary].
PARSER = psycopg.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, Format.TEXT)


class _TimestamptzLoader(Loader):
    """Django's BaseTzLoader, parsed by PARSER. `timezone`: Django's (its create_cursor compares it)."""

    timezone = None

    def __init__(self, oid: int, context=None):
        super().__init__(oid, context)
        self._parse = PARSER(oid, context).load  # the connection's time zone, read as psycopg's loaders read it

    def load(self, data):
        value = self._parse(data)
        # Django's replace() is a copy of the same value when the zone is its own already (UTC on UTC): 0.5 µs saved
        return value if value.tzinfo is self.timezone else value.replace(tzinfo=self.timezone)


@functools.cache
def adapters(template: AdaptersMap, timezone) -> AdaptersMap:
    """Django's adapters map (`get_adapters_template`, one per time zone) with `_TimestamptzLoader` in place of
    Django's loader."""
    adapted = AdaptersMap(template)
    adapted.register_loader("timestamptz", type("TimestamptzLoader", (_TimestamptzLoader,), {"timezone": timezone}))
    return adapted


class DatabaseWrapper(base.DatabaseWrapper):
    # Django calls close_if_unusable_or_obsolete when a request starts and when it ends: the time between the two
    # latest calls is how long the connection sat idle before this request (since the previous request ended; a
    # request that used it only early on counts as using it to its end). Celery's Django fixup does not call it:
    # there _idle_for stays infinite and Django's own behaviour is unchanged.
    _stamp: float = 0.0
    _idle_for: float = float("inf")

    def get_connection_params(self) -> dict:
        params = super().get_connection_params()
        if PARSER is not PythonTimestamptzLoader:  # without psycopg's C extension, Django's loader is as fast
            params["context"] = adapters(params["context"], self.timezone)
        return params

    def close_if_unusable_or_obsolete(self) -> None:
        super().close_if_unusable_or_obsolete()
        now = time.monotonic()
        self._idle_for, self._stamp = now - self._stamp, now

    def close_if_health_check_failed(self) -> None:
        if self.connection is not None and not self.health_check_done and \
                self._idle_for < HEALTH_CHECK_AFTER_IDLE_SECONDS:
            self.health_check_done = True
            return
        super().close_if_health_check_failed()
