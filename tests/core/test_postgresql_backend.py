"""core.postgresql: Django's PostgreSQL backend with timestamps read by psycopg's C parser, returning exactly what
Django's own loader returns."""

from __future__ import annotations

from datetime import UTC

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from psycopg.pq import Format

from core.postgresql import base

pytestmark = pytest.mark.django_db

VALUES = ["2026-11-29 15:40:29.123456+00", "2026-11-29 15:40:29+00", "2001-02-03 04:05:06.7+03",
          "1999-12-31 23:59:59.999999-03:30", "0001-01-02 00:00:00+00", "9999-12-30 23:59:59.999999+00",
          "2024-02-29 12:00:00+14", "2024-02-29 12:00:00-12"]
SELECT = "SELECT " + ", ".join(f"'{value}'::timestamptz" for value in VALUES) + ", NULL::timestamptz"


def _read(*, django_loader: bool, zone: str | None = None) -> tuple:
    with connection.cursor() as cursor:
        if zone:
            cursor.execute("SET TIME ZONE %s", [zone])
        raw = cursor.cursor
        if django_loader:
            register_tzloader(connection.timezone, raw)  # Django's loader, on this cursor only
        try:
            raw.execute(SELECT)
            return raw.fetchone()
        finally:
            if zone:
                cursor.execute("SET TIME ZONE %s", [connection.timezone_name])


def test_the_connection_reads_timestamps_with_the_c_parser():
    loader = connection.connection.adapters.get_loader(1184, Format.TEXT)

    assert issubclass(loader, base._TimestamptzLoader)
    assert loader.timezone is connection.timezone is UTC  # Django's create_cursor finds its zone and adds nothing
    assert base.PARSER.__module__.startswith("psycopg_binary")  # psycopg[binary] is installed (requirements.txt)
    with connection.cursor() as cursor:
        assert cursor.cursor.adapters.get_loader(1184, Format.TEXT) is loader


@pytest.mark.parametrize("zone", [None, "America/Sao_Paulo", "Asia/Kathmandu"])
def test_every_value_is_djangos_to_the_time_zone_object(zone):
    """Django's loader sets its own zone on whatever the connection's is; so does this one."""
    ours, django = _read(django_loader=False, zone=zone), _read(django_loader=True, zone=zone)

    assert ours == django
    assert [value and value.tzinfo for value in ours] == [value and value.tzinfo for value in django]
    assert ours[0].tzinfo is UTC and ours[-1] is None
    assert [value.isoformat() for value in ours[:-1]] == [value.isoformat() for value in django[:-1]]


def test_without_time_zone_support_the_values_are_naive_as_djangos():
    """USE_TZ = False: Django's zone is None and its loader drops the zone; the map made for it does too."""
    with connection.cursor() as cursor:
        raw = cursor.cursor
        raw.adapters.register_loader("timestamptz", base.adapters(
            connection.connection.adapters, None).get_loader(1184, Format.TEXT))
        raw.execute(SELECT)
        ours = raw.fetchone()
        register_tzloader(None, raw)
        raw.execute(SELECT)
        django = raw.fetchone()

    assert ours == django and ours[0].tzinfo is None
