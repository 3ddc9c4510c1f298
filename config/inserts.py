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
from datetime import UTC, datetime

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.backends.postgresql.base import ServerBindingCursor
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


def _plain_type(field, connection) -> type | None:
    """The type whose values (and None) this field sends to the database unchanged, or None.

    Beyond the exact classes above, derived from what Django does here: a field whose `pre_save` only reads the
    attribute and whose conversion returns a probe itself (an aware datetime on PostgreSQL, which psycopg takes as
    it is) takes values of the probe's type as they are, aware ones only (`_params`); one that keeps only None
    (a JSON field, a date, an IP address) gets `NoneType`, so any other value goes through the conversion."""
    if isinstance(field, models.ForeignKey):
        return _plain_type(field.target_field, connection)
    if type(field) is models.UUIDField:
        return uuid.UUID if connection.features.has_native_uuid_field else None
    if type(field) in _PLAIN_TYPES:
        return _PLAIN_TYPES[type(field)]
    if not (type(field).pre_save is models.Field.pre_save or (
            isinstance(field, models.DateField) and not field.auto_now and not field.auto_now_add)):
        return None  # pre_save may write the attribute (auto_now, a file's commit)
    probe = datetime.now(UTC)
    if type(field) is models.DateTimeField and field.get_db_prep_save(probe, connection) is probe:
        return datetime
    return type(None) if field.get_db_prep_save(None, connection) is None else None


@functools.cache
def _plain_types(fields: tuple) -> tuple:
    return tuple(_plain_type(field, connections[DEFAULT_DB_ALIAS]) for field in fields)


def _params(obj: Model, fields: tuple) -> list:
    """Each field's database value: the attribute itself where Django's conversion would return it unchanged,
    otherwise what `get_db_prep_save` makes of it (a JSON field, a naive datetime, a TextChoices member…)."""
    real = connections[DEFAULT_DB_ALIAS]  # once, not through the proxy's per-thread lookup for every field
    values = []
    for field, plain in zip(fields, _plain_types(fields), strict=True):
        value = getattr(obj, field.attname)
        if plain is None or (value is not None and (
                type(value) is not plain or (plain is datetime and value.utcoffset() is None))):
            value = field.get_db_prep_save(field.pre_save(obj, True), real)
        values.append(value)
    return values


def execute(sql: str, params: list, *, fetch: bool = False) -> tuple | None:
    """Run one statement on PostgreSQL with its values bound by the server, and return its first row if `fetch`.

    Django's psycopg cursors bind on the client: each value is quoted into the SQL text in Python, about half of what
    executing a charge and its event cost the web process (42 values). psycopg's server-binding cursor sends them
    apart, dumped by its compiled adapters. The statement still runs through Django's cursor wrapper (its checks,
    error translation and query log: the tests that count statements see it); only the psycopg cursor inside differs.
    The floor of `bench/floor.py` executes its statements here too, so it stays a floor."""
    with connection.cursor() as cursor:
        client, cursor.cursor = cursor.cursor, ServerBindingCursor(cursor.cursor.connection)
        client.close()
        cursor.execute(sql, params)
        return cursor.fetchone() if fetch else None


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
    if connection.vendor == "postgresql":
        *first, last = statements
        sql = "WITH " + ", ".join(f"_{n} AS ({s})" for n, (s, _) in enumerate(first)) + " " if first else ""
        row = execute(sql + last[0], [value for _, params in statements for value in params], fetch=then is not None)
    else:
        with connection.cursor() as cursor, transaction.atomic():
            for sql, params in statements:
                cursor.execute(sql, params)
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias
    return row
