"""Fees per merchant (SPEC §5): the merchant's override where staff set one, else the setting's default.
Percentages are basis points and round half up to the cent; a fee never exceeds the amount."""

from __future__ import annotations

from django.conf import settings

from accounts.models import Merchant
from payments.models import PaymentMethod


def _percent(amount: int, bps: int) -> int:
    return (amount * bps + 5_000) // 10_000  # half up, in integers


def _override(value: int | None, default: int) -> int:
    return default if value is None else value


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


def card_settlement_days(*, merchant: Merchant, livemode: bool) -> int:
    if not livemode:
        return 0
    return _override(merchant.card_settlement_days, settings.CARD_SETTLEMENT_DAYS)
