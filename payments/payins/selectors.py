"""Reads of the payments app."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from accounts.models import Merchant
from core import readcache
from core.api import Listing, Rows
from core.errors import NotFound
from payments import rails
from payments.models import Payin, Refund
from payments.payins.errors import RailUnavailable
from payments.payins.read_sql import PayinPages, payin_scoped
from payments.payins.serializers import PAYIN_COLUMNS, REFUND_COLUMNS, payin_serialize
from payments.rails.base import RailError


def payin_get(*, merchant: Merchant, livemode: bool, payin_id) -> Payin:
    payin = payin_scoped(merchant_id=merchant.pk, livemode=livemode, payin_id=payin_id)
    if payin is None:
        raise NotFound("No such charge")
    payin.merchant = merchant  # the caller's own: reading it back would be another query
    return payin


def payin_body_get(*, merchant: Merchant, livemode: bool, payin_id: uuid.UUID, freshness: str | None) -> dict:
    """A charge's API body: from this process's read cache while its freshness token (read by the request's
    authentication, before this) is the one it was stored under, else from the database (see core.readcache)."""
    key = readcache.key("payin", payin_id)
    body = readcache.get(key, freshness, merchant_id=merchant.pk, livemode=livemode)
    if body is None:
        body = payin_serialize(payin_get(merchant=merchant, livemode=livemode, payin_id=payin_id))
        readcache.put(key, freshness, body, merchant_id=merchant.pk, livemode=livemode)
    return body


def payin_rows(*, merchant: Merchant, livemode: bool, status: str | None = None, payment_method: str | None = None,
               reference_id: str | None = None, created_from: datetime | None = None,
               created_to: datetime | None = None) -> Rows:
    """Scoped to the merchant and mode; each filter has an index beginning (merchant, livemode, filter) and ending
    (created_at, id), so a page costs the same at any depth and with any of them. The columns the API body reads,
    for `core.api.paginate`: without a filter (the list integrations poll) in literal SQL, else as a QuerySet."""
    if (status, payment_method, reference_id, created_from, created_to) == (None, None, None, None, None):
        return PayinPages(merchant_id=merchant.pk, livemode=livemode)
    return _payin_listing(merchant=merchant, livemode=livemode, status=status, payment_method=payment_method,
                          reference_id=reference_id, created_from=created_from, created_to=created_to)


def payin_list(**filters: Any) -> QuerySet[Payin]:
    """The charges `payin_rows` lists (same arguments), as model instances."""
    return _payin_listing(**filters).queryset()


def _payin_listing(*, merchant: Merchant, livemode: bool, status: str | None = None,
                   payment_method: str | None = None, reference_id: str | None = None,
                   created_from: datetime | None = None, created_to: datetime | None = None) -> Listing:
    return Listing.of(Payin, PAYIN_COLUMNS, scope={"merchant_id": merchant.pk, "livemode": livemode}, status=status,
                      payment_method=payment_method, reference_id=reference_id, created_at__gte=created_from,
                      created_at__lt=created_to)


def refund_list(*, payin: Payin) -> list[Refund]:
    """A charge's refunds, oldest first (the charge comes from `payin_get`, so it is the caller's own)."""
    return list(Refund.objects.filter(payin=payin).order_by("created_at", "id"))


def payin_refunds(*, payin: Payin) -> Listing:
    """A charge's refunds for `core.api.paginate` (which orders them newest first); a charge has few, found through
    the index on their charge."""
    return Listing.of(Refund, REFUND_COLUMNS, scope={"payin_id": payin.pk})


CARD_BRANDS = ("visa", "mastercard", "amex", "elo", "hipercard")


def installments_get(*, livemode: bool, brand: str, amount: int) -> list[dict]:
    """The rail's installments table for a card of `brand` and `amount` (asked with no transaction open)."""
    try:
        return rails.for_mode(livemode).installments(brand=brand, amount=amount)
    except RailError as exc:
        raise RailUnavailable("The payment network is unavailable; try again.") from exc
