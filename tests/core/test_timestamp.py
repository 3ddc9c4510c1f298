"""core.api.timestamp, put together from the datetime's fields, writes what the standard library's formatting of
the same instant in UTC writes: isoformat with milliseconds (truncated, never rounded) and Z, or strftime for a year
before 1000 (unpadded, as the API always wrote it)."""

import random
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from core.api import timestamp


def reference(value: datetime) -> str:
    value = value.astimezone(UTC)
    if value.year >= 1000:
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


ZONES = [UTC, ZoneInfo("UTC"), ZoneInfo("America/Sao_Paulo"), ZoneInfo("Asia/Kolkata"),
         timezone(timedelta(hours=-3)), timezone(timedelta(hours=14)), timezone(timedelta(minutes=-30, seconds=-15))]


@pytest.mark.parametrize("value", [
    datetime(2026, 11, 20, 21, 39, 0, 123456, tzinfo=UTC),
    datetime(2026, 11, 20, 21, 39, 0, tzinfo=UTC),  # no fraction: isoformat would drop it, the API never does
    datetime(2026, 11, 20, 21, 39, 0, 999999, tzinfo=UTC),  # truncated to .999, not rounded up a second
    datetime(2026, 11, 20, 21, 39, 0, 999, tzinfo=UTC),
    datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=ZoneInfo("America/Sao_Paulo")),  # the next year in UTC
    datetime(1000, 1, 1, tzinfo=UTC),
    datetime(1000, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=2))),  # year 999 in UTC
    datetime(999, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
])
def test_writes_what_the_standard_library_writes(value):
    assert timestamp(value) == reference(value)


def test_writes_what_the_standard_library_writes_for_random_instants_in_any_zone():
    rng = random.Random(17)
    lowest, highest = datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC)
    span = int((highest - lowest).total_seconds())
    for _ in range(20_000):
        instant = lowest + timedelta(seconds=rng.randrange(span), microseconds=rng.randrange(1_000_000))
        value = instant.astimezone(rng.choice(ZONES))
        assert timestamp(value) == reference(value), value


def test_none_is_none():
    assert timestamp(None) is None
