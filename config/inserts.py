"""New rows written all or none with as little machinery as the hot paths can afford.

`Model.save()` compiles its INSERT anew on every call, and a transaction around several of them costs a BEGIN and
a COMMIT round trip on top of one per row: on `POST /payin` that was more than half of the request. Here each
model's INSERT is written once per process, and on PostgreSQL the rows go out as one statement (rows of one model
in one multi-row INSERT, each further model in a data-modifying WITH clause): one round trip, atomic on its own, its
foreign keys checked when it ends, so a charge and its event can be written together without a transaction around
them. Elsewhere (SQLite) the statements run one after another in a transaction.

Only for rows whose every value is known before the INSERT (UUID primary keys made in Python, no database
defaults), and no signals are sent: an auto-increment primary key is left to the database and not read back.
"""

from __future__ import annotations

import functools
import itertools
import uuid

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models import Model
from django.db.models.fields import AutoFieldMixin

# Fields whose database value is the attribute itself when the attribute has exactly this type: what
# `get_db_prep_save` would return after its checks and conversions. Only these exact classes (a subclass may convert
# differently), and only with that exact type (a TextChoices member, a bool in an integer column, a naive datetime go
# through Django's conversion as before).
_PLAIN_TYPES: dict[type, type] = {
    models.CharField: str, models.TextField: str, models.BooleanField: bool, models.IntegerField: int,
    models.BigIntegerField: int, models.SmallIntegerField: int, models.PositiveIntegerField: int,
    models.PositiveBigIntegerField: int, models.PositiveSmallIntegerField: int, models.AutoField: int,
    models.BigAutoField: int, models.SmallAutoField: int,
}


@functools.cache
def _statement(model: type[Model]) -> tuple[str, tuple]:
    """`INSERT INTO table (columns) VALUES (%s, …)` and the fields whose values fill it, in order."""
    fields = tuple(field for field in model._meta.concrete_fields if not isinstance(field, AutoFieldMixin))
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    # Table and column names from the model (quoted), placeholders for every value: nothing from a request.
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})", fields  # noqa: S608


def _plain_type(field, vendor_has_native_uuid: bool) -> type | None:
    if isinstance(field, models.ForeignKey):
        return _plain_type(field.target_field, vendor_has_native_uuid)
    if type(field) is models.UUIDField:
        return uuid.UUID if vendor_has_native_uuid else None
    return _PLAIN_TYPES.get(type(field))


@functools.cache
def _plain_types(fields: tuple) -> tuple:
    native_uuid = connection.features.has_native_uuid_field
    return tuple(_plain_type(field, native_uuid) for field in fields)


def _params(obj: Model, fields: tuple) -> list:
    """Each field's database value: the attribute itself where Django's conversion would return it unchanged,
    otherwise what `get_db_prep_save` makes of it (a JSON field, a datetime, a TextChoices member…)."""
    real = connections[DEFAULT_DB_ALIAS]  # once, not through the proxy's per-thread lookup for every field
    values = []
    for field, plain in zip(fields, _plain_types(fields), strict=True):
        value = getattr(obj, field.attname)
        if plain is None or (value is not None and type(value) is not plain):
            value = field.get_db_prep_save(field.pre_save(obj, True), real)
        values.append(value)
    return values


def insert(*objs: Model, before: tuple[tuple[str, list], ...] = (), then: tuple[str, list] | None = None):
    """INSERT these new model instances, all of them or none, in this order (parents before their children).

    `before`: statements (SQL with %s placeholders, and their values) that run with them, first, all or none: an
    UPDATE whose outcome the caller already knows (it holds the row locks) and does not read back.
    `then` (PostgreSQL only): a query that is the statement's main one, its first row returned. It runs *before* the
    INSERTs (a data-modifying WITH clause nobody reads runs after the main query), and an error it raises aborts
    them: a decision that refuses what the rows would record (payments.payouts.services).
    """
    if then is not None and connection.vendor != "postgresql":
        raise ValueError("`then` needs PostgreSQL's WITH clauses")
    statements = list(before)
    # Rows of one model that follow each other go in one INSERT, in order: the statements of a WITH clause run in no
    # set order, and auto-increment ids must follow the order given (ledger entries are read back in id order).
    for model, group in itertools.groupby(objs, key=type):
        group = list(group)
        sql, fields = _statement(model)
        values = sql[sql.index(" VALUES ") + len(" VALUES "):]
        statements.append((sql + (", " + values) * (len(group) - 1),
                           [value for obj in group for value in _params(obj, fields)]))
    if then is not None:
        statements.append(then)
    row = None
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            *first, last = statements
            sql = "WITH " + ", ".join(f"_{n} AS ({s})" for n, (s, _) in enumerate(first)) + " " if first else ""
            cursor.execute(sql + last[0], [value for _, params in statements for value in params])
            if then is not None:
                row = cursor.fetchone()
        else:
            with transaction.atomic():
                for sql, params in statements:
                    cursor.execute(sql, params)
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias
    return row
