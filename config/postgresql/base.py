"""Django's PostgreSQL backend, with its health check (a `SELECT 1` before a reused connection's first query of a
request) only for a connection that sat idle.

A connection used a moment ago is almost surely alive, and the check was a whole round trip on every API request: a
tenth of the cost of reading a charge. A connection idle for more than `HEALTH_CHECK_AFTER_IDLE_SECONDS` (long enough
for PostgreSQL to have restarted or a proxy to have dropped it) is checked as before. The price: after a database
restart, each busy connection can answer one request with a 500 before it is replaced (the request's error marks
the connection, and Django replaces it when the request ends).
"""

from __future__ import annotations

import time

from django.db.backends.postgresql import base

HEALTH_CHECK_AFTER_IDLE_SECONDS = 5.0


class DatabaseWrapper(base.DatabaseWrapper):
    # Django calls close_if_unusable_or_obsolete when a request starts and when it ends: the time between the two
    # latest calls is how long the connection sat idle before this request (since the previous request ended; a
    # request that used it only early on counts as using it to its end). Celery's Django fixup does not call it:
    # there _idle_for stays infinite and Django's own behaviour is unchanged.
    _stamp: float = 0.0
    _idle_for: float = float("inf")

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
