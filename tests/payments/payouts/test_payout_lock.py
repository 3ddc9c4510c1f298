"""Issue 17, goal 1, as the PL/pgSQL decision keeps it (issue 36, rule 3): a payout's transaction writes the payout, its
event and its audit entry first, and its last statement is the function `payments_payout_reserve`, which takes the
merchant's ledger lock (its accounts, in id order), adds the day's total, checks the limit and the balance and writes
the movement; then it commits: the hot row of a merchant paying out is held for one statement and the COMMIT. A
refusal rolls everything back.
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


@pytest.mark.parametrize(("funds", "daily_max", "status"), [(10_000, 20_000_000, 201), (100, 20_000_000, 400),
                                                        (10_000, 4_000, 400)],
                         ids=["accepted", "refused-balance", "refused-limit"])
def test_the_ledger_lock_is_taken_last_by_one_statement(api, merchant, settings, funds, daily_max, status):
    settings.PAYOUT_DAILY_MAX = daily_max
    fund(merchant, funds)
    before = Payout.objects.count(), Event.objects.count(), LedgerEntry.objects.count()

    code, sql = request_statements(api, amount=5000)

    assert code == status
    assert not [statement for statement in sql if "FOR UPDATE" in statement], sql  # no lock taken from Python
    ledger_tables = ("payments_ledger", "payments_payoutdailytotal")
    assert [statement for statement in sql if any(table in statement for table in ledger_tables)] == [], sql
    assert sql[-1].startswith("SELECT outcome, day_total FROM payments_payout_reserve("), sql  # the last one
    written_first = sql[:-1]
    assert any(statement.startswith('INSERT INTO "payments_payout"') for statement in written_first)
    assert any(statement.startswith('INSERT INTO "webhooks_event"') for statement in written_first)
    written = Payout.objects.count(), Event.objects.count(), LedgerEntry.objects.count()
    assert written == (before if status == 400 else (before[0] + 1, before[1] + 1, before[2] + 3))
    assert PayoutDailyTotal.objects.filter(merchant=merchant).exists() == (status == 201)


def _payout_functions() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname FROM pg_proc WHERE proname LIKE 'payments\\_payout\\_%' ORDER BY proname")
        return [name for (name,) in cursor.fetchall()]


def test_the_decision_has_one_implementation_in_the_database():
    """The function migration 0018 loads is the only one. Migrations 0010 and 0013 no longer create the earlier pair
    (then a twin of a Python decision), and 0017 drops them where an older migration run did: its statements name
    their exact signatures, which are not the current function's."""
    assert _payout_functions() == ["payments_payout_reserve"]
    signature = ("p_merchant_id uuid, p_livemode boolean, p_day date, p_amount bigint, p_fee bigint, "
                 "p_daily_max bigint, p_transaction_id uuid, p_object_id varchar, p_reference_id varchar, "
                 "p_description varchar, p_created_at timestamptz")
    with connection.cursor() as cursor:
        for name in ("payments_payout_reserve", "payments_payout_accept"):
            cursor.execute(f"CREATE FUNCTION {name}({signature}) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'")
        assert _payout_functions() == ["payments_payout_accept", "payments_payout_reserve", "payments_payout_reserve"]
        for statement in importlib.import_module("payments.migrations.0017_drop_payout_functions").DROP:
            cursor.execute(statement)
        assert _payout_functions() == ["payments_payout_reserve"]
        cursor.execute("SELECT pg_get_function_identity_arguments('payments_payout_reserve'::regproc)")
        assert cursor.fetchone()[0].startswith("p_merchant_id uuid, p_livemode boolean, p_day date, p_amount bigint")
