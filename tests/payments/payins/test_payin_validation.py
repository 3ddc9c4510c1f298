"""The body of POST /payin (SPEC §3.1, §3.7): each rule, every problem at once, and no card number or CVV echoed."""

import copy
import json
from collections.abc import Iterator
from datetime import date, timedelta

import pytest
from django.utils import translation
from rest_framework import serializers

from core.errors import DomainError, as_domain_error, error_body
from payments.fields import METADATA_KEY_MAX_LENGTH, METADATA_VALUE_MAX_LENGTH
from payments.models import CardToken
from payments.payins.validation import (
    BOLETO_DUE_DAYS_MAX,
    ITEM_QUANTITY_MAX,
    MIN_AMOUNT,
    PayinRequestSerializer,
    payin_request_validate,
)
from tests.factories import MerchantFactory, items_totalling

TODAY = date(2026, 11, 20)
MISSING = object()

ADDRESS = {"street": "Av. Paulista", "number": "1000", "zipCode": "01310-100", "city": "São Paulo", "state": "SP"}
CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
ITEMS = [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}]
CARD = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12", "expirationYear": "2030",
        "cvv": "123"}


@pytest.fixture(autouse=True)
def english():
    """The messages as the API gives them (in English, core.middleware): without this the file passed only after
    another test had left English active in the thread, and failed when run alone."""
    with translation.override("en"):
        yield


def payin_body(method: str = "PIX", changes: dict | None = None) -> dict:
    """A valid body for `method`, with `changes` applied by dotted path (MISSING deletes the key)."""
    body = {"paymentMethod": method, "amount": 5000, "referenceId": "order-1", "payerIp": "203.0.113.9",
            "isPhysicalProduct": False, "customer": copy.deepcopy(CUSTOMER), "items": copy.deepcopy(ITEMS)}
    if method == "BOLETO":
        body["customer"].update(phone="11987654321", address=dict(ADDRESS))
    if method == "CREDIT_CARD":
        body["card"] = dict(CARD)
    for path, value in (changes or {}).items():
        *parents, last = path.split(".")
        target = body
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
        if value is MISSING:
            target.pop(last, None)
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    if not any(path == "items" or path.startswith("items.") for path in changes or {}) and "amount" in (changes or {}):
        body["items"] = items_totalling(body.get("amount"))  # the items add up to the amount unless under test
    return body


def validate(body, merchant, *, livemode: bool = False) -> dict:
    return payin_request_validate(body, merchant=merchant, livemode=livemode, today=TODAY)


def error_of(body, merchant, *, livemode: bool = False) -> dict:
    """The `error` object of the API's 400 body for `body`."""
    with pytest.raises(DomainError) as caught:
        validate(body, merchant, livemode=livemode)
    return error_body(as_domain_error(caught.value))["error"]


def problems(body, merchant, *, livemode: bool = False) -> list[tuple]:
    return [(d["param"], d["code"]) for d in error_of(body, merchant, livemode=livemode)["details"]]


@pytest.fixture(autouse=True)
def _public_dns(settings, public_webhook_targets):
    settings.CHARGE_MAX_AMOUNT = 10_000_000


# --- Happy paths -----------------------------------------------------------------------------------------------------
def test_pix_minimal_body_normalized_with_defaults(merchant):
    result = validate(payin_body("PIX"), merchant)

    assert result == {
        "payment_method": "PIX", "amount": 5000, "reference_id": "order-1", "payer_ip": "203.0.113.9",
        "is_physical_product": False, "webhook_url": "", "description": "", "metadata": {},
        "customer": {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com", "phone": None,
                     "address": None},
        "items": [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}],
        "card": None, "pix_expires_in": 3600, "boleto_due_date": None, "boleto_instructions": "",
    }


def test_boleto_full_body_normalized(merchant):
    body = payin_body("BOLETO", {
        "amount": 5000, "referenceId": "A-z_0.9:x", "payerIp": "2001:DB8:0:0::1", "isPhysicalProduct": True,
        "webhookUrl": "https://hooks.example.com/payin?x=1", "description": "Pedido 1", "metadata": {"order": "1"},
        "customer.document": "12.abc.345/01de-35", "customer.phone": "+55 (11) 98765-4321",
        "customer.address.zipCode": "01310100", "customer.address.state": "sp",
        "customer.address.complement": "Apto 5", "items.0.description": "Azul",
        "boleto": {"dueDate": "2026-12-01", "instructions": "Não receber após o vencimento"},
    })

    result = validate(body, merchant)

    assert result == {
        "payment_method": "BOLETO", "amount": 5000, "reference_id": "A-z_0.9:x", "payer_ip": "2001:db8::1",
        "is_physical_product": True, "webhook_url": "https://hooks.example.com/payin?x=1",
        "description": "Pedido 1", "metadata": {"order": "1"},
        "customer": {"name": "Ana Souza", "document": "12ABC34501DE35", "email": "ana@example.com",
                     "phone": "5511987654321",
                     "address": {"street": "Av. Paulista", "number": "1000", "complement": "Apto 5",
                                 "zipCode": "01310100", "city": "São Paulo", "state": "SP"}},
        "items": [{"title": "Caneca", "quantity": 2, "unitPrice": 2500, "description": "Azul"}],
        "card": None, "pix_expires_in": None, "boleto_due_date": date(2026, 12, 1),
        "boleto_instructions": "Não receber após o vencimento",
    }


def test_boleto_defaults_due_in_three_days_and_address_complement_empty(merchant):
    result = validate(payin_body("BOLETO"), merchant)

    assert result["customer"]["phone"] == "11987654321"
    assert result["boleto_due_date"] == date(2026, 11, 23)
    assert result["boleto_instructions"] == ""
    assert result["customer"]["address"] == {"street": "Av. Paulista", "number": "1000", "complement": "",
                                             "zipCode": "01310100", "city": "São Paulo", "state": "SP"}


def test_credit_card_with_card_data_normalized(merchant):
    body = payin_body("CREDIT_CARD", {"card.number": "378282246310005", "card.cvv": "1234",
                                      "card.expirationYear": "30", "card.installments": 12})

    result = validate(body, merchant)

    assert result["card"] == {"holderName": "ANA SOUZA", "number": "378282246310005", "expirationMonth": "12",
                              "expirationYear": "2030", "cvv": "1234", "brand": "amex", "installments": 12}
    assert (result["pix_expires_in"], result["boleto_due_date"]) == (None, None)


def card_token(merchant, *, livemode: bool = False, token: str = "ctok_test_1") -> CardToken:
    return CardToken.objects.create(token=token, merchant=merchant, livemode=livemode, rail_token="rail_1",
                                    brand="visa", bin="411111", last4="1111", holder_name="ANA SOUZA",
                                    expiration_month="12", expiration_year="2030", fingerprint="f" * 64)


def test_credit_card_with_token_normalized_installments_default_one(merchant):
    token = card_token(merchant)

    result = validate(payin_body("CREDIT_CARD", {"card": {"token": "ctok_test_1"}}), merchant)

    assert result["card"] == {"token": token, "installments": 1}


def test_live_card_accepted_in_live_mode(merchant):
    result = validate(payin_body("CREDIT_CARD", {"card.number": "4242424242424242"}), merchant, livemode=True)

    assert result["card"]["number"] == "4242424242424242"
    assert result["card"]["brand"] == "visa"


def test_padded_values_are_trimmed_and_normalized(merchant):
    body = payin_body("PIX", {
        "payerIp": "::ffff:203.0.113.9", "description": "   ", "metadata": {"é": "１２３", "k": ""},
        "customer": {"name": "  Ana Souza  ", "document": " 12.abc.345/01de-35 ", "email": " ANA@Example.com ",
                     "phone": " 11987654321 ",
                     "address": {"street": " Av. Paulista ", "number": " 1000 ", "complement": "  ",
                                 "zipCode": " 01310.100 ", "city": " São Paulo ", "state": " rj "}},
        "items": [{"title": "  Caneca  ", "quantity": 2, "unitPrice": 2500, "description": "  Azul  "}],
    })

    result = validate(body, merchant)

    assert result == {
        "payment_method": "PIX", "amount": 5000, "reference_id": "order-1", "payer_ip": "::ffff:cb00:7109",
        "is_physical_product": False, "webhook_url": "", "description": "", "metadata": {"é": "１２３", "k": ""},
        "customer": {"name": "Ana Souza", "document": "12ABC34501DE35", "email": "ANA@Example.com",
                     "phone": "11987654321",
                     "address": {"street": "Av. Paulista", "number": "1000", "complement": "", "zipCode": "01310100",
                                 "city": "São Paulo", "state": "RJ"}},
        "items": [{"title": "Caneca", "quantity": 2, "unitPrice": 2500, "description": "Azul"}],
        "card": None, "pix_expires_in": 3600, "boleto_due_date": None, "boleto_instructions": "",
    }


SHAPES = {  # name: (method, changes, what the result holds)
    "pix with every option": ("PIX", {
        "amount": 12_345, "description": "Pedido 1", "metadata": {"order": "1", "canal": "loja"},
        "pix": {"expiresIn": 600}, "customer.document": "11.222.333/0001-81", "customer.phone": "+55 (11) 98765-4321",
        "items": [*ITEMS, {"title": "Brinde", "quantity": 1, "unitPrice": 0, "description": "Azul"},
                  {"title": "Frete", "quantity": 1, "unitPrice": 7345, "description": ""}],
    }, {"amount": 12_345, "pix_expires_in": 600, "metadata": {"order": "1", "canal": "loja"},
        "customer": {**CUSTOMER, "document": "11222333000181", "phone": "5511987654321", "address": None},
        "items": [*ITEMS, {"title": "Brinde", "quantity": 1, "unitPrice": 0, "description": "Azul"},
                  {"title": "Frete", "quantity": 1, "unitPrice": 7345, "description": ""}]}),
    "pix for a physical product": ("PIX", {
        "isPhysicalProduct": True, "customer.phone": "(11) 3333-4444",
        "customer.address": {**ADDRESS, "complement": "Apto 5"},
    }, {"is_physical_product": True,
        "customer": {**CUSTOMER, "phone": "1133334444",
                     "address": {**ADDRESS, "complement": "Apto 5", "zipCode": "01310100"}}}),
    "pix at the limits": ("PIX", {
        "amount": 100, "referenceId": "ORD.2026:11_20-1" + "x" * 48, "description": "x" * 140, "pix": {},
        "items": [{"title": "x" * 256, "quantity": ITEM_QUANTITY_MAX, "unitPrice": 0, "description": "d" * 500}] * 2
        + [{"title": "x" * 256, "quantity": 1, "unitPrice": 100, "description": "d" * 500}],
    }, {"amount": 100, "reference_id": "ORD.2026:11_20-1" + "x" * 48, "description": "x" * 140,
        "pix_expires_in": 3600}),
    "boleto due today": ("BOLETO", {"boleto": {"dueDate": TODAY.isoformat()}}, {"boleto_due_date": TODAY}),
    "boleto with blank instructions": ("BOLETO", {"boleto": {"instructions": " "}}, {
        "boleto_due_date": TODAY + timedelta(days=3), "boleto_instructions": ""}),
    "card with a padded holder name": ("CREDIT_CARD", {"card.holderName": "  ANA SOUZA "}, {
        "card": {**CARD, "brand": "visa", "installments": 1}}),
    "elo card for a physical product": ("CREDIT_CARD", {
        "isPhysicalProduct": True, "customer.phone": "11987654321", "customer.address": dict(ADDRESS),
        "card.number": "6362970000457013", "card.installments": 1,
    }, {"card": {**CARD, "number": "6362970000457013", "brand": "elo", "installments": 1}}),
}


def _containers(value) -> set[int]:
    """The ids of every dict and list in `value`."""
    if isinstance(value, dict):
        return {id(value)}.union(*(_containers(child) for child in value.values()))
    if isinstance(value, list):
        return {id(value)}.union(*(_containers(child) for child in value))
    return set()


@pytest.mark.parametrize("name", SHAPES)
def test_bodies_of_every_shape_are_accepted_and_left_as_sent(merchant, name):
    method, changes, expected = SHAPES[name]
    body = payin_body(method, changes)
    sent = copy.deepcopy(body)

    result = validate(body, merchant)

    assert {key: result[key] for key in expected} == expected
    assert body == sent
    assert not _containers(result) & _containers(body)  # the stored customer and items are the result's own


# --- Shape: required, types, unknown fields --------------------------------------------------------------------------
def test_empty_body_reports_every_required_field(merchant):
    error = error_of({}, merchant)

    required = ["paymentMethod", "amount", "referenceId", "payerIp", "isPhysicalProduct", "customer", "items"]
    assert error["code"] == "validation_error"
    assert error["param"] is None
    assert error["details"] == [{"param": name, "code": "required", "message": "This field is required."}
                                for name in required]


@pytest.mark.parametrize(("body", "code"), [([payin_body()], "invalid"), (None, "null")])
def test_body_that_is_not_an_object(merchant, body, code):
    assert problems(body, merchant) == [(None, code)]


@pytest.mark.parametrize(("path", "value", "expected"), [
    ("customer", {}, [("customer.name", "required"), ("customer.document", "required"),
                      ("customer.email", "required")]),
    ("customer", "Ana", [("customer", "invalid")]),
    ("customer.address", {}, [("customer.address.street", "required"), ("customer.address.number", "required"),
                              ("customer.address.zipCode", "required"), ("customer.address.city", "required"),
                              ("customer.address.state", "required")]),
    ("items.0", {}, [("items.0.title", "required"), ("items.0.quantity", "required"),
                     ("items.0.unitPrice", "required")]),
])
def test_missing_nested_fields(merchant, path, value, expected):
    assert problems(payin_body("PIX", {path: value}), merchant) == expected


@pytest.mark.parametrize(("path", "value", "code"), [
    ("amount", 100.0, "invalid"),
    ("amount", "5000", "invalid"),
    ("amount", True, "invalid"),
    ("amount", None, "null"),
    ("isPhysicalProduct", "true", "invalid"),
    ("paymentMethod", "pix", "invalid_choice"),
    ("customer.name", 12345, "invalid"),
    ("items", {"title": "Caneca"}, "not_a_list"),
    ("items.0.quantity", 1.0, "invalid"),
    ("description", None, "null"),
])
def test_wrong_json_types_are_refused(merchant, path, value, code):
    error = error_of(payin_body("PIX", {path: value}), merchant)

    assert [(d["param"], d["code"]) for d in error["details"]] == [(path, code)]
    assert (error["code"], error["param"]) == ("validation_error", path)


def test_wrong_types_inside_card(merchant):
    body = payin_body("CREDIT_CARD", {"card.number": 4111111111111111, "card.installments": 2.0,
                                      "card.expirationMonth": 12})

    assert problems(body, merchant) == [("card.number", "invalid"), ("card.expirationMonth", "invalid"),
                                        ("card.installments", "invalid")]


@pytest.mark.parametrize(("method", "path"), [
    ("PIX", "foo"), ("PIX", "customer.foo"), ("BOLETO", "customer.address.foo"), ("PIX", "items.0.foo"),
    ("CREDIT_CARD", "card.foo"), ("BOLETO", "boleto.foo"),
])
def test_unknown_fields_at_every_level(merchant, method, path):
    error = error_of(payin_body(method, {path: 1}), merchant)

    assert error["code"] == "unknown_field"
    assert error["message"] == "The request has unknown fields"
    assert error["details"] == [{"param": path, "code": "unknown_field", "message": "Unknown field 'foo'."}]


def test_unknown_field_mixed_with_another_problem_is_a_validation_error(merchant):
    error = error_of(payin_body("PIX", {"amout": 5000, "amount": 5000.0}), merchant)

    assert error["code"] == "validation_error"
    assert [(d["param"], d["code"]) for d in error["details"]] == [("amount", "invalid"), ("amout", "unknown_field")]


# --- Top-level fields ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "message"), [
    ("a" * 65, "Must be at most 64 characters."),
    ("order 1", "Must have only letters, digits, '.', '_', ':' and '-' (no spaces)."),
    ("pedido-ção", "Must have only letters, digits, '.', '_', ':' and '-' (no spaces)."),
])
def test_bad_reference_id(merchant, value, message):
    error = error_of(payin_body("PIX", {"referenceId": value}), merchant)

    assert error == {"type": "invalid_request_error", "code": "validation_error",
                     "message": "The request has invalid fields", "param": "referenceId",
                     "details": [{"param": "referenceId", "code": "invalid_reference_id", "message": message}],
                     "requestId": error["requestId"]}


@pytest.mark.parametrize("value", ["a", "ORD.2026:11_20-1" + "x" * 48])
def test_good_reference_id(merchant, value):
    assert validate(payin_body("PIX", {"referenceId": value}), merchant)["reference_id"] == value


@pytest.mark.parametrize("value", ["999.1.1.1", " 203.0.113.9", "01.2.3.4"])
def test_bad_payer_ip(merchant, value):
    assert error_of(payin_body("PIX", {"payerIp": value}), merchant)["details"] == [
        {"param": "payerIp", "code": "invalid_ip_address", "message": "Must be a valid IPv4 or IPv6 address."}]


def test_payment_method_message_lists_the_methods(merchant):
    assert error_of(payin_body("PIX", {"paymentMethod": "DEBIT"}), merchant)["details"] == [
        {"param": "paymentMethod", "code": "invalid_choice", "message": "Must be one of PIX, CREDIT_CARD, BOLETO."}]


@pytest.mark.parametrize(("value", "code"), [
    ("http://hooks.example.com/payin", "invalid_webhook_url"),
    ("https://127.0.0.1/payin", "invalid_webhook_url"),
    (42, "invalid"),
])
def test_bad_webhook_url(merchant, value, code):
    assert problems(payin_body("PIX", {"webhookUrl": value}), merchant) == [("webhookUrl", code)]


def test_webhook_url_problem_is_reported_with_the_others(merchant):
    error = error_of(payin_body("PIX", {"webhookUrl": "https://169.254.169.254/", "amount": 1}), merchant)

    assert error["details"] == [
        {"param": "amount", "code": "amount_too_small", "message": "Must be at least 100 cents for PIX."},
        {"param": "webhookUrl", "code": "invalid_webhook_url",
         "message": "The webhook URL is not accepted: its address is not public"},
    ]


@pytest.mark.parametrize(("metadata", "messages"), [
    ([], ["Must be a JSON object."]),
    ({f"k{i}": "v" for i in range(21)}, ["Must have at most 20 keys."]),
    ({"k" * 41: "v"}, ["Keys must be 1 to 40 characters."]),
    ({"order": "x" * 501}, ["Values must be at most 500 characters."]),
    ({"k" * 41: {"nested": "x"}}, ["Keys must be 1 to 40 characters.", "Values must be strings."]),
])
def test_bad_metadata(merchant, metadata, messages):
    assert error_of(payin_body("PIX", {"metadata": metadata}), merchant)["details"] == [
        {"param": "metadata", "code": "invalid_metadata", "message": message} for message in messages]


def test_metadata_at_its_limits(merchant):
    metadata = {f"{i:02d}" + "k" * 38: "v" * 500 for i in range(20)}

    assert validate(payin_body("PIX", {"metadata": metadata}), merchant)["metadata"] == metadata


def test_description_at_most_140_characters(merchant):
    assert validate(payin_body("PIX", {"description": "x" * 140}), merchant)["description"] == "x" * 140
    assert problems(payin_body("PIX", {"description": "x" * 141}), merchant) == [("description", "max_length")]


# --- Amount ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "amount", "minimum"), [
    ("PIX", 99, 100), ("CREDIT_CARD", 99, 100), ("BOLETO", 499, 500), ("PIX", -5000, 100),
])
def test_amount_below_the_method_minimum(merchant, method, amount, minimum):
    error = error_of(payin_body(method, {"amount": amount}), merchant)

    assert (error["code"], error["param"]) == ("amount_too_small", "amount")
    assert error["details"] == [{"param": "amount", "code": "amount_too_small",
                                 "message": f"Must be at least {minimum} cents for {method}."}]


@pytest.mark.parametrize(("method", "amount"), [("PIX", 100), ("CREDIT_CARD", 100), ("BOLETO", 500)])
def test_amount_at_the_method_minimum(merchant, method, amount):
    assert validate(payin_body(method, {"amount": amount}), merchant)["amount"] == amount


def test_amount_minimum_without_a_valid_method_is_the_lowest_minimum(merchant):
    assert error_of(payin_body("PIX", {"paymentMethod": "DEBIT", "amount": 99}), merchant)["details"][1] == {
        "param": "amount", "code": "amount_too_small", "message": "Must be at least 100 cents."}


@pytest.mark.parametrize(("merchant_max", "maximum"), [(None, 10_000_000), (5_000, 5_000)])
def test_amount_maximum_is_the_merchants_own_or_the_default(merchant, merchant_max, maximum):
    merchant.charge_max_amount = merchant_max

    error = error_of(payin_body("PIX", {"amount": maximum + 1}), merchant)

    assert validate(payin_body("PIX", {"amount": maximum}), merchant)["amount"] == maximum
    assert error["code"] == "amount_too_large"
    assert error["details"] == [{"param": "amount", "code": "amount_too_large",
                                 "message": f"Must be at most {maximum} cents, this account's maximum per charge."}]


def test_amount_maximum_follows_the_setting(merchant, settings):
    settings.CHARGE_MAX_AMOUNT = 20_000

    assert problems(payin_body("PIX", {"amount": 20_001}), merchant) == [("amount", "amount_too_large")]


# --- Customer --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("document", "message"), [
    ("52998224726", "The CPF's check digits (its last two) are wrong."),
    ("529.982.247-26", "The CPF's check digits (its last two) are wrong."),
    ("11111111111", "Must not be one digit repeated: no CPF is."),
    ("5299822472X", "A CPF (11 characters) has digits only."),
    ("00000000000000", "Must not be one character repeated: no CNPJ is."),
    ("5299822472", "Must be a CPF of 11 digits or a CNPJ of 14 characters, punctuation aside."),
    ("112223330001811", "Must be a CPF of 11 digits or a CNPJ of 14 characters, punctuation aside."),
    ("11222333000182", "The CNPJ's check digits (its last two) are wrong."),
    ("12ABC34501DE36", "The CNPJ's check digits (its last two) are wrong."),
    ("12ABC34501DEAB", "The CNPJ's last two characters, its check digits, must be digits."),
    ("529,982,247,25", "Must have only digits, letters (a CNPJ's) and the punctuation '.', '-', '/' or spaces."),
])
def test_bad_document(merchant, document, message):
    error = error_of(payin_body("PIX", {"customer.document": document}), merchant)

    assert error == {"type": "invalid_request_error", "code": "validation_error",
                     "message": "The request has invalid fields", "param": "customer.document",
                     "details": [{"param": "customer.document", "code": "invalid_document", "message": message}],
                     "requestId": error["requestId"]}


@pytest.mark.parametrize(("document", "normalized"), [
    ("529.982.247-25", "52998224725"),
    ("11.222.333/0001-81", "11222333000181"),
    ("12ABC34501DE35", "12ABC34501DE35"),
    ("12.ABC.345/01DE-35", "12ABC34501DE35"),
])
def test_good_document_is_normalized(merchant, document, normalized):
    assert validate(payin_body("PIX", {"customer.document": document}), merchant)["customer"]["document"] == normalized


@pytest.mark.parametrize(("path", "value", "code"), [
    ("customer.name", "A", "min_length"),
    ("customer.name", "A" * 101, "max_length"),
    ("customer.email", "ana", "invalid_email"),
    ("customer.email", "a" * 64 + "@" + "b" * 61 + "." + "c" * 60 + "." + "d" * 60 + ".com.br", "max_length"),
    ("customer.phone", "119876543", "invalid_phone"),  # 9 digits
    ("customer.phone", "55119876543210", "invalid_phone"),  # 14 digits
    ("customer.phone", "11.98765.4321", "invalid_phone"),
])
def test_bad_customer_fields(merchant, path, value, code):
    assert problems(payin_body("PIX", {path: value}), merchant) == [(path, code)]


@pytest.mark.parametrize(("phone", "normalized"), [
    ("+55 (11) 98765-4321", "5511987654321"), ("(11) 3333-4444", "1133334444"),
])
def test_good_phone_is_digits_only(merchant, phone, normalized):
    assert validate(payin_body("PIX", {"customer.phone": phone}), merchant)["customer"]["phone"] == normalized


@pytest.mark.parametrize(("method", "physical"), [("BOLETO", False), ("PIX", True), ("CREDIT_CARD", True)])
def test_phone_and_address_required_for_boleto_and_physical_products(merchant, method, physical):
    body = payin_body(method, {"isPhysicalProduct": physical, "customer.phone": MISSING, "customer.address": MISSING})

    assert error_of(body, merchant)["details"] == [
        {"param": f"customer.{name}", "code": "required", "message": "Required for BOLETO and for physical products."}
        for name in ("phone", "address")]


def test_phone_and_address_optional_for_digital_goods_but_checked_when_sent(merchant):
    assert validate(payin_body("CREDIT_CARD"), merchant)["customer"] == {**CUSTOMER, "phone": None, "address": None}
    assert validate(payin_body("PIX", {"customer.address": dict(ADDRESS)}), merchant)["customer"]["address"][
        "zipCode"] == "01310100"
    assert problems(payin_body("PIX", {"customer.address": {**ADDRESS, "state": "XX"}}), merchant) == [
        ("customer.address.state", "invalid_state")]


@pytest.mark.parametrize(("path", "value", "code"), [
    ("zipCode", "1310-100", "invalid_zip_code"),
    ("zipCode", 1310100, "invalid"),
    ("state", "XX", "invalid_state"),
    ("state", "São Paulo", "invalid_state"),
    ("street", "x" * 151, "max_length"),
    ("city", "x" * 81, "max_length"),
])
def test_bad_address_fields(merchant, path, value, code):
    assert problems(payin_body("BOLETO", {f"customer.address.{path}": value}), merchant) == [
        (f"customer.address.{path}", code)]


@pytest.mark.parametrize(("zip_code", "message"), [
    ("123", "Must be 8 digits (a CEP, such as 01310-100)."),
    ("01310-1000", "Must be 8 digits (a CEP, such as 01310-100)."),
    ("01310 100", "Must have only digits, '-' and '.'."),
    ("O1310-100", "Must have only digits, '-' and '.'."),
])
def test_address_field_messages(merchant, zip_code, message):
    body = payin_body("BOLETO", {"customer.address.zipCode": zip_code, "customer.address.state": "ZZ"})

    assert error_of(body, merchant)["details"] == [
        {"param": "customer.address.zipCode", "code": "invalid_zip_code", "message": message},
        {"param": "customer.address.state", "code": "invalid_state",
         "message": "Must be one of the 27 UF codes, such as SP or RJ."},
    ]


# --- Items -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("count", "expected"), [
    (0, [{"param": "items", "code": "min_length", "message": "Must have at least 1 item."}]),
    (101, [{"param": "items", "code": "max_length", "message": "Must have at most 100 items."}]),
])
def test_items_count_bounds(merchant, count, expected):
    assert error_of(payin_body("PIX", {"items": ITEMS * count}), merchant)["details"] == expected


def test_one_hundred_items_are_accepted(merchant):
    assert len(validate(payin_body("PIX", {"amount": 500_000, "items": ITEMS * 100}), merchant)["items"]) == 100


@pytest.mark.parametrize(("path", "value", "code"), [
    ("title", "", "blank"),
    ("title", "x" * 257, "max_length"),
    ("quantity", 0, "min_value"),
    ("unitPrice", -1, "min_value"),
    ("description", "x" * 501, "max_length"),
])
def test_bad_item_fields_name_their_index(merchant, path, value, code):
    body = payin_body("PIX", {"items": [*ITEMS, {**ITEMS[0], path: value}]})

    assert problems(body, merchant) == [(f"items.1.{path}", code)]


def test_item_bounds_accepted_and_description_echoed_only_when_sent(merchant):
    items = [{"title": "x" * 256, "quantity": ITEM_QUANTITY_MAX, "unitPrice": 0, "description": "d" * 500},
             {"title": "Brinde", "quantity": 1, "unitPrice": 5000}]

    assert validate(payin_body("PIX", {"items": items}), merchant)["items"] == items


# --- pix and boleto options ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("expires_in", [60, 604_800])
def test_pix_expires_in_accepted_bounds(merchant, expires_in):
    assert validate(payin_body("PIX", {"pix": {"expiresIn": expires_in}}), merchant)["pix_expires_in"] == expires_in


@pytest.mark.parametrize(("expires_in", "code"), [(59, "min_value"), (604_801, "max_value")])
def test_pix_expires_in_refused_bounds(merchant, expires_in, code):
    assert problems(payin_body("PIX", {"pix": {"expiresIn": expires_in}}), merchant) == [("pix.expiresIn", code)]


@pytest.mark.parametrize("due_date", [TODAY, TODAY + timedelta(days=365)])
def test_boleto_due_date_accepted_bounds(merchant, due_date):
    body = payin_body("BOLETO", {"boleto": {"dueDate": due_date.isoformat()}})

    assert validate(body, merchant)["boleto_due_date"] == due_date


@pytest.mark.parametrize(("due_date", "code"), [
    ((TODAY - timedelta(days=1)).isoformat(), "invalid_due_date"),
    ((TODAY + timedelta(days=366)).isoformat(), "invalid_due_date"),
    ("2026-02-30", "invalid_date"), ("2026-12-1", "invalid_date"),
])
def test_boleto_due_date_refused(merchant, due_date, code):
    assert problems(payin_body("BOLETO", {"boleto": {"dueDate": due_date}}), merchant) == [("boleto.dueDate", code)]


def test_boleto_due_date_out_of_range_message(merchant):
    assert error_of(payin_body("BOLETO", {"boleto": {"dueDate": "2026-11-19"}}), merchant)["details"] == [
        {"param": "boleto.dueDate", "code": "invalid_due_date",
         "message": "Must be from today to 365 days from today (America/Sao_Paulo)."}]


@pytest.mark.parametrize(("due_date", "message"), [
    ("2026-12-1", "Must be a date written YYYY-MM-DD."),
    ("01/12/2026", "Must be a date written YYYY-MM-DD."),
    ("2026-02-30", "Must be a day of the calendar (month 01 to 12, a day the month has)."),
    ("2026-13-01", "Must be a day of the calendar (month 01 to 12, a day the month has)."),
])
def test_boleto_due_date_format_messages(merchant, due_date, message):
    assert error_of(payin_body("BOLETO", {"boleto": {"dueDate": due_date}}), merchant)["details"] == [
        {"param": "boleto.dueDate", "code": "invalid_date", "message": message}]


@pytest.mark.parametrize(("phone", "message"), [
    ("119876543", "Must have 10 to 13 digits (area code and number, the country code optional)."),
    ("55119876543210", "Must have 10 to 13 digits (area code and number, the country code optional)."),
    ("11.98765.4321", "Must have only digits, spaces and + ( ) -."),
    ("11 9876-543x", "Must have only digits, spaces and + ( ) -."),
])
def test_phone_messages(merchant, phone, message):
    assert error_of(payin_body("PIX", {"customer.phone": phone}), merchant)["details"] == [
        {"param": "customer.phone", "code": "invalid_phone", "message": message}]


def test_boleto_instructions_length(merchant):
    assert problems(payin_body("BOLETO", {"boleto": {"instructions": "x" * 256}}), merchant) == [
        ("boleto.instructions", "max_length")]


@pytest.mark.parametrize(("method", "field", "value"), [
    ("PIX", "card", dict(CARD)), ("PIX", "card", None),
    ("BOLETO", "pix", {"expiresIn": 60}),
    ("PIX", "boleto", {"dueDate": "2026-12-01"}), ("CREDIT_CARD", "boleto", {}),
])
def test_method_options_only_with_their_method(merchant, method, field, value):
    allowed = {"card": "CREDIT_CARD", "pix": "PIX", "boleto": "BOLETO"}[field]

    assert error_of(payin_body(method, {field: value}), merchant)["details"] == [
        {"param": field, "code": "not_allowed", "message": f"Allowed only when paymentMethod is {allowed}."}]


# --- Card ------------------------------------------------------------------------------------------------------------
def test_card_required_for_credit_card(merchant):
    assert error_of(payin_body("CREDIT_CARD", {"card": MISSING}), merchant)["details"] == [
        {"param": "card", "code": "required", "message": "Required for CREDIT_CARD."}]


@pytest.mark.parametrize(("card", "expected"), [
    ({}, [(f"card.{name}", "required") for name in
          ("holderName", "number", "expirationMonth", "expirationYear", "cvv")]),
    ("ctok_test_1", [("card", "invalid")]),
    (None, [("card", "null")]),
])
def test_card_shape(merchant, card, expected):
    assert problems(payin_body("CREDIT_CARD", {"card": card}), merchant) == expected


@pytest.mark.parametrize(("changes", "expected"), [
    ({"card.number": "4111111111111112"}, ("card.number", "invalid_card_number",
                                           "The card number is not valid: its check digit is wrong.")),
    ({"card.number": "4111 1111 1111 1111"}, ("card.number", "invalid_card_number",
                                              "Must be digits only, without spaces or other characters.")),
    ({"card.number": "411111111111"}, ("card.number", "invalid_card_number", "Must be 13 to 19 digits.")),
    ({"card.number": "9000000000000001"}, ("card.number", "unsupported_card_brand",
                                           "The card brand is not supported.")),
    ({"card.holderName": "A"}, ("card.holderName", "min_length", "Ensure this field has at least 2 characters.")),
    ({"card.expirationMonth": "13"}, ("card.expirationMonth", "invalid_expiration_month",
                                      "Must be a month from 01 to 12.")),
    ({"card.expirationMonth": "3"}, ("card.expirationMonth", "invalid_expiration_month",
                                     "Must be the month as two digits, such as 03.")),
    ({"card.expirationYear": "202"}, ("card.expirationYear", "invalid_expiration_year",
                                      "Must be the year as YYYY or YY.")),
    ({"card.expirationYear": "2025"}, ("card.expirationYear", "expired_card", "The card has expired.")),
    ({"card.expirationMonth": "10", "card.expirationYear": "2026"}, ("card.expirationMonth", "expired_card",
                                                                     "The card has expired.")),
    ({"card.cvv": "12"}, ("card.cvv", "invalid_cvv", "Must be 3 digits, or 4 for American Express.")),
    ({"card.cvv": "12a"}, ("card.cvv", "invalid_cvv", "Must be digits only.")),
    ({"card.cvv": "1234"}, ("card.cvv", "invalid_cvv", "Must be 3 digits.")),
    ({"card.number": "378282246310005", "card.cvv": "123"}, ("card.cvv", "invalid_cvv",
                                                             "Must be 4 digits for American Express.")),
    ({"card.installments": 0}, ("card.installments", "min_value",
                                "Ensure this value is greater than or equal to 1.")),
    ({"card.installments": 13}, ("card.installments", "max_value", "Ensure this value is less than or equal to 12.")),
])
def test_bad_card_data(merchant, changes, expected):
    param, code, message = expected

    assert error_of(payin_body("CREDIT_CARD", changes), merchant)["details"] == [
        {"param": param, "code": code, "message": message}]


@pytest.mark.parametrize(("month", "year", "full_year"), [("11", "2026", "2026"), ("01", "27", "2027")])
def test_card_valid_through_the_end_of_its_month(merchant, month, year, full_year):
    body = payin_body("CREDIT_CARD", {"card.expirationMonth": month, "card.expirationYear": year})

    assert validate(body, merchant)["card"]["expirationYear"] == full_year


def test_live_card_in_test_mode(merchant):
    error = error_of(payin_body("CREDIT_CARD", {"card.number": "5105105105105100"}), merchant)

    assert (error["code"], error["message"], error["param"]) == (
        "live_card_in_test_mode", "Test mode accepts only test card numbers", "card.number")
    assert error["details"] == [{"param": "card.number", "code": "live_card_in_test_mode",
                                 "message": "Test mode accepts only the test card numbers."}]


@pytest.mark.parametrize("token_of", ["nobody", "other_merchant", "other_mode"])
def test_token_unknown_to_this_merchant_and_mode(merchant, token_of):
    if token_of == "other_merchant":
        card_token(MerchantFactory())
    elif token_of == "other_mode":
        card_token(merchant, livemode=True)

    assert error_of(payin_body("CREDIT_CARD", {"card": {"token": "ctok_test_1"}}), merchant)["details"] == [
        {"param": "card.token", "code": "invalid_token",
         "message": "No card token of this account and mode has this value."}]


def test_token_of_live_mode_works_in_live_mode(merchant):
    token = card_token(merchant, livemode=True)

    result = validate(payin_body("CREDIT_CARD", {"card": {"token": "ctok_test_1", "installments": 3}}), merchant,
                      livemode=True)

    assert result["card"] == {"token": token, "installments": 3}


@pytest.mark.parametrize("card_data", [{"number": "4111111111111111"}, {"cvv": "123"}])
def test_token_with_card_data(merchant, card_data):
    card_token(merchant)

    assert error_of(payin_body("CREDIT_CARD", {"card": {"token": "ctok_test_1", **card_data}}), merchant)[
        "details"] == [{"param": "card", "code": "token_with_card_data",
                        "message": "Send either a token or the card data (holderName, number, expirationMonth, "
                                   "expirationYear, cvv), not both."}]


@pytest.mark.parametrize("card", [
    {"number": "4111111111111112", "cvv": "987"},
    {"number": "4242424242424242", "cvv": "987"},
    {"number": "4111111111111111", "cvv": "987", "expirationYear": "2020"},
    {"number": "4111111111111111", "cvv": "987", "token": "ctok_x"},
    {"number": 4111111111111111, "cvv": 987},
])
def test_no_message_repeats_the_card_number_or_cvv(merchant, card):
    body = payin_body("CREDIT_CARD", {"card": {**CARD, **card}})

    rendered = json.dumps(error_of(body, merchant))

    assert str(card["number"]) not in rendered
    assert str(card["cvv"]) not in rendered


# --- All at once -----------------------------------------------------------------------------------------------------
def test_every_problem_is_reported_at_once(merchant):
    body = payin_body("CREDIT_CARD", {"amount": 50, "payerIp": "not-an-ip", "card.cvv": "12",
                                      "customer.document": "12345678900", "items.0.quantity": 0})

    error = error_of(body, merchant)

    assert (error["code"], error["param"]) == ("validation_error", None)
    assert error["details"] == [
        {"param": "amount", "code": "amount_too_small", "message": "Must be at least 100 cents for CREDIT_CARD."},
        {"param": "payerIp", "code": "invalid_ip_address", "message": "Must be a valid IPv4 or IPv6 address."},
        {"param": "card.cvv", "code": "invalid_cvv", "message": "Must be 3 digits, or 4 for American Express."},
        {"param": "customer.document", "code": "invalid_document",
         "message": "The CPF's check digits (its last two) are wrong."},
        {"param": "items.0.quantity", "code": "min_value",
         "message": "Ensure this value is greater than or equal to 1."},
    ]


def test_rules_spanning_fields_are_checked_despite_other_problems(merchant):
    body = payin_body("BOLETO", {"amount": 499, "referenceId": "", "customer.address": MISSING,
                                 "card": dict(CARD), "items": []})

    assert problems(body, merchant) == [("amount", "amount_too_small"), ("referenceId", "blank"),
                                        ("card", "not_allowed"), ("customer.address", "required"),
                                        ("items", "min_length")]


@pytest.mark.parametrize(("field", "value"), [("document", "12abß3450de27"), ("document", "12ABſS3450DE27")])
def test_a_document_with_letters_no_document_has_is_refused(api, field, value):
    """str.upper() would fold "ß" into "SS" and "ſ" into "S"; a document only ever has ASCII letters and digits."""
    body = payin_body()
    body["customer"][field] = value
    response = api.post("/payin", body, format="json")
    assert response.status_code == 400, response.content
    assert [d["param"] for d in response.json()["error"]["details"]] == ["customer.document"]


def test_a_state_is_upper_cased_in_ascii_only(api):
    body = payin_body("BOLETO")
    body["customer"]["address"]["state"] = "ſp"
    response = api.post("/payin", body, format="json")
    assert response.status_code == 400, response.content
    assert [d["param"] for d in response.json()["error"]["details"]] == ["customer.address.state"]


# --- Awkward values: an answer, never a crash ------------------------------------------------------------------------
def _field_bounds() -> tuple[set[int], set[int]]:
    """The lengths and numbers where the serializers' rules turn, read from their fields, with one either side."""
    lengths = {METADATA_KEY_MAX_LENGTH, METADATA_VALUE_MAX_LENGTH}
    numbers = {*MIN_AMOUNT.values(), 10_000_000}

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
    "": {"card": CARD, "pix": {"expiresIn": 60}, "boleto": {}, "webhookUrl": "https://hooks.example.com/x",
         "description": "x", "metadata": {"k": "v"}},
    "customer": {"phone": "11987654321", "address": ADDRESS},
    "customer.address": {"complement": "Apto 5"},
    "items.*": {"description": "Azul"},
    "card": {"token": "ctok_test_1", "installments": 2},
    "pix": {"expiresIn": 60},
    "boleto": {"dueDate": "2026-12-01", "instructions": "x"},
    "metadata": {"k" * METADATA_KEY_MAX_LENGTH: "v", "k" * (METADATA_KEY_MAX_LENGTH + 1): "v", "": "v", "\x00": "v"},
}


def _containers_at(value: dict | list, path: tuple = ()) -> Iterator[tuple[tuple, dict | list]]:
    yield path, value
    for key, child in value.items() if isinstance(value, dict) else enumerate(value):
        if isinstance(child, dict | list):
            yield from _containers_at(child, (*path, key))


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
    for path, container in list(_containers_at(body)):
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


@pytest.mark.parametrize("base", [
    payin_body("PIX", SHAPES["pix with every option"][1]),
    payin_body("BOLETO", {"isPhysicalProduct": True, "webhookUrl": "https://hooks.example.com/payin",
                          "boleto": {"dueDate": "2026-12-01", "instructions": "x"}}),
    payin_body("CREDIT_CARD", {"card.installments": 2}),
], ids=["PIX", "BOLETO", "CREDIT_CARD"])
def test_every_mutation_gets_a_result_or_a_400_and_is_left_as_sent(merchant, base):
    """Each field removed, of another JSON type, blank, padded, at and past its bounds, NUL, surrogates, full-width
    digits, huge or nested; unknown and optional fields added, at every level: never an unexpected exception."""
    card_token(merchant)
    bodies = list(mutations(base))
    accepted = 0

    for body in bodies:
        sent = copy.deepcopy(body)
        try:
            validate(body, merchant)
            accepted += 1
        except DomainError as exc:
            assert exc.status_code == 400 and exc.details, body
        assert body == sent

    assert len(bodies) > 1_000
    assert accepted > 0  # the valid ones among them (a blank description, a 100th item...)
