"""The API's renderer writes what DRF's JSONRenderer writes, byte for byte (core/renderers.py)."""

from __future__ import annotations

import uuid
from collections import OrderedDict
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.db.models import IntegerChoices, TextChoices
from django.test import Client
from django.utils.translation import gettext_lazy
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ErrorDetail
from rest_framework.renderers import JSONRenderer

from core.renderers import ApiJSONRenderer


class Status(TextChoices):
    PAID = "PAID"


class Level(IntegerChoices):
    HIGH = 3


def both(data, media_type="application/json", context=None):
    return ApiJSONRenderer().render(data, media_type, context), JSONRenderer().render(data, media_type, context)


BODIES = [
    None,
    {},
    [],
    {"id": "0192", "amount": 10_000, "livemode": False, "paidAt": None, "items": [{"title": "Caneca", "quantity": 1}]},
    {"text": "Olá, São Paulo: ação, ônibus, 日本, 😀", "escapes": "quote \" backslash \\ \n\r\t\b\f \x00 \x1f \x7f"},
    {"js": "line\u2028separator\u2029paragraph", "\u2028key": ["\u2029"]},
    {"big": 2**63 - 1, "small": -(2**63), "huge": 2**64 + 5, "negative_huge": -(2**70)},
    {"ordered": OrderedDict([("z", 1), ("a", 2)]), "tuple": (1, "two", None), "nested": [[[{"deep": True}]]]},
    {"uuid": uuid.UUID("01939e4b-7c1a-7d2e-8f00-0123456789ab"), "status": Status.PAID, "level": Level.HIGH},
    {"detail": ErrorDetail("This field is required.", code="required"), "lazy": gettext_lazy("Payments")},
    {"when": datetime(2026, 11, 28, 12, 30, 45, 123456, tzinfo=UTC), "day": date(2026, 11, 28)},
    {"decimal": Decimal("10.50"), "bytes": b"raw", "generator": (n for n in [])},
    {1: "integer key", None: "null key"},
    {"set": sorted({3, 1, 2})},
]


@pytest.mark.parametrize("data", BODIES)
def test_every_kind_of_body_is_written_as_drf_writes_it(data):
    ours, drf = both(data)

    assert ours == drf


def test_an_indented_rendering_is_drfs():
    data = {"a": [1, {"b": "ç"}]}

    assert both(data, "application/json; indent=4") == (JSONRenderer().render(data, "application/json; indent=4"),) * 2
    assert b"\n    " in ApiJSONRenderer().render(data, "application/json; indent=4")


def test_a_value_only_drf_can_write_still_fails_as_in_drf():
    with pytest.raises(TypeError):
        JSONRenderer().render({"object": object()})
    with pytest.raises(TypeError):
        ApiJSONRenderer().render({"object": object()})


_keys = st.text(max_size=8)
_scalars = st.none() | st.booleans() | st.integers() | st.text()
_bodies = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_keys, inner, max_size=5),
                       max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(_bodies)
def test_drawn_bodies_are_written_as_drf_writes_them(data):
    try:
        drf = JSONRenderer().render(data, "application/json")
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 body exists, and ours refuses it too
        with pytest.raises(UnicodeEncodeError):
            ApiJSONRenderer().render(data, "application/json")
        return
    assert ApiJSONRenderer().render(data, "application/json") == drf


def test_the_api_schema_has_no_number_but_integers(db):
    # The fast path is byte-identical for every JSON type but floats (orjson writes 1e16 where Python writes 1e+16):
    # the API answers with none, as its schema says.
    schema = Client().get("/openapi.json").json()

    def types(node):
        if isinstance(node, dict):
            kind = node.get("type")
            if isinstance(kind, str | list):  # not a property called "type"
                yield from [kind] if isinstance(kind, str) else kind
            for value in node.values():
                yield from types(value)
        elif isinstance(node, list):
            for value in node:
                yield from types(value)

    found = set(types(schema))
    assert "integer" in found and "number" not in found
