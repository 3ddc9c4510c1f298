"""Reads of the ledger: balances and statement lines."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db.models import QuerySet

from accounts.models import Merchant
from payments.ledger import services as ledger
from payments.models import (
    AccountKind,
    LedgerAccount,
    LedgerEntry,
)


def statement_lines(*, merchant: Merchant, livemode: bool) -> QuerySet[LedgerEntry]:
    """The merchant's statement: the entries of its `available`, `pending` and `held` accounts (SPEC §5)."""
    accounts = ledger.accounts_ensure(merchant=merchant, livemode=livemode)
    ids = [accounts[AccountKind.AVAILABLE].pk, accounts[AccountKind.PENDING].pk, accounts[AccountKind.HELD].pk]
    return LedgerEntry.objects.filter(account_id__in=ids).select_related("transaction", "account")


@dataclass(frozen=True)
class Balance:
    available: int
    pending: int
    held: int = 0  # unmatched payments awaiting a decision and open disputes (issue 14)


def balance_get(*, merchant: Merchant, livemode: bool) -> Balance:
    balances = dict(LedgerAccount.objects.filter(merchant=merchant, livemode=livemode,
                                                 kind__in=[AccountKind.AVAILABLE, AccountKind.PENDING,
                                                           AccountKind.HELD])
                    .values_list("kind", "balance"))
    return Balance(available=balances.get(AccountKind.AVAILABLE, 0), pending=balances.get(AccountKind.PENDING, 0),
                   held=balances.get(AccountKind.HELD, 0))


logger = logging.getLogger(__name__)

