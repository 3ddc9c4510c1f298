"""Issue 17, goal 1, as the Python decision keeps it: a payout's transaction writes the payout, its event and its
audit entry first, then takes the merchant's ledger lock (its accounts, in id order), adds the day's total, checks the
limit and the balance and writes the movement, and commits: the hot row of a merchant paying out is held for the
decision and the movement only. A refusal rolls everything back.
"""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from payments.models import LedgerEntry, Payout, PayoutDailyTotal
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
def test_the_ledger_lock_is_taken_last_for_the_decision_and_the_movement(api, merchant, funds, status):
    fund(merchant, funds)
    before = Payout.objects.count(), Event.objects.count(), LedgerEntry.objects.count()

    code, sql = request_statements(api, amount=5000)

    assert code == status
    locks = [index for index, statement in enumerate(sql) if "FOR UPDATE" in statement]
    assert len(locks) == 1 and 'FROM "payments_ledgeraccount"' in sql[locks[0]], sql  # no lock taken any other way
    written_first = sql[:locks[0]]
    assert any(statement.startswith('INSERT INTO "payments_payout"') for statement in written_first)
    assert any(statement.startswith('INSERT INTO "webhooks_event"') for statement in written_first)
    under_lock = [statement.split(" ", 3)[:3] for statement in sql[locks[0] + 1:]]
    decision = [["SELECT", '"payments_payoutdailytotal"."id",', '"payments_payoutdailytotal"."merchant_id",'],
                ["INSERT", "INTO", '"payments_payoutdailytotal"']]
    movement = [["INSERT", "INTO", '"payments_ledgertransaction"'], ["INSERT", "INTO", '"payments_ledgerentry"'],
                ["UPDATE", '"payments_ledgeraccount"', "SET"]]
    assert under_lock == (decision + movement if status == 201 else decision), under_lock
    written = Payout.objects.count(), Event.objects.count(), LedgerEntry.objects.count()
    assert written == (before if status == 400 else (before[0] + 1, before[1] + 1, before[2] + 3))
    assert PayoutDailyTotal.objects.filter(merchant=merchant).exists() == (status == 201)


def _payout_functions() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname FROM pg_proc WHERE proname LIKE 'payments\\_payout\\_%' ORDER BY proname")
        return [name for (name,) in cursor.fetchall()]


def test_the_decision_has_no_second_implementation_in_the_database():
    """Migrations 0010 and 0013 no longer create the PL/pgSQL twins of the decision, and 0017 drops them where an
    older migration run did (its statements name their exact signatures)."""
    assert _payout_functions() == []
    signature = ("p_merchant_id uuid, p_livemode boolean, p_day date, p_amount bigint, p_fee bigint, "
                 "p_daily_max bigint, p_transaction_id uuid, p_object_id varchar, p_reference_id varchar, "
                 "p_description varchar, p_created_at timestamptz")
    with connection.cursor() as cursor:
        for name in ("payments_payout_reserve", "payments_payout_accept"):
            cursor.execute(f"CREATE FUNCTION {name}({signature}) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'")
        assert _payout_functions() == ["payments_payout_accept", "payments_payout_reserve"]
        for statement in importlib.import_module("payments.migrations.0017_drop_payout_functions").DROP:
            cursor.execute(statement)
    assert _payout_functions() == []
