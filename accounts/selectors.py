from __future__ import annotations

from accounts.models import AccountEvent, Merchant


def merchant_of(user) -> Merchant | None:
    """The merchant a logged-in user owns, or None (anonymous visitors and staff-only users)."""
    if not getattr(user, "is_authenticated", False):
        return None
    return Merchant.objects.filter(owner=user).first()


KYC_HISTORY_ACTIONS = [
    AccountEvent.Action.SIGNED_UP, AccountEvent.Action.KYC_SUBMITTED, AccountEvent.Action.KYC_APPROVED,
    AccountEvent.Action.KYC_REJECTED, AccountEvent.Action.SUSPENDED, AccountEvent.Action.REACTIVATED,
]


def kyc_history(*, merchant: Merchant) -> list[AccountEvent]:
    """What the merchant's KYC page lists: the account's status changes, not staff's fee edits or resends."""
    return list(merchant.account_events.filter(action__in=KYC_HISTORY_ACTIONS).select_related("actor")[:50])
