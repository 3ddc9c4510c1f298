"""The fast path of a request serializer, compiled from its declared fields.

A DRF serializer costs a tenth of a millisecond of CPU or more per body (it deep-copies its fields for every instance
and runs each value through several layers). `compile_fast_path(SerializerClass)` walks a body with the same fields
instead, once bound: for each field, its base class's `fast` (the Strict fields' and StrictChoiceField's rules, read
from their own attributes: lengths, bounds, blank, trimming), then its own `clean` (payments.fields.Rule), its
`presence` rule (payments.fields.Presence), nested objects and `many=True` lists with their lengths, required fields and
defaults, the object's `combine` (rules across its fields) and `validate`. It returns what the serializer's
`validated_data` would be, or NOT_SURE for any body it does not find plainly valid, which then goes to the serializer:
the serializer alone writes errors. So a field added to a serializer is checked by both paths at once, and a field
class the walker does not know (neither a `fast` nor a serializer) makes it leave every body that has that field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty

from config.api import NOT_SURE
from payments.fields import Invalid, Presence, Rule

Step = Callable[[Any, Mapping, Mapping], Any]


def compile_fast_path(serializer_class: type[serializers.Serializer]) -> Step:
    """`step(data, context, body)`: the validated data of the body `data` (`body` is the same body, the top level
    the field rules read), or NOT_SURE."""
    return _object_step(serializer_class(context={}))


def _leave(value: Any, context: Mapping, body: Mapping) -> Any:
    return NOT_SURE


def _parts(field: serializers.Field) -> tuple[Callable | None, Step | None, Step | None]:
    """(base, nested, clean) of a field: its base class's `fast(value)`, the step of a nested object or list, its own
    `clean(value, context, body)`; a field with none of them (or `fast_path = False`) is left to the serializer."""
    if not getattr(field, "fast_path", True):
        return None, _leave, None
    if isinstance(field, serializers.ListSerializer):
        return None, _list_step(field), None
    if isinstance(field, serializers.Serializer):
        return None, _object_step(field), None
    base = getattr(field, "fast", None)
    clean = field.clean if isinstance(field, Rule) else None
    if base is None and clean is None:
        return None, _leave, None
    return base, None, clean


def _step(field: serializers.Field) -> Step:
    base, nested, clean = _parts(field)
    if nested is not None:
        return nested

    def step(value: Any, context: Mapping, body: Mapping) -> Any:
        if base is not None:
            value = base(value)
            if value is NOT_SURE:
                return NOT_SURE
        if clean is None:
            return value
        try:
            return clean(value, context, body)
        except Invalid:
            return NOT_SURE

    return step


def _list_step(field: serializers.ListSerializer) -> Step:
    child = _step(field.child)
    low = field.min_length or 0
    high = field.max_length if field.max_length is not None else float("inf")
    allow_empty = field.allow_empty

    def step(data: Any, context: Mapping, body: Mapping) -> Any:
        if type(data) is not list or not low <= len(data) <= high or not (data or allow_empty):
            return NOT_SURE
        items = []
        for item in data:
            value = NOT_SURE if item is None else child(item, context, body)
            if value is NOT_SURE:
                return NOT_SURE
            items.append(value)
        return items

    return step


def _object_step(serializer: serializers.Serializer) -> Step:
    names = frozenset(serializer.fields)
    entries = []
    for name, field in serializer.fields.items():
        if field.read_only or (field.default is not empty and callable(field.default)):
            return _leave  # not in a request body we walk; a computed default: left to the serializer
        presence = field.presence if isinstance(field, Presence) else None
        entries.append((name, *_parts(field), field.required, presence, field.default))
    combine = getattr(serializer, "combine", None)
    validate = serializer.validate

    def step(data: Any, context: Mapping, body: Mapping) -> Any:
        if type(data) is not dict or not data.keys() <= names:  # StrictSerializer: no unknown field
            return NOT_SURE
        attrs: dict = {}
        for name, base, nested, clean, required, presence, default in entries:
            value = data.get(name, empty)
            if presence is not None:
                try:
                    presence(value is not empty, body)
                except Invalid:
                    return NOT_SURE
            if value is empty:
                if default is not empty:
                    attrs[name] = default
                elif required:
                    return NOT_SURE
                continue
            if value is None:  # allow_null is nowhere set
                return NOT_SURE
            if base is not None:
                value = base(value)
                if value is NOT_SURE:
                    return NOT_SURE
            if nested is not None:
                value = nested(value, context, body)
                if value is NOT_SURE:
                    return NOT_SURE
            if clean is not None:
                try:
                    value = clean(value, context, body)
                except Invalid:
                    return NOT_SURE
            attrs[name] = value
        if combine is not None:
            errors: dict = {}
            attrs = combine(data, attrs, errors, context)
            if errors:
                return NOT_SURE
        return validate(attrs)

    return step
