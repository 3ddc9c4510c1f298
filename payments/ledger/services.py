"""The double-entry ledger: every movement of money is one transaction whose entries sum to zero.

`post` must run inside the caller's database transaction, beside the status change that causes the movement (and
its event), so the three commit together or not at all. A movement locks all of its merchant's accounts of the mode,
in id order: whatever a transaction locks first, it locks everything, so a later call in the same transaction can
never take the locks out of order (no deadlocks). A caller that must check a balance first (a payout: "available ≥
amount + fee") calls `lock`, decides, and passes the locked accounts to `post`, which updates those very objects:
a second check in the same transaction sees the new balance.
Amounts are integer cents, signed: positive adds to an account's balance.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils.translation import gettext_lazy

from accounts.models import Merchant
from core import inserts
from core.errors import DomainError
from payments.models import (
    AccountKind,
    BalanceAdjustment,
    LedgerAccount,
    LedgerEntry,
    LedgerTransaction,
    LineType,
)


class UnbalancedTransaction(Exception):
    """A programming error: the legs of a movement must sum to zero."""


@dataclass(frozen=True)
class Leg:
    kind: AccountKind
    amount: int
    line_type: str


def accounts_ensure(*, merchant: Merchant, livemode: bool) -> dict[str, LedgerAccount]:
    """The merchant's accounts of a mode, created on first use (outside any lock: creation races are settled by the
    unique constraint)."""
    existing = {a.kind: a for a in LedgerAccount.objects.filter(merchant=merchant, livemode=livemode)}
    missing = [kind for kind in AccountKind.values if kind not in existing]
    if missing:
        LedgerAccount.objects.bulk_create(
            [LedgerAccount(merchant=merchant, livemode=livemode, kind=kind) for kind in missing],
            ignore_conflicts=True)
        existing = {a.kind: a for a in LedgerAccount.objects.filter(merchant=merchant, livemode=livemode)}
    return existing


def lock(*, merchant: Merchant, livemode: bool) -> dict[str, LedgerAccount]:
    """Lock all the merchant's accounts of the mode, in id order, and return them as they are now."""
    if not connection.in_atomic_block:
        raise RuntimeError("ledger.lock needs the caller's transaction")
    accounts = _locked(merchant, livemode)
    if len(accounts) < len(AccountKind.values):
        # The first movement of this merchant and mode. The accounts created now have larger ids than any locked
        # above, so locking them all again keeps the id order.
        accounts_ensure(merchant=merchant, livemode=livemode)
        accounts = _locked(merchant, livemode)
    return accounts


def _locked(merchant: Merchant, livemode: bool) -> dict[str, LedgerAccount]:
    with connection.cursor() as cursor:
        cursor.execute(_locked_sql(), [Merchant._meta.pk.get_db_prep_value(merchant.pk, connection), livemode])
        rows = cursor.fetchall()
    accounts = {}
    for pk, kind, balance in rows:
        account = LedgerAccount.from_db(connection.alias, _LOCKED_FIELDS, [pk, merchant.pk, livemode, kind, balance])
        account.merchant = merchant
        accounts[kind] = account
    return accounts


_LOCKED_FIELDS = ["id", "merchant_id", "livemode", "kind", "balance"]


@functools.cache
def _locked_sql() -> str:
    """`select_for_update().filter(merchant=…, livemode=…).order_by("pk")`, written once: every payout and every
    movement runs it, and compiling it cost more than running it."""
    table, *columns = (connection.ops.quote_name(name) for name in (
        LedgerAccount._meta.db_table, "id", "kind", "balance", "merchant_id", "livemode"))
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""  # SQLite: its write lock serializes
    return (f"SELECT {columns[0]}, {columns[1]}, {columns[2]} FROM {table} "  # noqa: S608 (names from the model)
            f"WHERE {columns[3]} = %s AND {columns[4]} = %s ORDER BY {columns[0]}{lock}")


@dataclass(frozen=True)
class Movement:
    """One movement of `post_many`: what `post` takes besides the merchant, the mode and the accounts."""
    legs: list[Leg]
    object_type: str
    object_id: str
    reference_id: str = ""
    description: str = ""


def post(*, merchant: Merchant, livemode: bool, legs: list[Leg], object_type: str, object_id: str,
         reference_id: str = "", description: str = "",
         accounts: dict[str, LedgerAccount] | None = None) -> LedgerTransaction:
    """Write one balanced movement. Zero legs (a fee of 0) are left out: a statement line of 0 says nothing."""
    return post_many(merchant=merchant, livemode=livemode, accounts=accounts, movements=[
        Movement(legs, object_type, str(object_id), reference_id, description)])[0]


def post_many(*, merchant: Merchant, livemode: bool, movements: list[Movement],
              accounts: dict[str, LedgerAccount] | None = None) -> list[LedgerTransaction]:
    """Write balanced movements of one merchant and mode, in this order, under one lock and in one statement (the
    worker completing a batch of payouts); each is checked and written exactly as `post` writes one.

    Everything but the balances is built before the lock (the rows, their statement and its values); under it, each
    entry's account and balance after it are filled in, then the movements and the new balances go out in one
    statement, and the caller commits: the hot row of a merchant paying out is held for two round trips and no Python
    work but that, so the API's payouts do not queue behind a batch being put together."""
    if not connection.in_atomic_block:
        raise RuntimeError("ledger.post needs the caller's transaction")
    kept = []  # each movement's legs but the zero ones
    for movement in movements:
        if any(isinstance(leg.amount, bool) or not isinstance(leg.amount, int) for leg in movement.legs):
            raise UnbalancedTransaction("amounts are integer cents")
        legs = [leg for leg in movement.legs if leg.amount != 0]
        if not legs or sum(leg.amount for leg in legs) != 0:
            raise UnbalancedTransaction(
                f"legs of {movement.object_type} {movement.object_id} must sum to zero: {movement.legs}")
        kept.append(legs)
    if not movements:
        return []
    if accounts is not None and {a.merchant_id for a in accounts.values()} != {merchant.pk}:
        raise UnbalancedTransaction("the locked accounts belong to another merchant")
    written, entries, legs_in_order, moved = [], [], [], {}
    for movement, legs in zip(movements, kept, strict=True):
        row = inserts.new(LedgerTransaction, merchant=merchant, livemode=livemode, object_type=movement.object_type,
                          object_id=movement.object_id, reference_id=movement.reference_id,
                          description=movement.description[:255])
        for leg in legs:
            moved[leg.kind] = moved.get(leg.kind, 0) + leg.amount  # the account's change so far in this call
            legs_in_order.append((leg.kind, moved[leg.kind]))
            entries.append(inserts.new(LedgerEntry, transaction=row, account_id=0, amount=leg.amount,
                                       line_type=leg.line_type, balance_after=0, created_at=row.created_at))
        written.append(row)
    statements = [inserts.rows_statement(written), inserts.rows_statement(entries)]
    values = statements[1][1]  # the entries' values, a row after another
    width = len(values) // len(entries)
    account_at, balance_at = _entry_positions()
    if accounts is None:
        accounts = lock(merchant=merchant, livemode=livemode)
    # The lock is held from here: only the balances are filled in before the statement goes.
    for n, ((kind, change), entry) in enumerate(zip(legs_in_order, entries, strict=True)):
        account = accounts[kind]
        entry.account_id = values[n * width + account_at] = account.pk
        entry.balance_after = values[n * width + balance_at] = account.balance + change
    touched = {}
    for kind, change in moved.items():
        account = accounts[kind]
        account.balance += change
        touched[account.pk] = account.balance
    # The new balances are known (their rows are locked): they are written with the movements, in one statement.
    inserts.write([_balances_update(touched), *statements], [*written, *entries])
    return written


@functools.cache
def _entry_positions() -> tuple[int, int]:
    """Where an entry's account and balance after sit among its row's values (`core.inserts.rows_statement`)."""
    return inserts.plain_position(LedgerEntry, "account_id"), inserts.plain_position(LedgerEntry, "balance_after")


def _balances_update(balances: dict[int, int]) -> tuple[str, list]:
    table, pk, balance = (connection.ops.quote_name(name) for name in (LedgerAccount._meta.db_table, "id", "balance"))
    cases = " ".join(["WHEN %s THEN %s"] * len(balances))
    ids = ", ".join(["%s"] * len(balances))
    params = [value for pair in balances.items() for value in pair] + list(balances)
    # Names from the model (quoted) and placeholders for every value: nothing from a request.
    return f"UPDATE {table} SET {balance} = CASE {pk} {cases} END WHERE {pk} IN ({ids})", params  # noqa: S608


logger = logging.getLogger(__name__)


class InsufficientBalance(DomainError):
    code = "insufficient_balance"
    message = gettext_lazy("Insufficient balance")


# --- Staff -----------------------------------------------------------------------------------------------------------
def adjustment_create(*, merchant: Merchant, livemode: bool, amount: int, reason: str, staff) -> BalanceAdjustment:
    """Credit (positive) or debit (negative) a merchant's available balance; it may go negative, as a chargeback's
    can. Shown in the statement as an `adjustment` line carrying the reason."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount == 0:
        raise ValueError("an adjustment is a non-zero integer of cents")
    if not reason.strip():
        raise ValueError("an adjustment needs a reason")
    with transaction.atomic():
        adjustment = BalanceAdjustment.objects.create(merchant=merchant, livemode=livemode, amount=amount,
                                                      reason=reason.strip(), created_by=staff)
        post(merchant=merchant, livemode=livemode, object_type="adjustment", object_id=str(adjustment.id),
                    description=adjustment.reason, legs=[
                        Leg(AccountKind.AVAILABLE, amount, LineType.ADJUSTMENT),
                        Leg(AccountKind.ADJUSTMENTS, -amount, LineType.ADJUSTMENT),
                    ])
    return adjustment
