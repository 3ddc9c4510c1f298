"""Rows read back as model instances, built from the models' declarations (the worker's payouts, the simulator's
books): what a raw query gives, without its per-call work."""

from __future__ import annotations

import functools
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models.base import ModelState

from core import inserts

M = TypeVar("M", bound=Model)


def returned(model: type[M], sql: str, params: list) -> M | None:
    """The instance made of the first row of a statement that answers every concrete column of `model` in field
    order (an INSERT or UPDATE … RETURNING them, a SELECT of them), or None when it answers no row: what
    `next(iter(model.objects.raw(sql, params)), None)` gives, without the raw query's per-call work (its column
    map, field lookups and converters, found again on every call: a millisecond of the worker's CPU per payout
    on the simulator's books). On PostgreSQL the values are bound by the server (`core.inserts.execute`);
    elsewhere Django's cursor runs the statement. `tests/test_inserts.py` holds both ways to the same instances."""
    found = returned_all(model, sql, params)
    return found[0] if found else None


def returned_all(model: type[M], sql: str, params: list, *, extra: tuple[str, ...] = ()) -> list[M]:
    """`returned` for every row the statement answers, in its order. `extra`: the names of columns the statement
    answers after the model's, each set on the instance as it comes (a raw query's annotations)."""
    if connection.vendor == "postgresql":
        rows = inserts.execute(sql, params, fetch="all")
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
    converters = _converters(model)
    width = len(model._meta.concrete_fields)
    make = _loader(model, connection.alias)
    instances = []
    for row in rows:
        values = list(row[:width])
        for position, field_converters, column in converters:
            for converter in field_converters:
                values[position] = converter(values[position], column, connection)
        instance = make(values)
        for name, value in zip(extra, row[width:], strict=True):
            setattr(instance, name, value)
        instances.append(instance)
    return instances


@functools.cache
def _loader(model: type[M], alias: str):
    """What makes an instance of a row's values (every concrete field's, in field order): `model.from_db`, or, for a
    model `new` builds from its declarations and whose `from_db` is Django's, the same instance made by filling its
    attributes at once: Django's positional `__init__` writes each value through the field's class attribute (a
    plain one, or a foreign key's whose __set__ only clears a cached related object, which a new instance has none
    of), then `from_db` marks it as loaded from `alias`. On the worker's payouts, Django's way was a third of its
    CPU per payout. `tests/test_inserts.py` holds both ways to the same instances."""
    if not inserts.declared(model) or model.from_db.__func__ is not Model.from_db.__func__:
        return functools.partial(model.from_db, alias, None)
    attnames = tuple(field.attname for field in model._meta.concrete_fields)
    new_object = model.__new__

    def make(values: list) -> M:
        state = ModelState()
        state.adding, state.db = False, alias
        instance = new_object(model)
        instance.__dict__ = {"_state": state, **dict(zip(attnames, values, strict=True))}
        return instance

    return make


@functools.cache
def _converters(model: type[Model]) -> tuple:
    """(position, converters, column) of each concrete field whose database value Django converts when it reads a
    row (a JSON field; a datetime on SQLite), as a queryset's compiler finds them."""
    real = connections[DEFAULT_DB_ALIAS]
    found = []
    for position, field in enumerate(model._meta.concrete_fields):
        column = field.get_col(model._meta.db_table)
        converters = real.ops.get_db_converters(column) + column.get_db_converters(real)
        if converters:
            found.append((position, tuple(converters), column))
    return tuple(found)
