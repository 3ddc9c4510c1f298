
from __future__ import annotations

from accounts.models import AccountEvent, KycSubmission, Merchant

KYC_HISTORY_ACTIONS = [
    AccountEvent.Action.SIGNED_UP, AccountEvent.Action.KYC_SUBMITTED, AccountEvent.Action.KYC_APPROVED,
    AccountEvent.Action.KYC_REJECTED, AccountEvent.Action.SUSPENDED, AccountEvent.Action.REACTIVATED,
]


def kyc_history(*, merchant: Merchant) -> list[AccountEvent]:
    """What the merchant's KYC page lists: the account's status changes, not staff's fee edits or resends."""
    return list(merchant.account_events.filter(action__in=KYC_HISTORY_ACTIONS).select_related("actor")[:50])


def merchant_display_name(merchant: Merchant) -> str:
    """The name payers see (hosted page, Pix field 59, boleto): the KYC trading name once there is one, else the
    account name."""
    try:
        trading_name = merchant.kyc.trading_name
    except KycSubmission.DoesNotExist:
        trading_name = ""
    return trading_name or merchant.name


def merchant_city(merchant: Merchant, default: str) -> str:
    try:
        city = merchant.kyc.city
    except KycSubmission.DoesNotExist:
        city = ""
    return city or default
