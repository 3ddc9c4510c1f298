"""Reads of payouts, always scoped to the merchant and mode."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet, Sum

from accounts.models import Merchant
from core.api import Listing
from core.errors import NotFound
from payments.models import Payout, PayoutStatus
from payments.payouts.serializers import PAYOUT_COLUMNS


def payout_day_totals(payouts: QuerySet[Payout]) -> dict[tuple, int]:
    """What these payouts add up to per (merchant id, livemode, São Paulo day), as the daily limit counts them:
    failed and canceled payouts left out (what `PayoutDailyTotal` must hold)."""
    return {(row["merchant_id"], row["livemode"], row["local_date"]): row["total"]
            for row in payouts.exclude(status__in=[PayoutStatus.FAILED, PayoutStatus.CANCELED])
            .values("merchant_id", "livemode", "local_date").annotate(total=Sum("amount"))}


def payout_get(*, merchant: Merchant, livemode: bool, payout_id) -> Payout:
    payout = Payout.objects.filter(merchant=merchant, livemode=livemode, pk=payout_id).first()
    if payout is None:
        raise NotFound("No such payout")
    payout.merchant = merchant  # the caller's own: reading it back would be another query
    return payout


def payout_rows(*, merchant: Merchant, livemode: bool, status: str | None = None, reference_id: str | None = None,
                created_from: datetime | None = None, created_to: datetime | None = None) -> Listing:
    """The columns the API body reads, for `core.api.paginate`."""
    return Listing.of(Payout, PAYOUT_COLUMNS, scope={"merchant_id": merchant.pk, "livemode": livemode},
                      status=status, reference_id=reference_id, created_at__gte=created_from,
                      created_at__lt=created_to)


def payout_list(**filters: Any) -> QuerySet[Payout]:
    """The payouts `payout_rows` lists (same arguments), as model instances."""
    return payout_rows(**filters).queryset()
