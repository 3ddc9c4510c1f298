"""core.decoding.json_value reads what Django's JSONField reads, type for type: orjson for the usual document,
Django's own reader for one orjson would read otherwise (a run of 19 or more digits: an integer beyond 64 bits) or
refuses."""

import json
from types import SimpleNamespace

import pytest
from django.db import connection

from core.decoding import json_value
from payments.models import Payin


def typed(value):
    """The value with every number tagged by its type: 1 and 1.0 compare equal, a float where an int was does not."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize("text", [
    "{}", "[]", "null", '"text"', "12",
    '{"name": "Ana Souza", "document": "52998224725", "phone": null}',
    '[{"title": "Caneca", "quantity": 2, "unitPrice": 2500}]',
    '{"n": 123456789012345678}',  # 18 digits: orjson's int
    '{"n": 9223372036854775807, "m": -9223372036854775808}',  # the 64-bit bounds
    '{"n": 9223372036854775808}',  # 19 digits, beyond a signed 64-bit integer
    '{"n": 18446744073709551616}',  # 2**64
    '{"n": -1180591620717411303424}',  # -(2**70)
    '{"n": 1180591620717411303424.5, "e": 1e400}',  # a float orjson refuses (1e400)
    '{"s": "1234567890123456789"}',  # 19 digits in a string: read by Django's own, the same value
    '{"s": "\u0661\u0662\u0663", "t": "S\u00e3o \\u2028 \\"x\\""}',  # unicode digits and escapes
    '{"n": NaN}',  # json takes it, orjson refuses it
])
def test_reads_what_django_reads(text):
    field = Payin._meta.get_field("metadata")
    expression = SimpleNamespace(output_field=field)

    value = json_value(text, expression, connection)

    assert typed(value) == typed(field.from_db_value(text, expression, connection)) == typed(json.loads(text))


def test_a_value_that_is_not_text_is_read_by_django():
    field = Payin._meta.get_field("metadata")
    assert json_value(None, SimpleNamespace(output_field=field), connection) is None
