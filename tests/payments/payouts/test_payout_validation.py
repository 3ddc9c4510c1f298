"""The body of POST /payout (SPEC §4.1): each rule, every problem at once, and no Pix key echoed in a message."""

import copy
from collections import OrderedDict

import pytest
from django.utils import translation

from core.errors import DomainError, as_domain_error, error_body
from core.formats import documents
from payments.formats.pix_keys import PIX_KEY_TYPES
from payments.payouts.validation import payout_request_validate

MISSING = object()

REQUIRED = ["amount", "pixKey", "pixKeyType", "referenceId"]
# Each message names exactly what is wrong (characters, length, check digits, one digit repeated), never the value.
CPF_KEY = {
    "characters": "Must be digits only, without punctuation or spaces, for pixKeyType CPF.",
    "length": "Must be 11 digits, for pixKeyType CPF.",
    "repeated": "Must not be one digit repeated: no CPF is.",
    "check_digits": "The CPF's check digits (its last two) are wrong.",
}
CNPJ_KEY = {
    "characters": "Must be digits and uppercase letters only, without punctuation or spaces, for pixKeyType CNPJ.",
    "length": "Must be 14 characters, for pixKeyType CNPJ.",
    "check_digit_characters": "The CNPJ's last two characters, its check digits, must be digits.",
    "repeated": "Must not be one character repeated: no CNPJ is.",
    "check_digits": "The CNPJ's check digits (its last two) are wrong.",
}
EMAIL_KEY = {
    "length": "Must be at most 77 characters, for pixKeyType EMAIL.",
    "characters": "Must be ASCII characters only, for pixKeyType EMAIL.",
    "format": "Must be an email address (a name, @ and a domain with a dot), for pixKeyType EMAIL.",
}
PHONE_KEY = {
    "characters": "Must be digits only after an optional +, without spaces, dashes or parentheses, for pixKeyType "
                  "PHONE.",
    "country_code": "Must start with +55, Brazil's country code, for pixKeyType PHONE.",
    "format": "Must be +55, a two-digit area code without a 0, then 8 digits or 9 starting with 9, for pixKeyType "
              "PHONE.",
}
EVP_KEY = {
    "length": "Must be 36 characters, for pixKeyType EVP.",
    "format": "Must be a UUID: hex digits in groups of 8-4-4-4-12 joined by '-', for pixKeyType EVP.",
}
DOCUMENT = {
    "characters": "Must have only digits, letters (a CNPJ's) and the punctuation '.', '-', '/' or spaces.",
    "length": "Must be a CPF of 11 digits or a CNPJ of 14 characters, punctuation aside.",
    "cpf_characters": "A CPF (11 characters) has digits only.",
    "cpf_repeated": "Must not be one digit repeated: no CPF is.",
    "cpf_check_digits": "The CPF's check digits (its last two) are wrong.",
    "cnpj_check_digit_characters": "The CNPJ's last two characters, its check digits, must be digits.",
    "cnpj_repeated": "Must not be one character repeated: no CNPJ is.",
    "cnpj_check_digits": "The CNPJ's check digits (its last two) are wrong.",
}
REFERENCE_LENGTH = "Must be at most 64 characters."
REFERENCE_CHARACTERS = "Must have only letters, digits, '.', '_', ':' and '-' (no spaces)."


def payout_body(changes: dict | None = None) -> dict:
    """A valid body (a CPF key), with `changes` applied (MISSING deletes the key)."""
    body = {"amount": 5000, "pixKey": "52998224725", "pixKeyType": "CPF", "referenceId": "payout-1"}
    for name, value in (changes or {}).items():
        if value is MISSING:
            body.pop(name, None)
        else:
            body[name] = value
    return body


def validate(body, merchant) -> dict:
    return payout_request_validate(body, merchant=merchant)


def error_of(body, merchant) -> dict:
    """The `error` object of the API's 400 body for `body`."""
    with pytest.raises(DomainError) as caught:
        validate(body, merchant)
    return error_body(as_domain_error(caught.value))["error"]


def details_of(body, merchant) -> list[dict]:
    return error_of(body, merchant)["details"]


def detail(param: str | None, code: str, message: str) -> dict:
    return {"param": param, "code": code, "message": message}


def expected_output(**changes) -> dict:
    """The normalized output of `payout_body()`, with `changes`."""
    return {"amount": 5000, "pix_key": "52998224725", "pix_key_as_sent": "52998224725", "pix_key_type": "CPF",
            "reference_id": "payout-1", "beneficiary_name": "", "beneficiary_document": "", "webhook_url": "",
            "description": "", "metadata": {}, **changes}


@pytest.fixture(autouse=True)
def english():
    """The messages as the API gives them (in English, core.middleware), whichever test ran before in the thread."""
    with translation.override("en"):
        yield


@pytest.fixture(autouse=True)
def _public_dns_and_limits(settings, public_webhook_targets):
    settings.PAYOUT_MAX_AMOUNT = 5_000_000


# --- Happy paths -----------------------------------------------------------------------------------------------------
def test_minimal_body_normalized_with_defaults(merchant):
    result = validate(payout_body(), merchant)

    assert result == expected_output()


@pytest.mark.parametrize(("key_type", "sent", "canonical"), [
    ("CPF", "52998224725", "52998224725"),
    ("CNPJ", "12ABC34501DE35", "12ABC34501DE35"),
    ("EMAIL", "Ana.Souza@Example.com", "ana.souza@example.com"),
    ("PHONE", "5511987654321", "+5511987654321"),
    ("PHONE", "+551133334444", "+551133334444"),
    ("EVP", "123E4567-E89B-42D3-A456-426614174000", "123e4567-e89b-42d3-a456-426614174000"),
])
def test_each_key_type_normalized_and_kept_as_sent(merchant, key_type, sent, canonical):
    result = validate(payout_body({"pixKeyType": key_type, "pixKey": sent}), merchant)

    assert result == expected_output(pix_key=canonical, pix_key_as_sent=sent, pix_key_type=key_type)


def test_full_body_normalized(merchant):
    body = payout_body({
        "amount": 1, "pixKeyType": "EMAIL", "pixKey": "Ana@Example.com", "referenceId": "A-z_0.9:x",
        "beneficiaryName": "  Ana Souza  ", "beneficiaryDocument": "12.abc.345/01de-35",
        "webhookUrl": "https://hooks.example.com/payout?x=1", "description": "Saque semanal",
        "metadata": {"batch": "7"},
    })

    result = validate(body, merchant)

    assert result == {
        "amount": 1, "pix_key": "ana@example.com", "pix_key_as_sent": "Ana@Example.com", "pix_key_type": "EMAIL",
        "reference_id": "A-z_0.9:x", "beneficiary_name": "Ana Souza", "beneficiary_document": "12ABC34501DE35",
        "webhook_url": "https://hooks.example.com/payout?x=1", "description": "Saque semanal",
        "metadata": {"batch": "7"},
    }


# A valid CNPJ with "SS" in it: "ß".upper() is "SS", but documents are upper-cased in ASCII only.
CNPJ_SS = "12ABSS3450DE" + documents.cnpj_check_digits("12ABSS3450DE")
EMAIL_77 = "a" * 20 + "@" + "b" * 52 + ".com"


@pytest.mark.parametrize(("changes", "expected"), [
    ({"pixKeyType": "EVP", "pixKey": "5F0C1A9E-3B7D-4C2E-9A41-7D2B6E8F0C13", "amount": 5_000_000},
     {"pix_key": "5f0c1a9e-3b7d-4c2e-9a41-7d2b6e8f0c13", "pix_key_as_sent": "5F0C1A9E-3B7D-4C2E-9A41-7D2B6E8F0C13",
      "pix_key_type": "EVP", "amount": 5_000_000}),
    ({"pixKeyType": "CNPJ", "pixKey": CNPJ_SS, "beneficiaryDocument": "12abss3450de" + CNPJ_SS[-2:]},
     {"pix_key": CNPJ_SS, "pix_key_as_sent": CNPJ_SS, "pix_key_type": "CNPJ", "beneficiary_document": CNPJ_SS}),
    ({"pixKeyType": "EMAIL", "pixKey": EMAIL_77, "beneficiaryDocument": "111.444.777-35"},
     {"pix_key": EMAIL_77, "pix_key_as_sent": EMAIL_77, "pix_key_type": "EMAIL",
      "beneficiary_document": "11144477735"}),
    ({"pixKeyType": "PHONE", "pixKey": "552133334444", "beneficiaryDocument": "11.222.333/0001-81",
      "beneficiaryName": "  Ana  "},
     {"pix_key": "+552133334444", "pix_key_as_sent": "552133334444", "pix_key_type": "PHONE",
      "beneficiary_document": "11222333000181", "beneficiary_name": "Ana"}),
    ({"description": " \t ", "metadata": {}, "beneficiaryName": ""}, {}),
    ({"description": "  Saque  ", "metadata": {"a": "1", "b": ""}}, {"description": "Saque",
                                                                     "metadata": {"a": "1", "b": ""}}),
])
def test_bodies_of_every_shape_are_accepted_and_left_as_sent(merchant, changes, expected):
    body = payout_body(changes)
    sent = copy.deepcopy(body)

    result = validate(body, merchant)

    assert result == expected_output(**expected)
    assert body == sent


def test_a_beneficiary_document_with_letters_no_document_has_is_refused(merchant):
    """str.upper() would fold "ß" into "SS"; a document only ever has ASCII letters and digits."""
    body = payout_body({"pixKeyType": "EMAIL", "pixKey": "ana@example.com",
                        "beneficiaryDocument": "12abß3450de" + CNPJ_SS[-2:]})

    assert [(d["param"], d["code"]) for d in details_of(body, merchant)] == [
        ("beneficiaryDocument", "invalid_document")]


# --- Shape: required, types, unknown fields --------------------------------------------------------------------------
def test_empty_body_reports_every_required_field(merchant):
    error = error_of({}, merchant)

    assert (error["code"], error["param"]) == ("validation_error", None)
    assert error["details"] == [detail(name, "required", "This field is required.") for name in REQUIRED]


@pytest.mark.parametrize("name", REQUIRED)
def test_each_required_field_missing(merchant, name):
    error = error_of(payout_body({name: MISSING}), merchant)

    assert (error["code"], error["param"]) == ("validation_error", name)
    assert error["details"] == [detail(name, "required", "This field is required.")]


@pytest.mark.parametrize(("body", "expected"), [
    ([payout_body()], [detail(None, "invalid", "Invalid data. Expected a dictionary, but got list.")]),
    (None, [detail(None, "null", "No data provided")]),
    ("amount=5000", [detail(None, "invalid", "Invalid data. Expected a dictionary, but got str.")]),
])
def test_body_that_is_not_an_object(merchant, body, expected):
    assert details_of(body, merchant) == expected


@pytest.mark.parametrize(("name", "value", "code", "message"), [
    ("amount", 5000.0, "invalid", "Must be a JSON integer."),
    ("amount", 100.5, "invalid", "Must be a JSON integer."),
    ("amount", "5000", "invalid", "Must be a JSON integer."),
    ("amount", True, "invalid", "Must be a JSON integer."),
    ("amount", None, "null", "This field may not be null."),
    ("pixKey", 52998224725, "invalid", "Must be a JSON string."),
    ("pixKey", None, "null", "This field may not be null."),
    ("pixKey", "", "blank", "This field may not be blank."),
    ("pixKeyType", "cpf", "invalid_choice", "Must be one of CPF, CNPJ, EMAIL, PHONE, EVP."),
    ("pixKeyType", "RANDOM", "invalid_choice", "Must be one of CPF, CNPJ, EMAIL, PHONE, EVP."),
    ("pixKeyType", 1, "invalid_choice", "Must be one of CPF, CNPJ, EMAIL, PHONE, EVP."),
    ("pixKeyType", None, "null", "This field may not be null."),
    ("referenceId", 1, "invalid", "Must be a JSON string."),
    ("beneficiaryName", None, "null", "This field may not be null."),
    ("beneficiaryName", ["Ana"], "invalid", "Must be a JSON string."),
    ("beneficiaryDocument", 52998224725, "invalid", "Must be a JSON string."),
    ("beneficiaryDocument", None, "null", "This field may not be null."),
    ("beneficiaryDocument", "", "blank", "This field may not be blank."),
    ("webhookUrl", None, "null", "This field may not be null."),
    ("description", 140, "invalid", "Must be a JSON string."),
    ("metadata", None, "null", "This field may not be null."),
])
def test_wrong_json_types_are_refused(merchant, name, value, code, message):
    error = error_of(payout_body({name: value}), merchant)

    assert (error["code"], error["param"]) == ("validation_error", name)
    assert error["details"] == [detail(name, code, message)]


@pytest.mark.parametrize("name", ["foo", "pix_key", "PixKey", "currency", "fee"])
def test_unknown_fields_are_refused(merchant, name):
    error = error_of(payout_body({name: "x"}), merchant)

    assert (error["code"], error["message"], error["param"]) == (
        "unknown_field", "The request has unknown fields", name)
    assert error["details"] == [detail(name, "unknown_field", f"Unknown field '{name}'.")]


def test_unknown_field_mixed_with_another_problem_is_a_validation_error(merchant):
    error = error_of(payout_body({"amount": 5000.0, "amout": 5000}), merchant)

    assert (error["code"], error["param"]) == ("validation_error", None)
    assert error["details"] == [detail("amount", "invalid", "Must be a JSON integer."),
                                detail("amout", "unknown_field", "Unknown field 'amout'.")]


# --- Amount ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("amount", [0, -1, -5000])
def test_amount_below_one_cent(merchant, amount):
    error = error_of(payout_body({"amount": amount}), merchant)

    assert (error["code"], error["param"]) == ("amount_too_small", "amount")
    assert error["details"] == [detail("amount", "amount_too_small", "Must be at least 1 cent.")]


def test_amount_of_one_cent_accepted(merchant):
    assert validate(payout_body({"amount": 1}), merchant)["amount"] == 1


@pytest.mark.parametrize(("merchant_max", "maximum"), [(None, 5_000_000), (100_000, 100_000),
                                                       (8_000_000, 8_000_000)])
def test_amount_maximum_is_the_merchants_own_or_the_default(merchant, merchant_max, maximum):
    merchant.payout_max_amount = merchant_max

    accepted = validate(payout_body({"amount": maximum}), merchant)
    error = error_of(payout_body({"amount": maximum + 1}), merchant)

    assert accepted["amount"] == maximum
    assert (error["code"], error["message"], error["param"]) == (
        "payout_limit_exceeded", "The payout exceeds the merchant's limit", "amount")
    assert error["details"] == [detail("amount", "payout_limit_exceeded",
                                       f"Must be at most {maximum} cents, this account's maximum per payout.")]


@pytest.mark.parametrize(("merchant_max", "amount", "code"), [
    (0, 1, "payout_limit_exceeded"),  # 0 is a maximum, not "the default"
    (None, 2**63, "payout_limit_exceeded"),  # past a BIGINT
    (2**63 - 1, 2**63, "payout_limit_exceeded"),
    (None, -(2**63), "amount_too_small"),
    (None, 10**5000, "invalid"),  # too long to be read as a number
], ids=["zero-maximum", "bigint-default-maximum", "bigint-bigint-maximum", "negative-bigint", "5001-digits"])
def test_amount_at_the_extremes(merchant, merchant_max, amount, code):
    merchant.payout_max_amount = merchant_max

    assert [(d["param"], d["code"]) for d in details_of(payout_body({"amount": amount}), merchant)] == [
        ("amount", code)]


def test_amount_maximum_follows_the_setting(merchant, settings):
    settings.PAYOUT_MAX_AMOUNT = 20_000

    assert validate(payout_body({"amount": 20_000}), merchant)["amount"] == 20_000
    assert details_of(payout_body({"amount": 20_001}), merchant) == [
        detail("amount", "payout_limit_exceeded", "Must be at most 20000 cents, this account's maximum per payout.")]


def test_amount_above_the_maximum_with_another_problem_is_a_validation_error(merchant):
    error = error_of(payout_body({"amount": 5_000_001, "description": "x" * 141}), merchant)

    assert (error["code"], error["param"]) == ("validation_error", None)
    assert error["details"] == [
        detail("amount", "payout_limit_exceeded", "Must be at most 5000000 cents, this account's maximum per payout."),
        detail("description", "max_length", "Ensure this field has no more than 140 characters."),
    ]


# --- pixKey and pixKeyType -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key_type", "key", "message"), [
    ("CPF", "52998224726", CPF_KEY["check_digits"]),
    ("CPF", "11111111111", CPF_KEY["repeated"]),
    ("CPF", "529.982.247-25", CPF_KEY["characters"]),
    ("CPF", "5299822472a", CPF_KEY["characters"]),
    ("CPF", "5299822472", CPF_KEY["length"]),
    ("CPF", "11222333000181", CPF_KEY["length"]),  # a CNPJ
    ("CNPJ", "11222333000182", CNPJ_KEY["check_digits"]),
    ("CNPJ", "12ABC34501DE36", CNPJ_KEY["check_digits"]),
    ("CNPJ", "00000000000000", CNPJ_KEY["repeated"]),
    ("CNPJ", "12ABC34501DEAB", CNPJ_KEY["check_digit_characters"]),
    ("CNPJ", "12abc34501de35", CNPJ_KEY["characters"]),  # lowercase
    ("CNPJ", "11.222.333/0001-81", CNPJ_KEY["characters"]),
    ("CNPJ", "52998224725", CNPJ_KEY["length"]),  # a CPF
    ("EMAIL", "ana", EMAIL_KEY["format"]),
    ("EMAIL", "ana@example", EMAIL_KEY["format"]),
    ("EMAIL", " ana@example.com", EMAIL_KEY["format"]),
    ("EMAIL", "joão@example.com", EMAIL_KEY["characters"]),
    ("EMAIL", "a" * 21 + "@" + "b" * 52 + ".com", EMAIL_KEY["length"]),  # 78 characters
    ("PHONE", "11987654321", PHONE_KEY["country_code"]),
    ("PHONE", "1133334444", PHONE_KEY["country_code"]),
    ("PHONE", "+5411987654321", PHONE_KEY["country_code"]),
    ("PHONE", "+5501987654321", PHONE_KEY["format"]),  # area code 0x
    ("PHONE", "+55 11 98765-4321", PHONE_KEY["characters"]),
    ("PHONE", "+5511887654321", PHONE_KEY["format"]),  # 9 digits not starting with 9
    ("EVP", "123e4567e89b42d3a456426614174000", EVP_KEY["length"]),  # no hyphens
    ("EVP", "{123e4567-e89b-42d3-a456-426614174000}", EVP_KEY["length"]),  # braces
    ("EVP", "123e4567-e89b-42d3-a456-42661417400g", EVP_KEY["format"]),
    ("EVP", "52998224725", EVP_KEY["length"]),
])
def test_key_that_does_not_fit_its_type(merchant, key_type, key, message):
    error = error_of(payout_body({"pixKeyType": key_type, "pixKey": key}), merchant)

    assert error == {"type": "invalid_request_error", "code": "validation_error",
                     "message": "The request has invalid fields", "param": "pixKey",
                     "details": [detail("pixKey", "invalid_pix_key", message)], "requestId": error["requestId"]}
    assert key not in message


@pytest.mark.parametrize(("key_type", "key"), [
    ("CPF", "11144477735"),
    ("CNPJ", "11222333000181"),
    ("EMAIL", "a" * 20 + "@" + "b" * 52 + ".com"),  # 77 characters
    ("PHONE", "+5521912345678"),
    ("PHONE", "552133334444"),
    ("EVP", "123e4567-e89b-42d3-a456-426614174000"),
])
def test_key_that_fits_its_type(merchant, key_type, key):
    assert validate(payout_body({"pixKeyType": key_type, "pixKey": key}), merchant)["pix_key_type"] == key_type


@pytest.mark.parametrize("key_type", ["cpf", "RANDOM", MISSING])
def test_key_is_not_checked_without_a_valid_type(merchant, key_type):
    error = error_of(payout_body({"pixKeyType": key_type, "pixKey": "not a key"}), merchant)

    assert [(d["param"], d["code"]) for d in error["details"]] == [
        ("pixKeyType", "required" if key_type is MISSING else "invalid_choice")]


# --- referenceId, beneficiaryName, description, metadata -------------------------------------------------------------
@pytest.mark.parametrize(("value", "code", "message"), [
    ("a" * 65, "invalid_reference_id", REFERENCE_LENGTH),
    ("payout 1", "invalid_reference_id", REFERENCE_CHARACTERS),
    ("saque-ção", "invalid_reference_id", REFERENCE_CHARACTERS),
    ("", "blank", "This field may not be blank."),
])
def test_bad_reference_id(merchant, value, code, message):
    assert details_of(payout_body({"referenceId": value}), merchant) == [detail("referenceId", code, message)]


@pytest.mark.parametrize("value", ["a", "PAY.2026:11_20-1" + "x" * 48])
def test_good_reference_id_kept_as_sent(merchant, value):
    assert validate(payout_body({"referenceId": value}), merchant)["reference_id"] == value


def test_beneficiary_name_at_most_120_characters(merchant):
    accepted = validate(payout_body({"beneficiaryName": "x" * 120}), merchant)
    refused = details_of(payout_body({"beneficiaryName": "x" * 121}), merchant)

    assert accepted["beneficiary_name"] == "x" * 120
    assert refused == [detail("beneficiaryName", "max_length", "Ensure this field has no more than 120 characters.")]


def test_description_at_most_140_characters(merchant):
    accepted = validate(payout_body({"description": "x" * 140}), merchant)
    refused = details_of(payout_body({"description": "x" * 141}), merchant)

    assert accepted["description"] == "x" * 140
    assert refused == [detail("description", "max_length", "Ensure this field has no more than 140 characters.")]


@pytest.mark.parametrize("name", ["beneficiaryName", "description"])
def test_blank_name_and_description_accepted(merchant, name):
    result = validate(payout_body({name: ""}), merchant)

    assert result == expected_output()


@pytest.mark.parametrize(("metadata", "messages"), [
    ("batch=7", ["Must be a JSON object."]),
    ({f"k{i}": "v" for i in range(21)}, ["Must have at most 20 keys."]),
    ({"k" * 41: "v"}, ["Keys must be 1 to 40 characters."]),
    ({"batch": 7}, ["Values must be strings."]),
    ({"batch": "x" * 501}, ["Values must be at most 500 characters."]),
])
def test_bad_metadata(merchant, metadata, messages):
    assert details_of(payout_body({"metadata": metadata}), merchant) == [
        detail("metadata", "invalid_metadata", message) for message in messages]


def test_metadata_at_its_limits(merchant):
    metadata = {f"{i:02d}" + "k" * 38: "v" * 500 for i in range(20)}

    assert validate(payout_body({"metadata": metadata}), merchant)["metadata"] == metadata


# --- webhookUrl ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "message"), [
    ("http://hooks.example.com/payout", "The webhook URL is not accepted: it must start with https://"),
    ("https://127.0.0.1/payout", "The webhook URL is not accepted: its address is not public"),
    ("https://169.254.169.254/", "The webhook URL is not accepted: its address is not public"),
    ("https://user:pw@hooks.example.com/", "The webhook URL is not accepted: it must not contain credentials"),
])
def test_bad_webhook_url(merchant, value, message):
    assert details_of(payout_body({"webhookUrl": value}), merchant) == [
        detail("webhookUrl", "invalid_webhook_url", message)]


def test_webhook_url_kept(merchant):
    result = validate(payout_body({"webhookUrl": "https://hooks.example.com/payout"}), merchant)

    assert result["webhook_url"] == "https://hooks.example.com/payout"


# --- beneficiaryDocument ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key_type", "key", "document", "normalized"), [
    ("CPF", "52998224725", "52998224725", "52998224725"),
    ("CPF", "52998224725", "529.982.247-25", "52998224725"),
    ("CNPJ", "11222333000181", "11.222.333/0001-81", "11222333000181"),
    ("CNPJ", "12ABC34501DE35", "12.abc.345/01de-35", "12ABC34501DE35"),
    ("EMAIL", "ana@example.com", "529.982.247-25", "52998224725"),  # any valid document for other key types
    ("PHONE", "+5511987654321", "11.222.333/0001-81", "11222333000181"),
    ("EVP", "123e4567-e89b-42d3-a456-426614174000", "11144477735", "11144477735"),
])
def test_beneficiary_document_normalized(merchant, key_type, key, document, normalized):
    body = payout_body({"pixKeyType": key_type, "pixKey": key, "beneficiaryDocument": document})

    assert validate(body, merchant)["beneficiary_document"] == normalized


@pytest.mark.parametrize(("document", "message"), [
    ("52998224726", DOCUMENT["cpf_check_digits"]),
    ("529.982.247-26", DOCUMENT["cpf_check_digits"]),
    ("11111111111", DOCUMENT["cpf_repeated"]),
    ("5299822472A", DOCUMENT["cpf_characters"]),
    ("5299822472", DOCUMENT["length"]),
    ("11222333000182", DOCUMENT["cnpj_check_digits"]),
    ("12ABC34501DEAB", DOCUMENT["cnpj_check_digit_characters"]),
    ("00000000000000", DOCUMENT["cnpj_repeated"]),
    ("ana", DOCUMENT["length"]),
    ("529_982_247_25", DOCUMENT["characters"]),
])
def test_bad_beneficiary_document(merchant, document, message):
    body = payout_body({"pixKeyType": "EMAIL", "pixKey": "ana@example.com", "beneficiaryDocument": document})

    error = error_of(body, merchant)

    assert error == {"type": "invalid_request_error", "code": "validation_error",
                     "message": "The request has invalid fields", "param": "beneficiaryDocument",
                     "details": [detail("beneficiaryDocument", "invalid_document", message)],
                     "requestId": error["requestId"]}


@pytest.mark.parametrize(("key_type", "key", "document"), [
    ("CPF", "52998224725", "11144477735"),  # another CPF
    ("CPF", "52998224725", "111.444.777-35"),
    ("CPF", "52998224725", "11222333000181"),  # a CNPJ
    ("CNPJ", "11222333000181", "12ABC34501DE35"),  # another CNPJ
    ("CNPJ", "12ABC34501DE35", "52998224725"),  # a CPF
])
def test_beneficiary_document_must_be_the_keys(merchant, key_type, key, document):
    error = error_of(payout_body({"pixKeyType": key_type, "pixKey": key, "beneficiaryDocument": document}), merchant)

    assert (error["code"], error["message"], error["param"]) == (
        "beneficiary_mismatch", "The beneficiary document is not the document of the Pix key", "beneficiaryDocument")
    assert error["details"] == [detail("beneficiaryDocument", "beneficiary_mismatch",
                                       f"Must be the same document as pixKey when pixKeyType is {key_type}.")]


def test_mismatch_is_not_reported_for_an_invalid_key(merchant):
    body = payout_body({"pixKey": "52998224726", "beneficiaryDocument": "11144477735"})

    assert details_of(body, merchant) == [detail("pixKey", "invalid_pix_key", CPF_KEY["check_digits"])]


def test_mismatch_is_reported_with_the_other_problems(merchant):
    body = payout_body({"amount": 0, "beneficiaryDocument": "11144477735"})

    error = error_of(body, merchant)

    assert (error["code"], error["param"]) == ("validation_error", None)
    assert error["details"] == [
        detail("amount", "amount_too_small", "Must be at least 1 cent."),
        detail("beneficiaryDocument", "beneficiary_mismatch",
               "Must be the same document as pixKey when pixKeyType is CPF."),
    ]


# --- All at once -----------------------------------------------------------------------------------------------------
def test_every_problem_is_reported_at_once(merchant):
    body = {"amount": "5000", "pixKeyType": "PHONE", "pixKey": "11987654321", "referenceId": "payout 1",
            "beneficiaryName": "x" * 121, "beneficiaryDocument": "12345678900",
            "webhookUrl": "https://10.0.0.1/hook", "description": "x" * 141, "metadata": [], "currency": "BRL"}

    error = error_of(body, merchant)

    assert (error["code"], error["param"]) == ("validation_error", None)
    assert error["details"] == [
        detail("amount", "invalid", "Must be a JSON integer."),
        detail("pixKey", "invalid_pix_key", PHONE_KEY["country_code"]),
        detail("referenceId", "invalid_reference_id", REFERENCE_CHARACTERS),
        detail("beneficiaryName", "max_length", "Ensure this field has no more than 120 characters."),
        detail("beneficiaryDocument", "invalid_document", DOCUMENT["cpf_check_digits"]),
        detail("webhookUrl", "invalid_webhook_url", "The webhook URL is not accepted: its address is not public"),
        detail("description", "max_length", "Ensure this field has no more than 140 characters."),
        detail("metadata", "invalid_metadata", "Must be a JSON object."),
        detail("currency", "unknown_field", "Unknown field 'currency'."),
    ]


# --- Awkward values: an answer, never a crash ------------------------------------------------------------------------
EVP = "5f0c1a9e-3b7d-4c2e-9a41-7d2b6e8f0c13"
NASTY = [
    None, "", " ", "  x  ", 0, -1, 1.5, "100", True, False, [], {}, "a" * 10_000, "\x00", "é", "１２３", "\ud800",
    2**63, 5000.0, "x\x00", "\t\n", "\u00a0x\u3000",
]
VARIANTS = {
    "amount": [1, 2, 1000, 1001, 4_999_999, 5_000_000, 5_000_001, 2**63 - 1, -(2**63), 10**5000, "5000", "1.0"],
    "pixKeyType": [*PIX_KEY_TYPES, "evp", "Cpf", " CPF", "CPF ", "RANDOM"],
    "pixKey": [
        "52998224725", "529.982.247-25", "52998224726", "11111111111", "５２９９８２２４７２５",
        "11222333000181", "12ABC34501DE35", "12abc34501de35", "11.222.333/0001-81", "12ABC34501DE36", CNPJ_SS,
        "Ana@Example.com", "ANA@EXAMPLE.COM", "ana@example.com", EMAIL_77, "c" + EMAIL_77, "ana@localhost",
        "ana@[127.0.0.1]", "ana..souza@example.com", "ána@example.com", " ana@example.com", "ana@example.com\n",
        "+5511987654321", "5511987654321", "11987654321", "+55 11 98765-4321", "+5511887654321", "+5501987654321",
        "+551133334444", "551133334444",
        EVP, EVP.upper(), EVP.replace("-", ""), "{" + EVP + "}", EVP + "\n", " " + EVP,
    ],
    "referenceId": ["a" * 64, "a" * 65, "ref 1", "ref\n", "saque-ção", "A-z_0.9:x"],
    "beneficiaryName": ["Ana", "x" * 120, "x" * 121, " " + "x" * 120 + " ", "Ana\ud800", "\u2003"],
    "beneficiaryDocument": [
        "52998224725", "529.982.247-25", " 52998224725 ", "52998224726", "11144477735", "11222333000181",
        "11.222.333/0001-81", "12ABC34501DE35", "12.abc.345/01de-35", CNPJ_SS, "12abß3450de" + CNPJ_SS[-2:],
        ". - /", "529 982 247 25",
    ],
    "description": ["Saque", "x" * 140, "x" * 141, "  " + "x" * 140 + "  ", "Saque\ud800"],
    "metadata": [
        {"k": "v"}, {f"k{i}": "v" for i in range(20)}, {f"k{i}": "v" for i in range(21)}, {"k" * 40: "v"},
        {"k" * 41: "v"}, {"": "v"}, {"k": "v" * 500}, {"k": "v" * 501}, {"k": 1}, {"k": None}, {"k\x00": "v"},
        {"k": "\ud800"}, {1: "v"}, {"k": {"n": "v"}}, {"k": ["v"]}, OrderedDict(k="v"), "k=v",
    ],
    "webhookUrl": ["https://hooks.example.com/payout", "http://hooks.example.com/payout", "https://10.0.0.1/"],
}
UNKNOWN_FIELDS = [("currency", "BRL"), ("Amount", 1), ("pixkey", EVP), ("", "x")]


class _Str(str):
    pass


def mutations(base: dict) -> list:
    """Every field removed, then set to each hostile value and each near miss; an unknown field; odd containers."""
    bodies: list = []
    for name, variants in VARIANTS.items():
        for value in [MISSING, *NASTY, *variants]:
            mutated = {key: item for key, item in base.items() if key != name}
            if value is not MISSING:
                mutated[name] = value
            bodies.append(mutated)
    bodies += [{**base, name: value} for name, value in UNKNOWN_FIELDS]
    bodies += [OrderedDict(base), {key: _Str(item) if isinstance(item, str) else item for key, item in base.items()},
               [base], None, ""]
    return bodies


@pytest.mark.parametrize("base", [
    payout_body({"pixKeyType": "CPF", "beneficiaryName": "Ana Souza", "beneficiaryDocument": "529.982.247-25"}),
    payout_body({"pixKeyType": "CNPJ", "pixKey": "12ABC34501DE35", "beneficiaryDocument": "12.abc.345/01de-35",
                 "metadata": {"batch": "7"}}),
    payout_body({"pixKeyType": "EMAIL", "pixKey": "Ana.Souza@Example.com", "description": "  Saque  "}),
    payout_body({"pixKeyType": "PHONE", "pixKey": "+5511987654321", "beneficiaryName": "  Ana  "}),
    payout_body({"pixKeyType": "EVP", "pixKey": EVP, "webhookUrl": "https://hooks.example.com/payout"}),
], ids=["CPF", "CNPJ", "EMAIL", "PHONE", "EVP"])
def test_every_mutation_gets_a_result_or_a_400_and_is_left_as_sent(merchant, base):
    bodies = mutations(base)
    accepted = 0

    for body in bodies:
        sent = copy.deepcopy(body)
        try:
            validate(body, merchant)
            accepted += 1
        except DomainError as exc:
            assert exc.status_code == 400 and exc.details, body
        assert body == sent

    assert accepted >= 20  # the valid ones among them
