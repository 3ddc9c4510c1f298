"""Reads of unmatched payments and of the merchant's policy for them, always scoped to the merchant and mode."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.models import Merchant
from core.errors import NotFound
from payments.models import UnmatchedAction, UnmatchedKind, UnmatchedPayment, UnmatchedPolicy
from payments.rows import filtered

# What happens to each kind when the merchant has not said (issue 14): money paid twice or after a cancel goes back
# to the payer; a payment of another amount, or naming nothing we know, waits for the merchant's decision.
DEFAULT_POLICY: dict[str, str] = {
    UnmatchedKind.AMOUNT_MISMATCH: UnmatchedAction.HOLD,
    UnmatchedKind.DUPLICATE: UnmatchedAction.REFUND,
    UnmatchedKind.AFTER_CANCEL: UnmatchedAction.REFUND,
    UnmatchedKind.UNKNOWN_REFERENCE: UnmatchedAction.HOLD,
}


def unmatched_get(*, merchant: Merchant, livemode: bool, unmatched_id) -> UnmatchedPayment:
    unmatched = UnmatchedPayment.objects.filter(merchant=merchant, livemode=livemode, pk=unmatched_id).first()
    if unmatched is None:
        raise NotFound("No such unmatched payment")
    unmatched.merchant = merchant  # the caller's own: reading it back would be another query
    return unmatched


def unmatched_list(*, merchant: Merchant, livemode: bool, status: str | None = None,
                   kind: str | None = None) -> QuerySet[UnmatchedPayment]:
    return filtered(UnmatchedPayment.objects.filter(merchant=merchant, livemode=livemode), status=status, kind=kind)


def unmatched_policy(*, merchant: Merchant) -> dict[str, str]:
    """The action for each kind, in the kinds' order: the merchant's choice, else the default."""
    chosen = dict(UnmatchedPolicy.objects.filter(merchant=merchant).values_list("kind", "action"))
    return {kind: chosen.get(kind, DEFAULT_POLICY[kind]) for kind in UnmatchedKind.values}
