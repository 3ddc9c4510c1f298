"""Issue 17, goal 1: on PostgreSQL a payout's balance decision holds the merchant's ledger lock for one round trip.
The payout and its event are written first, with no lock; then one call of `payments_payout_reserve` locks the
accounts, adds the day's total, checks the limit and the balance and writes the movement; COMMIT follows. (That the
function and SQLite's plain path decide and write alike is shown by the rest of the payout tests, which run on both.)
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.payments.payouts.test_payout_api import fund, payout_body, payout_test_setup

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _setup(settings, monkeypatch):
    payout_test_setup(settings, monkeypatch)
    settings.FEE_PAYOUT_FIXED = 25


def request_statements(api, **fields) -> tuple[int, list[str]]:
    """The request's status and the SQL it ran (the test's own savepoints left out)."""
    with CaptureQueriesContext(connection) as captured:
        response = api.post("/payout", payout_body(**fields), format="json")
    return response.status_code, [query["sql"] for query in captured.captured_queries
                                  if not query["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO"))]


@pytest.mark.parametrize(("funds", "status"), [(10_000, 201), (100, 400)], ids=["accepted", "refused-balance"])
def test_the_decision_is_one_statement_after_the_payout_is_written(api, merchant, funds, status):
    fund(merchant, funds)

    code, sql = request_statements(api, amount=5000)

    assert code == status
    # The payout and its event in one statement; then the one call that takes the lock, and nothing after it.
    reserve = [index for index, statement in enumerate(sql) if "payments_payout_reserve(" in statement]
    assert reserve == [len(sql) - 1], sql[-3:]
    assert 'INSERT INTO "payments_payout"' in sql[-2] and 'INSERT INTO "webhooks_event"' in sql[-2], sql[-2]
    assert not any("FOR UPDATE" in statement for statement in sql)  # no lock taken any other way
