"""The double-entry ledger: every movement of money is one transaction whose entries sum to zero.

`post` must run inside the caller's database transaction, beside the status change that causes the movement (and
its event), so the three commit together or not at all. A movement locks all of its merchant's accounts of the mode,
in id order: whatever a transaction locks first, it locks everything, so a later call in the same transaction can
never take the locks out of order (no deadlocks). A caller that must check a balance first (a refund: "available ≥
amount") calls `lock`, decides, and passes the locked accounts to `post`, which updates those very objects: a second
check in the same transaction sees the new balance. The one movement not written here is a payout's acceptance: the
PL/pgSQL function `payments_payout_reserve` (`payments.payouts.reserve`) writes the same rows `post` would.
Amounts are integer cents, signed: positive adds to an account's balance.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils.translation import gettext_lazy

from accounts.models import Merchant
from core.errors import DomainError
from payments import lock_objects
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
    """Lock all the merchant's accounts of the mode, in id order (`lock_objects.ledger_accounts`), and return them as
    they are now, by kind."""
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
    accounts = {}
    for account in lock_objects.ledger_accounts(merchant=merchant, livemode=livemode):
        account.merchant = merchant
        accounts[account.kind] = account
    return accounts


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
    """Write balanced movements of one merchant and mode, in this order, under one lock (the worker completing a
    batch of payouts); each is checked and written exactly as `post` writes one.

    The rows are built before the lock; under it, each entry gets its account and its running balance, then the
    movements, their entries and the new balances are written (an INSERT of the movements, one of their entries, an
    UPDATE of the balances), and the caller commits."""
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
    written, entries = [], []  # entries: (the leg's kind, its entry)
    for movement, legs in zip(movements, kept, strict=True):
        row = LedgerTransaction(merchant=merchant, livemode=livemode, object_type=movement.object_type,
                                object_id=movement.object_id, reference_id=movement.reference_id,
                                description=movement.description[:255])
        entries += [(leg.kind, LedgerEntry(transaction=row, amount=leg.amount, line_type=leg.line_type,
                                           created_at=row.created_at)) for leg in legs]
        written.append(row)
    if accounts is None:
        accounts = lock(merchant=merchant, livemode=livemode)
    touched = {}
    for kind, entry in entries:
        account = accounts[kind]
        account.balance += entry.amount
        entry.account, entry.balance_after = account, account.balance
        touched[account.pk] = account
    LedgerTransaction.objects.bulk_create(written)
    LedgerEntry.objects.bulk_create([entry for _, entry in entries])  # their ids in this order: statements list them so
    LedgerAccount.objects.bulk_update(touched.values(), ["balance"])
    return written


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
