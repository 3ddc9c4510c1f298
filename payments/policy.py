"""Per-merchant policy (SPEC §5): fees, amount limits and card settlement days. The one place that reads them.

Each is the merchant's override where staff set one, else the setting's default. An override of 0 is a real value
(a payout limit of 0 refuses every payout; a fee of 0 charges nothing): only None means "use the default".
Percentages are basis points and round half up to the cent; a fee never exceeds the amount."""

from __future__ import annotations

from django.conf import settings

from accounts.models import Merchant
from payments.models import PaymentMethod


def _percent(amount: int, bps: int) -> int:
    return (amount * bps + 5_000) // 10_000  # half up, in integers


def _override(value: int | None, default: int) -> int:
    return default if value is None else value


# --- Fees ------------------------------------------------------------------------------------------------------------
def payin_fee(*, merchant: Merchant, payment_method: str, amount: int) -> int:
    if payment_method == PaymentMethod.PIX:
        fee = _percent(amount, _override(merchant.pix_fee_bps, settings.FEE_PIX_BPS))
    elif payment_method == PaymentMethod.CREDIT_CARD:
        fee = (_percent(amount, _override(merchant.card_fee_bps, settings.FEE_CARD_BPS))
               + _override(merchant.card_fee_fixed, settings.FEE_CARD_FIXED))
    else:
        fee = _override(merchant.boleto_fee_fixed, settings.FEE_BOLETO_FIXED)
    return min(fee, amount)


def payout_fee(*, merchant: Merchant, amount: int) -> int:
    return _override(merchant.payout_fee_fixed, settings.FEE_PAYOUT_FIXED)


# --- Limits ----------------------------------------------------------------------------------------------------------
def charge_max_amount(merchant: Merchant) -> int:
    """The largest charge, in cents."""
    return _override(merchant.charge_max_amount, settings.CHARGE_MAX_AMOUNT)


def payout_max_amount(merchant: Merchant) -> int:
    """The largest payout, in cents."""
    return _override(merchant.payout_max_amount, settings.PAYOUT_MAX_AMOUNT)


def payout_daily_max(merchant: Merchant) -> int:
    """What the day's payouts (America/Sao_Paulo) may add up to, in cents."""
    return _override(merchant.payout_daily_max, settings.PAYOUT_DAILY_MAX)


# --- Settlement ------------------------------------------------------------------------------------------------------
def card_settlement_days(*, merchant: Merchant, livemode: bool) -> int:
    """Days a live card charge's money waits in `pending`; test mode settles at once."""
    if not livemode:
        return 0
    return _override(merchant.card_settlement_days, settings.CARD_SETTLEMENT_DAYS)


# --- Live boletos ----------------------------------------------------------------------------------------------------
def boleto_fine_bps(merchant: Merchant) -> int:
    """boletoFine: the fine of a late live boleto, in basis points of its amount (0: none)."""
    return _override(merchant.boleto_fine_bps, settings.BOLETO_FINE_BPS)


def boleto_interest_bps(merchant: Merchant) -> int:
    """boletoInterest: the interest of a late live boleto, in basis points of its amount a month (0: none)."""
    return _override(merchant.boleto_interest_bps, settings.BOLETO_INTEREST_BPS)
