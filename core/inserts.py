"""New rows written all or none with as little machinery as the hot paths can afford.

`Model.save()` compiles its INSERT anew on every call, and a transaction around several of them costs a BEGIN and
a COMMIT round trip on top of one per row: on `POST /payin` that was more than half of the request. Here each
model's INSERT is written once per process, and on PostgreSQL the rows go out as one statement (rows of one model
in one multi-row INSERT, each further model in a data-modifying WITH clause): one round trip, atomic on its own, its
foreign keys checked when it ends, so a charge and its event can be written together without a transaction around
them. Elsewhere (SQLite) the statements run one after another in a transaction. The instances themselves are
made by `new` (Django's positional path) and the statement's values bound by the server (`execute`): Decision 108.

Only for rows whose every value is known before the INSERT (UUID primary keys made in Python, no database
defaults), and no signals are sent: an auto-increment primary key is left to the database and not read back.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import uuid
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, router, transaction
from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.fields import AutoFieldMixin
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute, ForwardManyToOneDescriptor
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init

from core.numbered import NumberedCursor
from core.renderers import plain_json

M = TypeVar("M", bound=Model)

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


class _Plan(NamedTuple):
    """How `new` builds a model's instances, derived from its fields' declarations."""

    template: dict  # "_state", then each concrete field's attname: its default where that is one constant value
    computed: tuple  # (attname, name of the related object or None, default) for defaults made anew on each call
    related: dict  # name of a many-to-one related object: its attname
    names: frozenset  # the keywords `new` builds itself: attnames and related objects' names
    links: dict  # name of a ForeignKey's related object: _Link


class _Link(NamedTuple):
    """What Django's descriptor writes when a ForeignKey's related object is set (`_link`)."""

    model: type[Model]  # the related model (its concrete one)
    pairs: tuple  # (attname here, the related object's attname whose value it takes)
    cache_name: str


# The class attributes through which Django's __init__ writes a field's attname into the instance's __dict__: a plain
# DeferredAttribute (no __set__), or a foreign key's, whose __set__ only clears a related object cached under another
# value (a new instance caches none) before writing the __dict__.
_DICT_WRITTEN = (DeferredAttribute, ForeignKeyDeferredAttribute)


@functools.cache
def _construction(model: type[Model]) -> _Plan | None:
    """For `new`; None when instances are set up by init signal receivers or a field's attribute is another
    descriptor (a file's, say): `new` then calls Django."""
    if pre_init.has_listeners(model) or post_init.has_listeners(model):
        return None
    template: dict = {"_state": None}
    computed, related, links = [], {}, {}
    for field in model._meta.concrete_fields:
        if type(inspect.getattr_static(model, field.attname, None)) not in _DICT_WRITTEN:
            return None
        name = field.name if field.is_relation and field.many_to_one else None
        if name is not None:
            related[name] = field.attname
            if (type(field) is models.ForeignKey and field.remote_field.multiple
                    and type(inspect.getattr_static(model, name)) is ForwardManyToOneDescriptor):
                links[name] = _Link(field.remote_field.model._meta.concrete_model,
                                    tuple((lh.attname, rh.attname) for lh, rh in field.related_fields),
                                    field.cache_name)
        if field.generated:  # never set on a new instance
            continue
        # Django's get_default() returns the same value on every call unless the default is a callable or a
        # database default (a new expression each time): those are called for each instance, the rest kept.
        if field.has_db_default() or (field.has_default() and callable(field.default)):
            template[field.attname] = None  # its place in the instance's attributes, as Django sets them in order
            computed.append((field.attname, name, field.get_default))
        else:
            template[field.attname] = field.get_default()
    return _Plan(template, tuple(computed), related, frozenset(template.keys() - {"_state"} | related.keys()), links)


def declared(model: type[Model]) -> bool:
    """Whether `new` builds the model's instances from its declarations (`_construction`): no init signal
    receivers, every field's attribute written into the instance's __dict__."""
    return _construction(model) is not None


def new(model: type[M], **values: Any) -> M:
    """`model(**values)` for values given by field name (or a foreign key's attname), built from the model's declared
    fields (`_construction`) rather than through `Model.__init__`: on a charge, a fifth of Django's positional path's
    cost. Each field gets its value or, when none is given, its default, as Django's keyword path gives it; a related
    object is set through its descriptor (which type-checks and caches it) after the fields, as Django sets it.
    Anything else (a property's name, both an object and its id, a model whose instances have init signal receivers)
    goes to Django's own `model()`. `tests/test_inserts.py` holds instances made both ways to the same state."""
    plan = _construction(model)
    if plan is None or not plan.names.issuperset(values):
        return model(**values)
    objects = [(name, values[name]) for name in plan.related if name in values]  # in field order, as Django sets them
    attributes = {**plan.template, **values, "_state": ModelState()}
    for name, _ in objects:
        if plan.related[name] in values:  # both the object and its id: Django sets one after the other
            return model(**values)
        del attributes[name]
    for attname, name, default in plan.computed:
        if attname not in values and name not in values:
            attributes[attname] = default()
    instance = model.__new__(model)
    instance.__dict__ = attributes
    for name, obj in objects:
        link = plan.links.get(name)
        if (link is None or type(obj) is not link.model or obj._state.db is None or router.routers
                or instance._state.db not in (None, obj._state.db)):  # objects of two databases: Django refuses
            setattr(instance, name, obj)
        else:
            _link(instance, link, obj)
    return instance


def _link(instance: Model, link: _Link, obj: Model) -> None:
    """`instance.<foreign key> = obj` as Django's descriptor does it for a new instance when no database router is
    configured and `obj` is saved: the instance takes `obj`'s database (the router's answer without routers, and
    the relation it then allows), the key's value from `obj`, and caches `obj`. Each step of the descriptor's
    `__set__` costs a call or two (the routers' lookups, a setattr per key through another descriptor): 20,000
    instructions per object set, against a few hundred here. `tests/test_inserts.py` holds both ways to the same
    instance, and a router configured sends every object to the descriptor."""
    instance._state.db = obj._state.db
    for attname, remote_attname in link.pairs:
        instance.__dict__[attname] = getattr(obj, remote_attname)
    instance._state.fields_cache[link.cache_name] = obj


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
def _plain_types(model: type[Model]) -> tuple:
    """`_plain_type` of each field of the model's INSERT (`_statement`), in its order. Kept by model: a tuple of
    fields as the key would hash every field (a Python method each) on every row."""
    return tuple(_plain_type(field, connections[DEFAULT_DB_ALIAS]) for field in _statement(model)[1])


def _params(obj: Model, real=None) -> list:
    """The values of the object's INSERT (`_statement`), in its order: the attribute itself where Django's conversion
    would return it unchanged, otherwise what `get_db_prep_save` makes of it (a JSON field, a naive datetime, a
    TextChoices member…). `real`: the default connection itself (once per statement, not through the proxy's
    per-thread lookup for every row or field)."""
    real = real or connections[DEFAULT_DB_ALIAS]
    model = type(obj)
    if _construction(model) is not None:  # every attribute lives in the instance's __dict__
        try:
            return _values_written(model, from_dict=True)(obj, real)
        except KeyError:  # an attribute not in the instance (a deferred field): read through Django below
            pass
    return _values_written(model, from_dict=False)(obj, real)


def _json_wrapper(field, connection) -> type | None:
    """The driver's JSON wrapper (psycopg's Jsonb) when Django's conversion of a dict or list for this field is that
    wrapper around the value with the standard library's `json.dumps` and nothing else, found by converting a probe:
    a plain JSONField without an encoder, on PostgreSQL. Else None (SQLite's conversion is JSON text)."""
    if type(field) is not models.JSONField or type(field).pre_save is not models.Field.pre_save:
        return None
    probe: dict = {}
    made, direct = field.get_db_prep_save(probe, connection), connection.ops.adapt_json_value(probe, field.encoder)
    if (type(made) is type(direct) and getattr(made, "obj", None) is probe and getattr(direct, "obj", None) is probe
            and getattr(made, "dumps", None) is json.dumps):
        return type(made)
    return None


def _json_text(value: Any) -> bytes | str:
    """A JSON column's text: orjson's where it writes the standard library's JSON (`core.renderers.plain_json`:
    8.6 µs against 0.7 for a charge's event), else `json.dumps`' own, error and all. PostgreSQL keeps jsonb parsed,
    so only the JSON's meaning reaches the row; it differs only where the standard library wrote what jsonb refuses
    (NaN, Infinity: null here) or raised for a type JSON lacks (a UUID: its text here). Decision 120."""
    return plain_json(value) or json.dumps(value)


@functools.cache
def _values_written(model: type[Model], *, from_dict: bool):
    """`_params` for the model's instances, written out once as a function of its own (`values(obj, real)`): for
    each field of its INSERT, in order, the attribute (read from the instance's __dict__ by name if `from_dict`,
    else through Django's descriptors), sent as it is where it has the field's plain type (`_plain_types`), a dict
    or list of a JSON column wrapped for the driver directly where that is all Django's conversion does
    (`_json_wrapper`, its text written by `_json_text`), anything else converted by `get_db_prep_save`. On a charge
    and its event, 17 µs of a loop over the fields against 9. `tests/test_inserts.py` holds it to Django's
    conversion, both ways of reading."""
    real = connections[DEFAULT_DB_ALIAS]
    namespace: dict[str, Any] = {"datetime": datetime, "json_text": _json_text}
    lines = ["def values(obj, real):", "    attributes = obj.__dict__"]
    fields = _statement(model)[1]
    for n, (field, plain) in enumerate(zip(fields, _plain_types(model), strict=True)):
        namespace[f"field_{n}"], namespace[f"plain_{n}"] = field, plain
        convert = f"field_{n}.get_db_prep_save(field_{n}.pre_save(obj, True), real)"
        if plain is None:
            lines.append(f"    value_{n} = {convert}")
            continue
        aware = f" or value_{n}.utcoffset() is None" if plain is datetime else ""
        read = f"attributes[{field.attname!r}]" if from_dict else f"getattr(obj, {field.attname!r})"
        lines.append(f"    value_{n} = {read}")
        wrapper = _json_wrapper(field, real)
        if wrapper is not None:
            namespace[f"wrapper_{n}"] = wrapper
            lines.append(f"    if type(value_{n}) is dict or type(value_{n}) is list:")
            lines.append(f"        value_{n} = wrapper_{n}(value_{n}, dumps=json_text)")
            lines.append(f"    elif value_{n} is not None:")
        else:
            lines.append(f"    if value_{n} is not None and (type(value_{n}) is not plain_{n}{aware}):")
        lines.append(f"        value_{n} = {convert}")
    lines.append(f"    return [{', '.join(f'value_{n}' for n in range(len(fields)))}]")
    # The source is made of the model's attnames (identifiers, written as literals by repr) and numbered names only.
    exec("\n".join(lines), namespace)  # noqa: S102
    return namespace["values"]


def rows_statement(objs: list[Model]) -> tuple[str, list]:
    """The INSERT of new instances of one model (one VALUES tuple each, in their order) and its values, for
    `insert` and for a caller that extends the statement (an ON CONFLICT clause, RETURNING) and runs it itself."""
    sql = _statement(type(objs[0]))[0]
    values = sql[sql.index(" VALUES ") + len(" VALUES "):]
    real = connections[DEFAULT_DB_ALIAS]
    return sql + (", " + values) * (len(objs) - 1), [value for obj in objs for value in _params(obj, real)]


def execute(sql: str, params: list, *, fetch: bool | str = False) -> tuple | list | None:
    """Run one statement on PostgreSQL with its values bound by the server, and return its first row if `fetch`
    (every row if `fetch == "all"`).

    Django's psycopg cursors bind on the client: each value is quoted into the SQL text in Python (137 µs for the 42
    values of a charge and its event); here the values go apart from the SQL, dumped by psycopg's compiled adapters
    (59 µs). Its placeholders are numbered by `core.numbered`, once per statement: psycopg's own cursor parses a
    statement for its %s anew on every call once it has more than 50 values (it keeps only smaller ones), 113 µs for
    the 55 of a payout against 25 µs to send it numbered. The statement still runs through Django's cursor wrapper
    (its checks, error translation and query log: the tests that count statements see it); only the psycopg cursor
    inside differs. The floor of `bench/floor.py` executes its statements here too, so it stays a floor."""
    with connection.cursor() as cursor:
        client, cursor.cursor = cursor.cursor, NumberedCursor(cursor.cursor.connection)
        client.close()
        cursor.execute(sql, params)
        if fetch == "all":
            return cursor.fetchall()
        return cursor.fetchone() if fetch else None


def plain_position(model: type[Model], attname: str) -> int:
    """Where the field's value sits in each row's values of `rows_statement` (row i's at i × the row's width plus
    this), for a caller that builds the statement first and fills that value in later. Only for a field whose value
    goes to the database as it is (an int in an integer column, say): the value put there is the value sent."""
    fields = _statement(model)[1]
    position = next(n for n, field in enumerate(fields) if field.attname == attname)
    if _plain_types(model)[position] not in _PLAIN_TYPES.values():
        raise ValueError(f"{model.__name__}.{attname} is converted on its way to the database")
    return position


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
    for _, group in itertools.groupby(objs, key=type):
        statements.append(rows_statement(list(group)))
    if then is not None:
        statements.append(then)
    return write(statements, objs, fetch=then is not None)


def write(statements: list[tuple[str, list]], objs: tuple[Model, ...] | list[Model] = (), *, fetch: bool = False):
    """Run statements all or none, as `insert` runs its own: on PostgreSQL as one (each but the last in a WITH
    clause; the last one's first row returned if `fetch`), elsewhere one after another in a transaction; then mark
    `objs`, the new instances whose rows they insert (`rows_statement`), as saved."""
    row = None
    if connection.vendor == "postgresql":
        *first, last = statements
        sql = "WITH " + ", ".join(f"_{n} AS ({s})" for n, (s, _) in enumerate(first)) + " " if first else ""
        row = execute(sql + last[0], [value for _, params in statements for value in params], fetch=fetch)
    else:
        with connection.cursor() as cursor, transaction.atomic():
            for sql, params in statements:
                cursor.execute(sql, params)
    alias = connection.alias  # once: each read through the proxy is a per-thread lookup
    for obj in objs:
        obj._state.adding = False
        obj._state.db = alias
    return row
