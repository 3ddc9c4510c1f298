"""Reads of the payments app."""

from __future__ import annotations

import functools
import uuid
from datetime import datetime

from django.db import connection
from django.db.models import Model, QuerySet, Sum

from accounts.models import KycSubmission, Merchant
from config import readcache
from config.errors import NotFound
from payments import ledger
from payments.models import AccountKind, LedgerEntry, Payin, Payout, PayoutStatus, Refund


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
    payin = _scoped_get(Payin, merchant=merchant, livemode=livemode, pk=payin_id)
    if payin is None:
        raise NotFound("No such charge")
    return payin


def payin_body_get(*, merchant: Merchant, livemode: bool, payin_id: uuid.UUID, freshness: str | None) -> dict:
    """A charge's API body: from this process's read cache while its freshness token (read by the request's
    authentication, before this) is the one it was stored under, else from the database (see config.readcache)."""
    from payments.serializers import payin_serialize

    key = readcache.key("payin", payin_id)
    body = readcache.get(key, freshness, merchant_id=merchant.pk, livemode=livemode)
    if body is None:
        body = payin_serialize(payin_get(merchant=merchant, livemode=livemode, payin_id=payin_id))
        readcache.put(key, freshness, body, merchant_id=merchant.pk, livemode=livemode)
    return body


def _scoped_get(model: type[Model], *, merchant: Merchant, livemode: bool, pk) -> Model | None:
    """`model.objects.filter(pk=pk, merchant=merchant, livemode=livemode).first()`, the hottest read of the API,
    without compiling the same SQL on every request: compiling it cost twice what running it does."""
    sql, names = _scoped_get_sql(model, livemode)
    id_field = model._meta.pk
    values = {"pk": id_field.get_db_prep_value(id_field.to_python(pk), connection),
              "merchant": id_field.get_db_prep_value(merchant.pk, connection), "livemode": livemode}
    rows = list(model.objects.raw(sql, [values[name] for name in names]))
    if not rows:
        return None
    rows[0].merchant = merchant
    return rows[0]


@functools.cache
def _scoped_get_sql(model: type[Model], livemode: bool) -> tuple[str, tuple[str, ...]]:
    """The SQL the ORM writes for that query, and which value each of its placeholders takes (found by compiling it
    once with marker values)."""
    pk_marker, merchant_marker = uuid.UUID(int=1), uuid.UUID(int=2)
    query = model.objects.filter(pk=pk_marker, merchant_id=merchant_marker, livemode=livemode)[:1].query
    sql, params = query.sql_with_params()

    def name_of(param) -> str:
        if isinstance(param, bool) or (param in (0, 1) and not isinstance(param, str | uuid.UUID)):
            return "livemode"
        text = str(param).replace("-", "")
        if text == pk_marker.hex:
            return "pk"
        if text == merchant_marker.hex:
            return "merchant"
        raise ValueError(f"unexpected parameter {param!r} in {sql}")

    return sql, tuple(name_of(param) for param in params)


def payout_day_totals(payouts: QuerySet[Payout]) -> dict[tuple, int]:
    """What these payouts add up to per (merchant id, livemode, São Paulo day), as the daily limit counts them:
    failed and canceled payouts left out (what `PayoutDailyTotal` must hold)."""
    return {(row["merchant_id"], row["livemode"], row["local_date"]): row["total"]
            for row in payouts.exclude(status__in=[PayoutStatus.FAILED, PayoutStatus.CANCELED])
            .values("merchant_id", "livemode", "local_date").annotate(total=Sum("amount"))}


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


def refund_list(*, payin: Payin) -> list[Refund]:
    """A charge's refunds, oldest first (the charge comes from `payin_get`, so it is the caller's own)."""
    return list(Refund.objects.filter(payin=payin).order_by("created_at", "id"))


def statement_lines(*, merchant: Merchant, livemode: bool) -> QuerySet[LedgerEntry]:
    """The merchant's statement: the entries of its `available` and `pending` accounts (SPEC §5)."""
    accounts = ledger.accounts_ensure(merchant=merchant, livemode=livemode)
    ids = [accounts[AccountKind.AVAILABLE].pk, accounts[AccountKind.PENDING].pk]
    return LedgerEntry.objects.filter(account_id__in=ids).select_related("transaction", "account")


def payout_get(*, merchant: Merchant, livemode: bool, payout_id) -> Payout:
    payout = _scoped_get(Payout, merchant=merchant, livemode=livemode, pk=payout_id)
    if payout is None:
        raise NotFound("No such payout")
    return payout


def payout_list(*, merchant: Merchant, livemode: bool, status: str | None = None, reference_id: str | None = None,
                created_from: datetime | None = None, created_to: datetime | None = None) -> QuerySet[Payout]:
    return _filtered(Payout.objects.filter(merchant=merchant, livemode=livemode), status=status,
                     reference_id=reference_id, created_at__gte=created_from, created_at__lt=created_to)
