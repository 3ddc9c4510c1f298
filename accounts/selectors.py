from __future__ import annotations

from accounts.models import AccountEvent, Merchant


def merchant_of(user) -> Merchant | None:
    """The merchant a logged-in user owns, or None (anonymous visitors and staff-only users)."""
    if not getattr(user, "is_authenticated", False):
        return None
    return Merchant.objects.filter(owner=user).first()


def kyc_history(*, merchant: Merchant) -> list[AccountEvent]:
    return list(merchant.account_events.select_related("actor")[:50])
