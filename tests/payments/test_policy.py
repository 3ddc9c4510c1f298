"""Per-merchant policy (payments.policy): one reader of every limit, fee and settlement period, where an override of
0 is a value and only None means the default. The API and the dashboard agree on it."""

from __future__ import annotations

import html

import pytest

from payments import policy
from payments.ledger import services as ledger
from payments.models import Payout
from payments.payouts.validation import payout_request_validate
from tests.factories import MerchantFactory, UserFactory

LIMITS = [("charge_max_amount", "CHARGE_MAX_AMOUNT", policy.charge_max_amount),
          ("payout_max_amount", "PAYOUT_MAX_AMOUNT", policy.payout_max_amount),
          ("payout_daily_max", "PAYOUT_DAILY_MAX", policy.payout_daily_max)]


@pytest.mark.parametrize(("field", "setting", "read"), LIMITS)
def test_a_limit_is_the_merchants_own_else_the_default_and_zero_is_a_limit(db, settings, field, setting, read):
    setattr(settings, setting, 123_456)
    default, zero, own = (MerchantFactory(**{field: value}) for value in (None, 0, 777))

    assert [read(default), read(zero), read(own)] == [123_456, 0, 777]


def test_fees_and_settlement_days_take_zero_as_a_value(db, settings):
    settings.FEE_PIX_BPS, settings.FEE_PAYOUT_FIXED, settings.CARD_SETTLEMENT_DAYS = 99, 50, 30
    free = MerchantFactory(pix_fee_bps=0, payout_fee_fixed=0, card_settlement_days=0)
    default = MerchantFactory()

    assert policy.payin_fee(merchant=free, payment_method="PIX", amount=10_000) == 0
    assert policy.payin_fee(merchant=default, payment_method="PIX", amount=10_000) == 99
    assert [policy.payout_fee(merchant=m, amount=1) for m in (free, default)] == [0, 50]
    assert [policy.card_settlement_days(merchant=m, livemode=True) for m in (free, default)] == [0, 30]
    assert policy.card_settlement_days(merchant=default, livemode=False) == 0


def test_a_payout_limit_of_zero_is_refused_by_the_api_and_shown_by_the_dashboard(api, merchant, client, settings):
    """The API read `is None` and the dashboard `or`: with a limit of 0 the API refused every payout while the
    dashboard's message named the default limit."""
    settings.PAYOUT_MAX_AMOUNT = 5_000_000
    merchant.payout_max_amount = 0
    merchant.save(update_fields=["payout_max_amount"])
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=100_000, reason="Initial funds",
                             staff=UserFactory(is_staff=True))
    body = {"amount": 100, "pixKeyType": "EMAIL", "pixKey": "ana@example.com", "referenceId": "p-1"}
    client.force_login(merchant.owner)

    response = api.post("/payout", body, format="json")
    page = html.unescape(client.post("/dashboard/payouts/new/", {
        "amount": "1,00", "pix_key_type": "EMAIL", "pix_key": "ana@example.com", "beneficiary_name": "",
        "beneficiary_document": "", "description": "", "reference_id": "p-2"}).content.decode())

    assert response.status_code == 400
    assert response.json()["error"]["details"] == [{
        "param": "amount", "code": "payout_limit_exceeded",
        "message": "Must be at most 0 cents, this account's maximum per payout."}]
    assert "At most R$ 0,00 per payout." in page
    assert "R$ 50.000,00" not in page
    with pytest.raises(Exception) as refused:
        payout_request_validate(body, merchant=merchant)
    assert refused.value.code == "payout_limit_exceeded"
    assert not Payout.objects.exists()
