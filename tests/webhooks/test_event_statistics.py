"""The events table keeps no planner statistics of its payload (webhooks migration 0005): ANALYZE of the largest table
skips its largest column, which no query filters on."""

import pytest
from django.db import connection

from webhooks.models import Event

pytestmark = pytest.mark.django_db


def test_the_payload_column_has_no_statistics_target():
    with connection.cursor() as cursor:
        cursor.execute("SELECT attstattarget FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s",
                       [Event._meta.db_table, Event._meta.get_field("payload").column])
        assert cursor.fetchone() == (0,)
