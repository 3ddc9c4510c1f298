"""The payout's balance decision, `payments_payout_reserve` (payments/sql/payout_reserve.sql, issue 36 rule 3): the
SQL names the models' tables, columns and enum values (a rename of any fails here); run, it writes exactly the rows
`ledger.post` writes for the same movement, refuses at the limit and the balance as the API answers them, and the day's
total it raises is the row a canceled or failed payout takes its amount off again. The file loaded in the database is
the file in the tree, and the newest migration that loads it records its digest.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from datetime import date
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from payments.ledger import selectors as ledger_selectors
from payments.ledger import services as ledger
from payments.ledger.services import Leg
from payments.models import (
    AccountKind,
    LedgerAccount,
    LedgerEntry,
    LedgerTransaction,
    LineType,
    Payout,
    PayoutDailyTotal,
)
from payments.payouts import reserve
from payments.payouts import services as payouts
from tests.factories import MerchantFactory
from tests.payments.payouts.test_payout_api import create, fund, payout_test_setup, post_payout

pytestmark = pytest.mark.django_db

SQL_FILE = Path(settings.BASE_DIR) / "payments" / "sql" / "payout_reserve.sql"
MODELS = (LedgerAccount, LedgerTransaction, LedgerEntry, PayoutDailyTotal)
DAY = date(2026, 12, 7)


@pytest.fixture(autouse=True)
def _setup(settings, monkeypatch):
    payout_test_setup(settings, monkeypatch)


def sql_code() -> str:
    """The file without its comments."""
    return re.sub(r"--[^\n]*", "", SQL_FILE.read_text())


def columns(model) -> set[str]:
    return {field.column for field in model._meta.concrete_fields}


# --- The SQL against the models --------------------------------------------------------------------------------------
def test_the_sql_names_the_models_tables():
    tables = set(re.findall(r"\bpayments_\w+", sql_code())) - {"payments_payout_reserve"}

    assert tables == {model._meta.db_table for model in MODELS}


def test_every_inserted_column_is_a_column_of_its_model():
    by_table = {model._meta.db_table: model for model in MODELS}
    inserts = re.findall(r"INSERT INTO (\w+) \(([^)]*)\)", sql_code())

    assert {table for table, _ in inserts} == set(by_table) - {LedgerAccount._meta.db_table}
    for table, names in inserts:
        listed = {name.strip() for name in names.split(",")}
        assert listed <= columns(by_table[table]), table
        # every column without a default is given
        required = {field.column for field in by_table[table]._meta.concrete_fields
                    if not field.has_default() and not field.primary_key}
        assert required <= listed, table


def test_the_columns_read_and_updated_are_the_models():
    code = sql_code()
    used = {  # the columns the function reads, matches or sets besides its INSERT lists
        LedgerAccount: {"id", "kind", "balance", "merchant_id", "livemode"},
        PayoutDailyTotal: {"merchant_id", "livemode", "day", "amount"},
    }
    for model, names in used.items():
        assert names <= columns(model), model
        assert all(re.search(rf"\b{name}\b", code) for name in names)
    assert "SELECT id, kind, balance FROM payments_ledgeraccount" in code
    assert "WHERE merchant_id = p_merchant_id AND livemode = p_livemode" in code
    assert "SET balance = " in code
    # The upsert's conflict target is the model's unique constraint.
    (constraint,) = PayoutDailyTotal._meta.constraints
    target = [PayoutDailyTotal._meta.get_field(name).column for name in constraint.fields]
    assert f"ON CONFLICT ({', '.join(target)})" in code


def test_the_literals_are_the_python_values():
    literals = set(re.findall(r"'([^']*)'", sql_code()))

    assert literals == {AccountKind.AVAILABLE, AccountKind.PAYOUTS_IN_FLIGHT, LineType.PAYOUT, LineType.PAYOUT_FEE,
                        reserve.OK, reserve.LIMIT, reserve.BALANCE}
    assert "object_type, object_id" in sql_code() and "p_livemode, 'payout', p_object_id" in sql_code()


# --- The file, the migration, the database ---------------------------------------------------------------------------
def test_the_database_runs_the_file_in_the_tree():
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'payments_payout_reserve'")
        (body,) = cursor.fetchone()
    assert body == SQL_FILE.read_text().split("$$")[1]


def test_the_newest_migration_loading_the_file_records_its_digest():
    """A change to the .sql file needs a migration that loads it again (databases migrated before have the old
    function): it records the file's SHA-256 as `PAYOUT_RESERVE_SHA256`."""
    folder = Path(settings.BASE_DIR) / "payments" / "migrations"
    digests = [getattr(importlib.import_module(f"payments.migrations.{path.stem}"), "PAYOUT_RESERVE_SHA256", None)
               for path in sorted(folder.glob("0*.py"))]
    recorded = [digest for digest in digests if digest]

    assert recorded, "no migration loads payments/sql/payout_reserve.sql"
    assert recorded[-1] == hashlib.sha256(SQL_FILE.read_bytes()).hexdigest(), (
        "payments/sql/payout_reserve.sql changed: add a migration that loads it again and records its SHA-256")


# --- Running it ------------------------------------------------------------------------------------------------------
def payout(merchant, *, amount: int, fee: int, n: int = 1, livemode: bool = False) -> Payout:
    """An unsaved payout (`decide` saves it, as `payout_create` does, before the decision)."""
    return Payout(merchant=merchant, livemode=livemode, amount=amount, fee=fee, pix_key="k", pix_key_normalized="k",
                  pix_key_type="EVP", reference_id=f"ref-{n}", external_id=f"E{n:031d}", local_date=DAY)


class Refused(Exception):
    pass


def decide(payout: Payout, *, daily_max: int = 10**12) -> reserve.Decision:
    """The payout and its decision in one transaction, rolled back when refused (as `payout_create` does)."""
    try:
        with transaction.atomic():
            payout.save(force_insert=True)
            decision = reserve.payout_reserve(payout=payout, daily_max=daily_max, description="Pix payout to EVP key",
                                              created_at=timezone.now())
            if decision.outcome != reserve.OK:
                raise Refused(decision)
    except Refused as refused:
        return refused.args[0]
    return decision


def rows(merchant) -> list[tuple]:
    """The merchant's payout movements and balances as rows, ids and times left out."""
    entries = LedgerEntry.objects.filter(account__merchant=merchant, transaction__object_type="payout").order_by(
        "id").values_list(
        "transaction__object_type", "transaction__object_id", "transaction__reference_id",
        "transaction__description", "transaction__livemode", "account__kind", "amount", "line_type", "balance_after")
    balances = LedgerAccount.objects.filter(merchant=merchant).order_by("kind").values_list("kind", "balance")
    return [*entries, *balances]


@pytest.mark.parametrize("fee", [25, 0], ids=["fee", "no-fee"])
def test_it_writes_the_rows_ledger_post_writes(fee):
    by_function, by_post = MerchantFactory(), MerchantFactory()
    for merchant in (by_function, by_post):
        fund(merchant, 10_000)
    first, second = payout(by_function, amount=3_000, fee=fee, n=1), payout(by_function, amount=2_000, fee=fee, n=2)

    assert decide(first) == reserve.Decision(outcome=reserve.OK, day_total=3_000)
    assert decide(second) == reserve.Decision(outcome=reserve.OK, day_total=5_000)
    for made in (first, second):
        with transaction.atomic():
            ledger.post(merchant=by_post, livemode=False, object_type="payout", object_id=str(made.id),
                        reference_id=made.reference_id, description="Pix payout to EVP key", legs=[
                            Leg(AccountKind.AVAILABLE, -made.amount, LineType.PAYOUT),
                            Leg(AccountKind.AVAILABLE, -made.fee, LineType.PAYOUT_FEE),
                            Leg(AccountKind.PAYOUTS_IN_FLIGHT, made.amount + made.fee, LineType.PAYOUT)])

    assert rows(by_function) == rows(by_post)
    assert len(rows(by_function)) == 2 * (3 if fee else 2) + len(AccountKind.values)
    assert ledger_selectors.balance_get(merchant=by_function, livemode=False).available == 10_000 - 5_000 - 2 * fee
    written = LedgerTransaction.objects.filter(merchant=by_function, object_type="payout").order_by("id")
    assert [t.created_at == t.entries.first().created_at for t in written] == [True, True]
    assert PayoutDailyTotal.objects.get(merchant=by_function).amount == 5_000
    out = StringIO()
    call_command("ledger_check", stdout=out)
    assert out.getvalue().startswith("ledger ok"), out.getvalue()


def test_a_refusal_answers_why_and_the_new_total_and_leaves_nothing():
    merchant = MerchantFactory()
    fund(merchant, 10_000)
    assert decide(payout(merchant, amount=4_000, fee=0, n=1)) == reserve.Decision("ok", 4_000)
    before = rows(merchant)

    assert decide(payout(merchant, amount=1_001, fee=0, n=2), daily_max=5_000) == reserve.Decision("limit", 5_001)
    assert decide(payout(merchant, amount=6_000, fee=1, n=3), daily_max=20_000) == reserve.Decision("balance", 10_000)
    assert decide(payout(merchant, amount=1, fee=0, n=4, livemode=True)) == reserve.Decision("balance", 1)  # no funds
    assert decide(payout(MerchantFactory(), amount=1, fee=0, n=7)) == reserve.Decision("balance", 1)  # no accounts
    assert rows(merchant) == before
    assert list(PayoutDailyTotal.objects.values_list("merchant", "amount")) == [(merchant.pk, 4_000)]
    assert decide(payout(merchant, amount=1_000, fee=0, n=5), daily_max=5_000) == reserve.Decision("ok", 5_000)
    assert decide(payout(merchant, amount=5_000, fee=0, n=6), daily_max=20_000) == reserve.Decision("ok", 10_000)
    assert ledger_selectors.balance_get(merchant=merchant, livemode=False).available == 0


def test_the_api_answers_its_refusals(api, merchant, settings):
    settings.PAYOUT_DAILY_MAX = 6_000
    fund(merchant, 10_000)
    create(api, amount=5_000, referenceId="p-1")

    limit = post_payout(api, amount=1_001, referenceId="p-2")
    settings.PAYOUT_DAILY_MAX = 20_000
    balance = post_payout(api, amount=5_001, referenceId="p-3")

    assert (limit.status_code, limit.json()["error"]["code"]) == (400, "payout_limit_exceeded")
    assert "would reach 6001 cents; the daily limit is 6000" in limit.json()["error"]["message"]
    assert (balance.status_code, balance.json()["error"]["code"]) == (400, "insufficient_balance")
    assert PayoutDailyTotal.objects.get(merchant=merchant).amount == 5_000


@pytest.mark.parametrize("ending", ["cancel", "fail"])
def test_a_payout_that_never_leaves_comes_off_the_row_it_was_added_to(api, merchant, ending):
    fund(merchant, 10_000)
    made = create(api, amount=3_000, referenceId="p-1")
    create(api, amount=1_000, referenceId="p-2")
    total = PayoutDailyTotal.objects.get(merchant=merchant)
    assert total.amount == 4_000

    if ending == "cancel":
        payouts.payout_cancel(merchant=merchant, livemode=False, payout_id=made["id"])
    else:
        payouts.payout_simulate(merchant=merchant, payout_id=made["id"], action="fail")

    assert list(PayoutDailyTotal.objects.filter(merchant=merchant).values_list("pk", "amount")) == [(total.pk, 1_000)]
