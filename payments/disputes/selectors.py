"""Reads of disputes, scoped to the merchant and mode: another merchant's or mode's dispute does not exist."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.models import Merchant
from core.errors import NotFound
from payments.models import Dispute, DisputeStatus, Payin
from payments.rows import filtered

OPEN_STATUSES = (DisputeStatus.OPEN, DisputeStatus.UNDER_REVIEW)


def dispute_get(*, merchant: Merchant, livemode: bool, dispute_id) -> Dispute:
    dispute = Dispute.objects.filter(merchant=merchant, livemode=livemode, pk=dispute_id).first()
    if dispute is None:
        raise NotFound("No such dispute")
    dispute.merchant = merchant  # the caller's own: reading it back would be another query
    return dispute


def dispute_list(*, merchant: Merchant, livemode: bool, status: str | None = None, kind: str | None = None,
                 payin_id=None) -> QuerySet[Dispute]:
    """Newest first through `core.api.paginate`, on the index (merchant, livemode, created_at, id); a merchant has
    few disputes, so the status, kind and charge filters read them there."""
    return filtered(Dispute.objects.filter(merchant=merchant, livemode=livemode), status=status, kind=kind,
                    payin_id=payin_id)


def payin_disputes(*, payin: Payin) -> list[Dispute]:
    """A charge's disputes, oldest first (the charge comes from `payin_get`, so it is the caller's own)."""
    return list(Dispute.objects.filter(payin=payin).order_by("created_at", "id"))


def payin_under_dispute(*, payin: Payin) -> bool:
    return Dispute.objects.filter(payin=payin, status__in=OPEN_STATUSES).exists()
