"""Issue 17, goal 1: on PostgreSQL a payout is accepted by one statement, a transaction of its own: the call of
`payments_payout_accept` locks the accounts, adds the day's total, checks the limit and the balance and writes the
movement (or raises), and the same statement inserts the payout and its event. The ledger lock is held for that one
round trip and nothing else. (That the function and SQLite's plain path decide and write alike is shown by the rest
of the payout tests, which run on both.)
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from payments.models import LedgerEntry, Payout
from tests.payments.payouts.test_payout_api import fund, payout_body, payout_test_setup
from webhooks.models import Event

pytestmark = pytest.mark.django_db


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
def test_the_payout_its_event_and_the_decision_are_one_statement(api, merchant, funds, status):
    fund(merchant, funds)
    before = Payout.objects.count(), Event.objects.count(), LedgerEntry.objects.count()

    code, sql = request_statements(api, amount=5000)

    assert code == status
    # The last statement writes the payout and its event and calls the one function that takes the lock.
    decisions = [index for index, statement in enumerate(sql) if "payments_payout_accept(" in statement]
    assert decisions == [len(sql) - 1], sql[-3:]
    assert 'INSERT INTO "payments_payout"' in sql[-1] and 'INSERT INTO "webhooks_event"' in sql[-1], sql[-1]
    assert not any("FOR UPDATE" in statement for statement in sql)  # no lock taken any other way
    written = Payout.objects.count(), Event.objects.count(), LedgerEntry.objects.count()
    assert written == (before if status == 400 else (before[0] + 1, before[1] + 1, before[2] + 3))
