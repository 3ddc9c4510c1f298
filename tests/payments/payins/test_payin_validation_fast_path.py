"""The fast path of POST /payin's validation against the serializers it stands in for.

`_fast_validate` may leave any body to `_validate_with_serializers`, but what it accepts they must accept, with the
very same result (values, types and key order: `customer`, `items` and `metadata` are echoed back). Checked over a
corpus: valid bodies of every method and option, and each of them with every field removed, replaced by awkward
values (other JSON types, blanks, padding, lengths and numbers at the serializers' own bounds, NUL, surrogates,
full-width digits, huge and nested values) and joined by unknown and optional fields, at every level.
"""

import copy
import json
import uuid
from collections.abc import Iterator
from datetime import date, timedelta

import pytest
from rest_framework import serializers

from accounts.models import Merchant
from core.api import NOT_SURE, StrictCharField
from core.errors import DomainError
from payments.fast_path import compile_fast_path
from payments.fields import METADATA_KEY_MAX_LENGTH, METADATA_MAX_KEYS, METADATA_VALUE_MAX_LENGTH
from payments.models import CardToken
from payments.payins import validation as payin_validation
from payments.payins.validation import (
    BOLETO_DUE_DAYS_MAX,
    MIN_AMOUNT,
    PayinRequestSerializer,
    _fast_validate,
    _validate_with_serializers,
    payin_request_validate,
)

TODAY = date(2026, 11, 20)
CHARGE_MAX_AMOUNT = 10_000_000
MERCHANT_MAX_AMOUNT = 7_000

# --- The bodies of bench/ (they must take the fast path) -------------------------------------------------------------
CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
ADDRESS = {"street": "Av. Paulista", "number": "1000", "zipCode": "01310-100", "city": "São Paulo", "state": "SP"}
BOLETO_CUSTOMER = {**CUSTOMER, "phone": "11987654321", "address": ADDRESS}
ITEMS = [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}]
TEST_CARD = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12", "expirationYear": "2030",
             "cvv": "123"}


def bench_body(method: str) -> dict:
    body = {"paymentMethod": method, "amount": 5000, "payerIp": "203.0.113.9", "isPhysicalProduct": False,
            "items": ITEMS, "customer": CUSTOMER, "referenceId": f"bench-{uuid.uuid4().hex}"}
    if method == "BOLETO":
        body["customer"] = BOLETO_CUSTOMER
    if method == "CREDIT_CARD":
        body["card"] = TEST_CARD
    return copy.deepcopy(body)


# --- The corpus's valid bodies ---------------------------------------------------------------------------------------
def pix_body(**changes) -> dict:
    return {**bench_body("PIX"), "referenceId": "order-1", **copy.deepcopy(changes)}


BASES = {  # name: (body, livemode, the merchant's own maximum per charge, whether the fast path must take it)
    "pix": (pix_body(), False, None, True),
    "boleto": ({**bench_body("BOLETO"), "referenceId": "order-1"}, False, None, True),
    "card": ({**bench_body("CREDIT_CARD"), "referenceId": "order-1"}, False, None, True),
    "pix_with_options": (pix_body(
        amount=12_345, description="Pedido 1", metadata={"order": "1", "canal": "loja"}, pix={"expiresIn": 600},
        customer={**CUSTOMER, "document": "11.222.333/0001-81", "phone": "+55 (11) 98765-4321"},
        items=[*ITEMS, {"title": "Brinde", "quantity": 1, "unitPrice": 0, "description": "Azul"},
               {"title": "Frete", "quantity": 1, "unitPrice": 1500, "description": ""}],
    ), False, None, True),
    "pix_physical_product": (pix_body(
        isPhysicalProduct=True, payerIp="2001:DB8:0:0::1",
        customer={**CUSTOMER, "phone": "(11) 3333-4444", "address": {**ADDRESS, "complement": "Apto 5"}},
    ), False, None, True),
    "pix_at_the_limits": (pix_body(
        amount=100, referenceId="ORD.2026:11_20-1" + "x" * 48, description="x" * 140, pix={},
        metadata={f"{i:02d}" + "k" * 38: "v" * 500 for i in range(METADATA_MAX_KEYS)},
        items=[{"title": "x" * 256, "quantity": 1, "unitPrice": 0, "description": "d" * 500} for _ in range(3)],
    ), False, None, True),
    "pix_padded_and_unusual": (pix_body(
        payerIp="::ffff:203.0.113.9", description="   ", metadata={"é": "１２３", "k": ""},
        customer={"name": "  Ana Souza  ", "document": " 12.abc.345/01de-35 ", "email": " ANA@Example.com ",
                  "phone": " 11987654321 ", "address": {"street": " Av. Paulista ", "number": " 1000 ",
                                                        "complement": "  ", "zipCode": " 01310.100 ",
                                                        "city": " São Paulo ", "state": " rj "}},
        items=[{"title": "  Caneca  ", "quantity": 2, "unitPrice": 2500, "description": "  Azul  "}],
    ), False, None, True),
    "pix_at_the_merchants_maximum": (pix_body(amount=MERCHANT_MAX_AMOUNT), False, MERCHANT_MAX_AMOUNT, True),
    "boleto_full": ({**bench_body("BOLETO"), "referenceId": "A-z_0.9:x", "amount": 500, "isPhysicalProduct": True,
                     "description": "Pedido 1", "metadata": {"order": "1"},
                     "customer": {**BOLETO_CUSTOMER, "document": "12ABC34501DE35"},
                     "boleto": {"dueDate": "2026-12-01", "instructions": "Não receber após o vencimento"}},
                    False, None, True),
    "boleto_due_today": ({**bench_body("BOLETO"), "referenceId": "b-2", "boleto": {"dueDate": TODAY.isoformat()}},
                         False, None, True),
    "boleto_empty_options": ({**bench_body("BOLETO"), "referenceId": "b-3", "boleto": {"instructions": " "}},
                             False, None, True),
    "card_amex": ({**bench_body("CREDIT_CARD"), "referenceId": "c-2", "amount": 100,
                   "card": {"holderName": "  ANA SOUZA ", "number": "378282246310005", "expirationMonth": "11",
                            "expirationYear": "26", "cvv": "1234", "installments": 12}}, False, None, True),
    "card_elo_physical": ({**bench_body("CREDIT_CARD"), "referenceId": "c-3", "isPhysicalProduct": True,
                           "customer": BOLETO_CUSTOMER, "description": "Pedido", "metadata": {},
                           "card": {**TEST_CARD, "number": "6362970000457013", "installments": 1}},
                          False, None, True),
    "card_live": ({**bench_body("CREDIT_CARD"), "referenceId": "c-4",
                   "card": {**TEST_CARD, "number": "4242424242424242", "expirationYear": "2027"}}, True, None, True),
    # Left to the serializers: the webhook URL's host is resolved, the token is looked up.
    "pix_webhook_url": (pix_body(webhookUrl="https://hooks.example.com/payin?x=1"), False, None, False),
    "card_token": ({**bench_body("CREDIT_CARD"), "card": {"token": "ctok_test_1", "installments": 3}},
                   False, None, False),
}


# --- Mutations -------------------------------------------------------------------------------------------------------
def _field_bounds() -> tuple[set[int], set[int]]:
    """The lengths and numbers where the serializers' rules turn, read from their fields, with one either side."""
    lengths = {METADATA_KEY_MAX_LENGTH, METADATA_VALUE_MAX_LENGTH}
    numbers = {*MIN_AMOUNT.values(), CHARGE_MAX_AMOUNT, MERCHANT_MAX_AMOUNT}

    def walk(fields: dict) -> None:
        for field in fields.values():
            if isinstance(field, serializers.ListSerializer):
                walk(field.child.fields)
            elif isinstance(field, serializers.Serializer):
                walk(field.fields)
            elif isinstance(field, serializers.CharField):
                lengths.update(bound for bound in (field.min_length, field.max_length) if bound is not None)
            elif isinstance(field, serializers.IntegerField):
                numbers.update(bound for bound in (field.min_value, field.max_value) if bound is not None)

    walk(PayinRequestSerializer().fields)
    return ({n + d for n in lengths for d in (-1, 0, 1) if n + d >= 0},
            {n + d for n in numbers for d in (-1, 0, 1)})


LENGTHS, NUMBERS = _field_bounds()
EMAILS_AROUND_THE_MAXIMUM = [f"{'a' * 64}@{'b' * 63}.{'c' * 63}.{'d' * n}.com" for n in (56, 57, 58)]  # 253 to 255
NESTED: dict = {}
for depth in range(50):
    NESTED = {"a": NESTED, "b": [depth]}
AWKWARD = [
    None, "", " ", "  x  ", "\t\n", "\u3000", 0, -1, 1, 1.5, 100.0, -0.0, float("nan"), float("inf"), "100", "0",
    True, False, [], {}, [1], {"a": 1}, [{}], [[]], "x" * 10_000, "\x00", "a\x00b", "é", "ſp", "１２３", "٣",
    "\ud800", "a\udfffb", "\u212a@example.com", 2**63 - 1, 2**63, -(2**63), 10**30, NESTED,
    {f"k{i}": "v" for i in range(1_000)}, list(range(1_000)),
]
TEXTS = [  # for the fields that hold a string: values each valid for some field, and lengths at the bounds
    "PIX", "BOLETO", "CREDIT_CARD", "pix", "sp", " SP ", "XX", "01310100", "01310-100", "0131O100", "01310 100",
    "+55 (11) 98765-4321", "11.98765.4321", "119876543", "529.982.247-25", "12.ABC.345/01DE-35", "11222333000181",
    "52998224726", "ana@example.com", "ana@localhost", "ana@[127.0.0.1]", "ana@exa_mple.com", "ana@example.com\n",
    "203.0.113.9", "203.0.113.9 ", "01.2.3.4", "256.1.1.1", "0.0.0.0", "::1", "2001:DB8::1", "fe80::1%eth0",
    "fe80::1%\x00", "https://hooks.example.com/x", "ctok_test_1", "order 1", "a" * 64, "a" * 65,
    *((TODAY + timedelta(days=days)).isoformat() for days in (-1, 0, BOLETO_DUE_DAYS_MAX, BOLETO_DUE_DAYS_MAX + 1)),
    "2026-02-30", "2026-12-1", "20261201", "2026-12-01T00:00:00",
    "１２", "01", "1", "12", "13", "00", "26", "25", "2026", "2025", "2030", "202",
    "123", "1234", "12345", "4111111111111111", "378282246310005", "4242424242424242", "5105105105105100",
    "4111111111111112", "4111 1111 1111 1111", "6362970000457013", "9000000000000001",
    *EMAILS_AROUND_THE_MAXIMUM, *(f"  {email}  " for email in EMAILS_AROUND_THE_MAXIMUM),
    *("x" * n for n in sorted(LENGTHS)),
    *(f"  {'x' * n}  " for n in sorted(LENGTHS)),
]
OPTIONAL = {  # the fields a body may add, by where they go: value to add
    "": {"card": TEST_CARD, "pix": {"expiresIn": 60}, "boleto": {}, "webhookUrl": "https://hooks.example.com/x",
         "description": "x", "metadata": {"k": "v"}},
    "customer": {"phone": "11987654321", "address": ADDRESS},
    "customer.address": {"complement": "Apto 5"},
    "items.*": {"description": "Azul"},
    "card": {"token": "ctok_test_1", "installments": 2},
    "pix": {"expiresIn": 60},
    "boleto": {"dueDate": "2026-12-01", "instructions": "x"},
    "metadata": {"k" * METADATA_KEY_MAX_LENGTH: "v", "k" * (METADATA_KEY_MAX_LENGTH + 1): "v", "": "v", "\x00": "v"},
}


def _containers(value: dict | list, path: tuple = ()) -> Iterator[tuple[tuple, dict | list]]:
    yield path, value
    for key, child in value.items() if isinstance(value, dict) else enumerate(value):
        if isinstance(child, dict | list):
            yield from _containers(child, (*path, key))


def _changed(body: dict, path: tuple, change) -> dict:
    """A copy of `body` with `change` applied to the container at `path`."""
    body = copy.deepcopy(body)
    container = body
    for key in path:
        container = container[key]
    change(container)
    return body


def _set(key, value):
    def change(container):
        container[key] = value
    return change


def mutations(body: dict) -> Iterator[dict]:
    """`body` with each field removed, replaced, and joined by unknown and optional fields, at every level."""
    for path, container in list(_containers(body)):
        for key in list(container) if isinstance(container, dict) else range(len(container)):
            yield _changed(body, path, lambda c, key=key: c.pop(key))
            original = container[key]
            for value in [*AWKWARD, *(TEXTS if type(original) is str else NUMBERS if type(original) is int else [])]:
                yield _changed(body, path, _set(key, value))
        if isinstance(container, dict):
            yield _changed(body, path, _set("unknownField", "x"))  # in metadata, a 21st key
            where = ".".join("*" if isinstance(key, int) else key for key in path)
            for name, value in OPTIONAL.get(where, {}).items():
                if name not in container:
                    yield _changed(body, path, _set(name, copy.deepcopy(value)))
        else:
            for count in (1, 99, 100):
                yield _changed(body, path, lambda c, count=count: c.extend([copy.deepcopy(c[0])] * count))


# --- Checks ----------------------------------------------------------------------------------------------------------
def _container_ids(value) -> set[int]:
    if isinstance(value, dict):
        return {id(value)}.union(*(_container_ids(child) for child in value.values()))
    if isinstance(value, list):
        return {id(value)}.union(*(_container_ids(child) for child in value))
    return set()


def same_outcome(body, merchant, *, livemode: bool) -> dict | None:
    """The fast path's answer, after checking it against the serializers'."""
    before = copy.deepcopy(body)

    fast = _fast_validate(body, merchant=merchant, livemode=livemode, today=TODAY)

    assert body == before, "the fast path changed the body"
    try:
        slow = _validate_with_serializers(body, merchant=merchant, livemode=livemode, today=TODAY)
    except DomainError:
        assert fast is None, "the fast path accepted a body the serializers refuse"
        return None
    if fast is not None:
        assert fast == slow
        assert json.dumps(fast, default=str) == json.dumps(slow, default=str)  # key order too
        assert not _container_ids(fast) & _container_ids(body), "the result shares a dict or list with the body"
    return fast


@pytest.fixture(autouse=True)
def _settings(settings, public_webhook_targets):
    settings.CHARGE_MAX_AMOUNT = CHARGE_MAX_AMOUNT


@pytest.fixture
def merchant_with_token(merchant):
    CardToken.objects.create(token="ctok_test_1", merchant=merchant, livemode=False, rail_token="rail_1",
                             brand="visa", bin="411111", last4="1111", holder_name="ANA SOUZA",
                             expiration_month="12", expiration_year="2030", fingerprint="f" * 64)
    return merchant


# --- Tests -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", BASES)
def test_fast_path_agrees_with_the_serializers_on_every_mutation(merchant_with_token, name):
    body, livemode, merchant_max, fast_expected = BASES[name]
    merchant_with_token.charge_max_amount = merchant_max
    bodies = list(mutations(body))

    base_result = same_outcome(body, merchant_with_token, livemode=livemode)
    accepted = sum(same_outcome(mutated, merchant_with_token, livemode=livemode) is not None for mutated in bodies)

    assert (base_result is not None) == fast_expected
    assert len(bodies) > 1_000
    if fast_expected:  # the valid variants among the mutations (a blank description, a 100th item...) also take it
        assert accepted > 0


@pytest.mark.parametrize("method", ["PIX", "BOLETO", "CREDIT_CARD"])
def test_bench_bodies_take_the_fast_path(merchant, monkeypatch, method):
    body = bench_body(method)
    expected = _validate_with_serializers(body, merchant=merchant, livemode=False, today=TODAY)
    monkeypatch.setattr(payin_validation, "_validate_with_serializers", pytest.fail)

    result = payin_request_validate(body, merchant=merchant, livemode=False, today=TODAY)

    assert result == expected
    assert json.dumps(result, default=str) == json.dumps(expected, default=str)


def test_refused_bodies_get_the_serializers_errors(merchant):
    body = {**bench_body("PIX"), "amount": 99, "customer": {**CUSTOMER, "document": "52998224726"}}

    with pytest.raises(DomainError) as caught:
        payin_request_validate(body, merchant=merchant, livemode=False, today=TODAY)

    assert [(d["param"], d["code"]) for d in caught.value.details] == [
        ("amount", "amount_too_small"), ("customer.document", "invalid_document")]


def test_a_field_added_to_the_declaration_reaches_the_fast_path():
    # The fast path is compiled from the serializer's declared fields: a new field needs no other edit to be checked
    # (required, its type and bounds, its own rule) and returned by both paths.
    class Extended(PayinRequestSerializer):
        note = serializers.CharField(required=False)  # a plain DRF field: no fast rule, so left to the serializer
        channel = StrictCharField(max_length=5)

    fast = compile_fast_path(Extended)
    context = {"merchant": Merchant(), "livemode": False, "today": TODAY}
    body = {**bench_body("PIX"), "channel": " web "}

    assert fast(body, context, body)["channel"] == "web"
    assert fast(body, context, body) == Extended.validated(body, **context)
    for refused in ({k: v for k, v in body.items() if k != "channel"}, {**body, "channel": "toolong"},
                    {**body, "channel": 5}, {**body, "note": "x"}):
        assert fast(refused, context, refused) is NOT_SURE
