"""Fees (SPEC §5), staff's overrides and balance adjustments in the admin, and the demo activity of `seed_demo`."""

import json
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command

from payments import policy
from payments.ledger.selectors import balance_get
from payments.models import BalanceAdjustment, LedgerEntry, Payin, Payout
from tests.factories import MerchantFactory, UserFactory


@pytest.mark.parametrize(("method", "amount", "fee"), [
    ("PIX", 100, 1),  # 0.99 -> 1
    ("PIX", 10_000, 99),
    ("PIX", 10_050, 99),  # 99.495 -> 99
    ("PIX", 10_051, 100),  # 99.5049 -> 100 (half up)
    ("PIX", 150, 1),  # 1.485 -> 1
    ("PIX", 5_051, 50),  # 50.0049 -> 50
    ("CREDIT_CARD", 100, 43),  # 3.99 -> 4, + 39
    ("CREDIT_CARD", 10_000, 438),
    ("CREDIT_CARD", 12_345, 532),  # 492.5655 -> 493, + 39
    ("BOLETO", 500, 349),
    ("BOLETO", 1_000_000, 349),
])
def test_default_fees_round_half_up_to_the_cent(method, amount, fee):
    merchant = MerchantFactory.build()
    assert policy.payin_fee(merchant=merchant, payment_method=method, amount=amount) == fee


def test_a_fee_never_exceeds_the_amount():
    merchant = MerchantFactory.build(boleto_fee_fixed=100_000, card_fee_fixed=5_000)
    assert policy.payin_fee(merchant=merchant, payment_method="BOLETO", amount=500) == 500
    assert policy.payin_fee(merchant=merchant, payment_method="CREDIT_CARD", amount=100) == 100


def test_merchant_overrides_replace_the_defaults_and_zero_is_an_override():
    merchant = MerchantFactory.build(pix_fee_bps=0, card_fee_bps=250, card_fee_fixed=0, boleto_fee_fixed=200,
                                     payout_fee_fixed=15, card_settlement_days=2)
    assert policy.payin_fee(merchant=merchant, payment_method="PIX", amount=10_000) == 0
    assert policy.payin_fee(merchant=merchant, payment_method="CREDIT_CARD", amount=10_000) == 250
    assert policy.payin_fee(merchant=merchant, payment_method="BOLETO", amount=10_000) == 200
    assert policy.payout_fee(merchant=merchant, amount=10_000) == 15
    assert policy.card_settlement_days(merchant=merchant, livemode=True) == 2
    assert policy.card_settlement_days(merchant=merchant, livemode=False) == 0


def test_settings_defaults_apply_when_there_is_no_override(settings):
    settings.FEE_PIX_BPS = 150
    settings.CARD_SETTLEMENT_DAYS = 14
    merchant = MerchantFactory.build()
    assert policy.payin_fee(merchant=merchant, payment_method="PIX", amount=10_000) == 150
    assert policy.card_settlement_days(merchant=merchant, livemode=True) == 14


@pytest.fixture
def admin_client(client, db):
    staff = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(staff)
    client.staff = staff
    return client


def test_staff_edit_fees_in_the_admin_and_the_api_sees_them_at_once(admin_client, api, test_key):
    merchant = test_key[0].merchant
    api.get("/account")  # the key pair and its merchant are now in the web process's cache
    page = admin_client.get(f"/admin/accounts/merchant/{merchant.pk}/change/")
    assert page.status_code == 200
    assert b"Fees and limits" in page.content and b"pix_fee_bps" in page.content

    response = admin_client.post(f"/admin/accounts/merchant/{merchant.pk}/change/", {
        "name": merchant.name, "api_rate_limit": "", "pix_fee_bps": "50", "card_fee_bps": "", "card_fee_fixed": "",
        "boleto_fee_fixed": "", "payout_fee_fixed": "", "charge_max_amount": "", "payout_max_amount": "",
        "payout_daily_max": "", "card_settlement_days": "",
        "kyc-TOTAL_FORMS": "0", "kyc-INITIAL_FORMS": "0", "account_events-TOTAL_FORMS": "0",
        "account_events-INITIAL_FORMS": "0",
    })
    assert response.status_code == 302, response.content[:2000]
    merchant.refresh_from_db()
    assert merchant.pix_fee_bps == 50 and merchant.card_fee_bps is None
    charge = api.post("/payin", {
        "paymentMethod": "PIX", "amount": 10_000, "referenceId": "r-1", "payerIp": "203.0.113.1",
        "isPhysicalProduct": False, "customer": {"name": "Ana", "document": "52998224725", "email": "a@example.com"},
        "items": [{"title": "x", "quantity": 1, "unitPrice": 10_000}]}, format="json").json()
    assert (charge["fee"], charge["netAmount"]) == (50, 9_950)  # the API reloaded the merchant with its new fee


def test_a_staff_adjustment_is_a_ledger_movement_in_the_statement(admin_client, api, test_key):
    merchant = test_key[0].merchant
    response = admin_client.post("/admin/payments/balanceadjustment/add/", {
        "merchant": str(merchant.pk), "livemode": "", "amount": "-2500", "reason": "Goodwill reversal #42"})
    assert response.status_code == 302, response.content[:2000]

    adjustment = BalanceAdjustment.objects.get()
    assert (adjustment.amount, adjustment.reason, adjustment.created_by) == (-2500, "Goodwill reversal #42",
                                                                            admin_client.staff)
    assert balance_get(merchant=merchant, livemode=False).available == -2500
    line = api.get("/balance/transactions").json()["data"][0]
    assert line == {"id": line["id"], "type": "adjustment", "amount": -2500, "balanceAfter": -2500,
                    "balance": "available", "objectType": "adjustment", "objectId": str(adjustment.pk),
                    "referenceId": None, "description": "Goodwill reversal #42", "createdAt": line["createdAt"]}
    # Adjustments are never edited or deleted: a wrong one is corrected by another.
    change = admin_client.post(f"/admin/payments/balanceadjustment/{adjustment.pk}/change/", {
        "merchant": str(merchant.pk), "livemode": "", "amount": "9999", "reason": "edited"})
    assert change.status_code == 403
    assert admin_client.post(f"/admin/payments/balanceadjustment/{adjustment.pk}/delete/",
                             {"post": "yes"}).status_code == 403
    assert BalanceAdjustment.objects.get().amount == -2500
    assert LedgerEntry.objects.filter(line_type="adjustment").count() == 2


def test_an_adjustment_needs_a_non_zero_amount(admin_client, merchant):
    response = admin_client.post("/admin/payments/balanceadjustment/add/", {
        "merchant": str(merchant.pk), "livemode": "", "amount": "0", "reason": "nothing"})
    assert response.status_code == 200  # the form again, with its error
    assert not BalanceAdjustment.objects.exists()


def test_charges_are_read_only_in_the_admin(admin_client, api):
    api.post("/payin", {
        "paymentMethod": "PIX", "amount": 1000, "referenceId": "r-1", "payerIp": "203.0.113.1",
        "isPhysicalProduct": False, "customer": {"name": "Ana", "document": "52998224725", "email": "a@example.com"},
        "items": [{"title": "x", "quantity": 1, "unitPrice": 1000}]}, format="json")
    payin = Payin.objects.get()
    page = admin_client.get(f"/admin/payments/payin/{payin.pk}/change/")
    assert page.status_code == 200
    assert payin.public_token.encode() not in page.content
    assert admin_client.get("/admin/payments/payin/add/").status_code == 403


@pytest.mark.django_db
def test_seed_demo_creates_charges_in_each_status_once():
    call_command("seed_demo", "--json", "--force", stdout=StringIO())
    out = StringIO()
    call_command("seed_demo", "--json", "--force", stdout=out)
    json.loads(out.getvalue())

    statuses = Counter(Payin.objects.values_list("status", flat=True))
    assert statuses == {"PENDING": 2, "PAID": 3, "EXPIRED": 1, "CANCELED": 1, "FAILED": 1,
                        "PARTIALLY_REFUNDED": 1, "REFUNDED": 1, "CHARGEBACK": 1}
    assert set(Payin.objects.values_list("payment_method", flat=True)) == {"PIX", "BOLETO", "CREDIT_CARD"}
    assert sorted(Payout.objects.values_list("status", flat=True)) == ["COMPLETED", "FAILED"]
