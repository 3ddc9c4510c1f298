"""The payout's balance decision, run in the database: one call of the PL/pgSQL function `payments_payout_reserve`
(payments/sql/payout_reserve.sql, loaded by migration 0018), the only implementation of the rule.

Why in the database: a hot merchant's payouts all wait for its ledger lock, so their throughput is one over the time
that lock is held. Taken from Python, it is held for a round trip per statement (the lock, the day's total, the
movement, its entries, the balances) and the COMMIT; taken by the function, for one statement and the COMMIT.
`payments.payouts.services._reserve` calls it as the last statement of the payout's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from core.ids import uuid7
from payments.models import Payout

# The function's answers (its `outcome`).
OK = "ok"
LIMIT = "limit"  # the day's total with this payout would pass the daily limit
BALANCE = "balance"  # available < amount + fee

RESERVE = ("SELECT outcome, day_total FROM payments_payout_reserve(%s::uuid, %s::boolean, %s::date, %s::bigint, "
           "%s::bigint, %s::bigint, %s::uuid, %s::text, %s::text, %s::text, %s::timestamptz)")


@dataclass(frozen=True)
class Decision:
    outcome: str  # OK, LIMIT or BALANCE
    day_total: int  # the day's payouts with this one (rolled back with a refusal)


def payout_reserve(*, payout: Payout, daily_max: int, description: str, created_at: datetime) -> Decision:
    """In the caller's transaction: lock the merchant's ledger accounts of the mode, add the payout's amount to the
    day's total and, unless that passes `daily_max` or amount + fee passes the available balance, move amount + fee
    from available to in flight (the movement `ledger.post` would write, described by `description`). A refusal
    leaves the day's total raised: the caller raises, and its transaction rolls back."""
    if not connection.in_atomic_block:
        raise RuntimeError("payout_reserve needs the caller's transaction")
    with connection.cursor() as cursor:
        cursor.execute(RESERVE, [
            payout.merchant_id, payout.livemode, payout.local_date, payout.amount, payout.fee, daily_max, uuid7(),
            str(payout.id), payout.reference_id, description[:255], created_at])
        outcome, day_total = cursor.fetchone()
    return Decision(outcome=outcome, day_total=day_total)
