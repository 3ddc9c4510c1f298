"""Row access shared by charges and payouts: a row locked for a transition, list filters."""

from __future__ import annotations

import logging

from django.db.models import Model, QuerySet

from accounts.models import Merchant
from core.errors import NotFound

logger = logging.getLogger(__name__)


def row_locked(model: type[Model], pk, *, merchant: Merchant | None, livemode: bool | None, missing: str):
    """A charge or payout row, locked for this transaction (scoped to the merchant and mode when given, else 404).
    Only the row itself: `of=("self",)` keeps the joined merchant row unlocked, which inserts referencing the
    merchant (FOR KEY SHARE) would otherwise wait on, in a cycle with the ledger locks."""
    queryset = model.objects.select_for_update(of=("self",)).select_related("merchant")
    if merchant is not None:
        queryset = queryset.filter(merchant=merchant, livemode=livemode)
    row = queryset.filter(pk=pk).first()
    if row is None:
        raise NotFound(missing)
    return row


def filtered(queryset: QuerySet, **filters) -> QuerySet:
    """The filters that were given (None means "not filtered")."""
    return queryset.filter(**{name: value for name, value in filters.items() if value is not None})
