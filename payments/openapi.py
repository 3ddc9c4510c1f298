"""OpenAPI request schemas generated from the request serializers, so that a field is declared once.

A body whose rules depend on its own values (a payment method, a Pix key type) is documented as `oneOf` variants, one
per value: `request_variant` builds each from the request serializer's declared fields as the rules of that field
value (`body`) have them. A field whose `allowed_for(body)` is false there is left out; one whose `required_for(body)`
is true there is required (the presence rules of payments.payins.fields); a field with `documented(body, required)`
documents itself for that body (its bounds or pattern depend on it); any other field documents itself (its class:
DRF's mapping of its base class, or its `openapi_schema()`). Nested objects and lists become variants of their own
(named by their serializer's `doc_name`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rest_framework import serializers

from core.api import StrictSerializer

_VARIANTS: dict[str, type[StrictSerializer]] = {}


def request_variant(source: type[serializers.Serializer], name: str, *, doc: str | None = None,
                    body: Mapping | None = None, only: Iterable[str] | None = None, required: Iterable[str] = (),
                    replace: Mapping[str, serializers.Field] | None = None,
                    first: Iterable[str] = ()) -> type[StrictSerializer]:
    """The documentation serializer `name` (its component's name) of `source`'s body when it holds `body`.

    `only`: the fields to keep (all by default); `required`: fields required beyond the declaration's (a rule across
    fields, such as a card token or the card's data); `replace`: fields documented otherwise (a value fixed for the
    variant, a union of shapes); `first`: the fields listed first, in this order, the others following in
    declaration order. Made once per name.
    """
    if name in _VARIANTS:
        assert _VARIANTS[name].__module__ == source.__module__, f"two request variants named {name}"
        return _VARIANTS[name]
    body = body or {}
    replace = replace or {}
    required = set(required)
    fields: dict[str, serializers.Field] = {}
    for field_name, field in source._declared_fields.items():
        if only is not None and field_name not in only:
            continue
        allowed_for = getattr(field, "allowed_for", None)
        if allowed_for is not None and not allowed_for(body):
            continue
        required_for = getattr(field, "required_for", None)
        is_required = field.required or field_name in required or (required_for is not None and required_for(body))
        fields[field_name] = replace[field_name] if field_name in replace else _documented(field, body, is_required)
    first = [field_name for field_name in first if field_name in fields]
    ordered = {**{field_name: fields[field_name] for field_name in first}, **fields}
    variant = type(name, (StrictSerializer,), {"__doc__": doc, "__module__": source.__module__, **ordered})
    variant._declared_fields = ordered  # in this order (DRF's metaclass sorts fields by their creation)
    _VARIANTS[name] = variant
    return variant


def _documented(field: serializers.Field, body: Mapping, required: bool) -> serializers.Field:
    kwargs: dict[str, Any] = {} if required else {"required": False}
    if isinstance(field, serializers.ListSerializer):
        child = _nested(type(field.child))
        return child(many=True, min_length=field.min_length, max_length=field.max_length, **kwargs)
    if isinstance(field, serializers.Serializer):
        return _nested(type(field))(**kwargs)
    documented = getattr(field, "documented", None)
    if documented is not None:
        return documented(body, required)
    return type(field)(*field._args, **{**field._kwargs, "required": required})


def _nested(source: type[serializers.Serializer]) -> type[StrictSerializer]:
    return request_variant(source, source.doc_name)  # type: ignore[attr-defined]
