"""The row locks that order money movements, in one place (as Saleor's `order/lock_objects.py`): each helper is the
`select_for_update` queryset of one kind of row, and a transaction that locks several kinds takes them in this order,
so that two transactions never wait on each other in a cycle:

1. the object that moves: a charge or a payout (`payments.rows.row_locked`), or a batch of payouts (`payouts`), in id
   order;
2. the merchant's ledger accounts of the mode (`ledger_accounts`), all of them, in id order, last: whatever a
   transaction locks first, it locks them all at once, so a later movement in the same transaction never takes one
   out of order.

Only the rows themselves (`of=("self",)`): a joined merchant row stays unlocked, which inserts referencing the merchant
(FOR KEY SHARE) would otherwise wait on.

The payout's balance decision takes the ledger accounts the same way, all of them in id order, inside the PL/pgSQL
function `payments_payout_reserve` (payments/sql/payout_reserve.sql), as its transaction's last statement.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from accounts.models import Merchant
from payments.models import LedgerAccount, Payout


def ledger_accounts(*, merchant: Merchant, livemode: bool) -> QuerySet[LedgerAccount]:
    """Every ledger account of the merchant and mode, locked in id order."""
    return (LedgerAccount.objects.select_for_update(of=("self",))
            .filter(merchant=merchant, livemode=livemode).order_by("pk"))


def payouts(*, payout_ids: Iterable, statuses: Iterable[str]) -> QuerySet[Payout]:
    """The payouts among `payout_ids` whose status is one of `statuses`, locked in id order, with their merchant
    (not locked). PostgreSQL checks the status again on the newest version of a row it had to wait for, so of two
    transactions moving one payout from a status, the second finds it gone."""
    return (Payout.objects.select_for_update(of=("self",)).select_related("merchant")
            .filter(pk__in=list(payout_ids), status__in=list(statuses)).order_by("pk"))
