"""Reads of the payments app."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from accounts.models import KycSubmission, Merchant
from config.errors import NotFound
from payments import ledger
from payments.models import AccountKind, LedgerEntry, Payin, Payout, Refund


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


def payin_get(*, merchant: Merchant, livemode: bool, payin_id) -> Payin:
    payin = Payin.objects.filter(pk=payin_id, merchant=merchant, livemode=livemode).first()
    if payin is None:
        raise NotFound("No such charge")
    payin.merchant = merchant
    return payin


def payin_list(*, merchant: Merchant, livemode: bool, status: str | None = None, payment_method: str | None = None,
               reference_id: str | None = None, created_from: datetime | None = None,
               created_to: datetime | None = None) -> QuerySet[Payin]:
    """Scoped to the merchant and mode; each filter has an index beginning (merchant, livemode, filter) and ending
    (created_at, id), so a page costs the same at any depth and with any of them."""
    return _filtered(Payin.objects.filter(merchant=merchant, livemode=livemode), status=status,
                     payment_method=payment_method, reference_id=reference_id, created_at__gte=created_from,
                     created_at__lt=created_to)


def _filtered(queryset: QuerySet, **filters) -> QuerySet:
    """The filters that were given (None means "not filtered")."""
    return queryset.filter(**{name: value for name, value in filters.items() if value is not None})


def refund_list(*, merchant: Merchant, livemode: bool, payin_id) -> list[Refund]:
    payin = payin_get(merchant=merchant, livemode=livemode, payin_id=payin_id)
    return list(Refund.objects.filter(payin=payin).order_by("created_at", "id"))


def statement_lines(*, merchant: Merchant, livemode: bool) -> QuerySet[LedgerEntry]:
    """The merchant's statement: the entries of its `available` and `pending` accounts (SPEC §5)."""
    accounts = ledger.accounts_ensure(merchant=merchant, livemode=livemode)
    ids = [accounts[AccountKind.AVAILABLE].pk, accounts[AccountKind.PENDING].pk]
    return LedgerEntry.objects.filter(account_id__in=ids).select_related("transaction", "account")


def payout_get(*, merchant: Merchant, livemode: bool, payout_id) -> Payout:
    payout = Payout.objects.filter(pk=payout_id, merchant=merchant, livemode=livemode).first()
    if payout is None:
        raise NotFound("No such payout")
    payout.merchant = merchant
    return payout


def payout_list(*, merchant: Merchant, livemode: bool, status: str | None = None, reference_id: str | None = None,
                created_from: datetime | None = None, created_to: datetime | None = None) -> QuerySet[Payout]:
    return _filtered(Payout.objects.filter(merchant=merchant, livemode=livemode), status=status,
                     reference_id=reference_id, created_at__gte=created_from, created_at__lt=created_to)
