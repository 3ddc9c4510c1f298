"""The payout table keeps no index that another covers: every status change of a payout writes an entry in each of
its indexes (status is indexed, so no change is a HOT update), so one index too many costs every payout twice."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db


def _indexes(table: str) -> dict[str, tuple[list[str], bool, bool]]:
    """Each index of `table`: its columns in order, whether it is unique, whether it is partial."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.relname, array_agg(a.attname ORDER BY k.n), x.indisunique, x.indpred IS NOT NULL "
            "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum "
            "WHERE x.indrelid = %s::regclass GROUP BY i.relname, x.indisunique, x.indpred",
            [table])
        return {name: (columns, unique, partial) for name, columns, unique, partial in cursor.fetchall()}


def test_the_payout_table_has_exactly_the_indexes_its_queries_use():
    assert _indexes("payments_payout") == {
        "payments_payout_pkey": (["id"], True, False),
        "payout_external_id_unique": (["external_id"], True, False),
        "payout_reference_unique": (["merchant_id", "livemode", "reference_id"], True, False),
        "payout_list": (["merchant_id", "livemode", "created_at", "id"], False, False),
        "payout_list_status": (["merchant_id", "livemode", "status", "created_at", "id"], False, False),
        "payout_daily_total": (["merchant_id", "livemode", "local_date"], False, False),
        "payout_unfinished": (["updated_at"], False, True),
    }


@pytest.mark.django_db(transaction=True)
def test_the_migration_drops_the_covered_indexes_and_brings_them_back_when_reversed():
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("payments", "0013_payout_accept_function")])
        before = _indexes("payments_payout")
        assert before["payments_payout_merchant_id_4845be23"] == (["merchant_id"], False, False)
        assert before["payments_payout_external_id_425e3b5f_like"] == (["external_id"], False, False)
        assert before["payments_payout_external_id_key"] == (["external_id"], True, False)
        assert "payout_external_id_unique" not in before
    finally:
        executor = MigrationExecutor(connection)  # a new loader: the graph as migrated so far
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert set(_indexes("payments_payout")) == set(before) - {
        "payments_payout_merchant_id_4845be23", "payments_payout_external_id_425e3b5f_like",
        "payments_payout_external_id_key"} | {"payout_external_id_unique"}
