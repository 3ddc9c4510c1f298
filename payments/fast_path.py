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

from core.api import NOT_SURE
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
    return _written(entries, names, getattr(serializer, "combine", None), serializer.validate)


def _written(entries: list[tuple], names: frozenset, combine: Callable | None, validate: Callable) -> Step:
    """The step of an object whose fields are `entries` ((name, base, nested, clean, required, presence, default),
    in the serializer's order), written out once as a function of its own: each field's parts in the order below,
    and no test for the parts a field lacks (a loop over the entries testing every part of every field: 11,000
    instructions more per charge body, 184,000 against 173,000). The corpora of
    tests/payments/payins/test_payin_validation_fast_path.py and its payout twin hold it to the serializers."""
    namespace: dict[str, Any] = {"NOT_SURE": NOT_SURE, "empty": empty, "Invalid": Invalid, "names": names,
                                 "combine": combine, "validate": validate}
    lines = ["def step(data, context, body):",
             "    if type(data) is not dict or not data.keys() <= names:  # StrictSerializer: no unknown field",
             "        return NOT_SURE",
             "    attrs = {}",
             "    get = data.get"]
    for n, (name, base, nested, clean, required, presence, default) in enumerate(entries):
        namespace.update({f"base_{n}": base, f"nested_{n}": nested, f"clean_{n}": clean, f"presence_{n}": presence,
                          f"default_{n}": default})
        lines.append(f"    value = get({name!r}, empty)")
        if presence is not None:
            lines += ["    try:", f"        presence_{n}(value is not empty, body)", "    except Invalid:",
                      "        return NOT_SURE"]
        lines.append("    if value is empty:")
        if default is not empty:
            lines.append(f"        attrs[{name!r}] = default_{n}")
        else:
            lines.append("        return NOT_SURE" if required else "        pass")
        lines += ["    else:", "        if value is None:  # allow_null is nowhere set", "            return NOT_SURE"]
        if base is not None:
            lines += [f"        value = base_{n}(value)", "        if value is NOT_SURE:",
                      "            return NOT_SURE"]
        if nested is not None:
            lines += [f"        value = nested_{n}(value, context, body)", "        if value is NOT_SURE:",
                      "            return NOT_SURE"]
        if clean is not None:
            lines += ["        try:", f"            value = clean_{n}(value, context, body)", "        except Invalid:",
                      "            return NOT_SURE"]
        lines.append(f"        attrs[{name!r}] = value")
    if combine is not None:
        lines += ["    errors = {}", "    attrs = combine(data, attrs, errors, context)", "    if errors:",
                  "        return NOT_SURE"]
    lines.append("    return validate(attrs)")
    # The source holds the serializer's field names (written as literals by repr) and numbered names only.
    exec("\n".join(lines), namespace)  # noqa: S102
    return namespace["step"]
