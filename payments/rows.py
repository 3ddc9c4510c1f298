"""Row access shared by charges and payouts: a row locked for a transition, the hottest scoped read, list filters."""

from __future__ import annotations

import functools
import logging
import uuid

from django.db import connection
from django.db.models import Model, QuerySet

from accounts.models import Merchant
from core.errors import NotFound

logger = logging.getLogger(__name__)


def row_locked(model: type[Model], pk, *, merchant: Merchant | None, livemode: bool | None, missing: str):
    """A charge or payout row, locked for this transaction (scoped to the merchant and mode when given, else 404).
    Only the row itself: `of=("self",)` keeps the joined merchant row unlocked, which inserts referencing the
    merchant (FOR KEY SHARE) would otherwise wait on, in a cycle with the ledger locks."""
    queryset = model.objects.select_for_update(of=("self",)).select_related("merchant")
    if merchant is not None:
        queryset = queryset.filter(merchant=merchant, livemode=livemode)
    row = queryset.filter(pk=pk).first()
    if row is None:
        raise NotFound(missing)
    return row


def scoped_get(model: type[Model], *, merchant: Merchant, livemode: bool, pk) -> Model | None:
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


def filtered(queryset: QuerySet, **filters) -> QuerySet:
    """The filters that were given (None means "not filtered")."""
    return queryset.filter(**{name: value for name, value in filters.items() if value is not None})
