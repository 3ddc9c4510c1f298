"""The API reference (issue 16): every property, parameter and operation of /openapi.json documented, the examples
true to the rules they illustrate, the error codes and the guide held to the code, and /docs served offline."""

from __future__ import annotations

import ast
import json
import re
import time
from pathlib import Path

import jsonschema
import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import get_resolver
from drf_spectacular.generators import SchemaGenerator
from standardwebhooks.webhooks import Webhook

from payments.management.commands.errors_guide import guide_generated
from payments.models import PixKeyType
from payments.reference.errors import (
    API_PACKAGES,
    DETAIL_CODES,
    MEANINGS,
    error_catalog,
    errors_markdown,
    request_field_codes,
)
from payments.reference.hook import is_object, resolve
from webhooks import signing

DOCS = Path(settings.BASE_DIR) / "docs"
# SPEC §1.1: the codes the contract names; each must be a code of the API.
SPEC_CODES = {
    "validation_error", "malformed_json", "unknown_field", "insufficient_balance", "amount_too_small",
    "amount_too_large", "payout_limit_exceeded", "live_card_in_test_mode", "beneficiary_mismatch",
    "invalid_webhook_url", "authentication_required", "invalid_api_key", "kyc_not_approved", "account_suspended",
    "test_mode_only", "not_found", "method_not_allowed", "invalid_state", "duplicate_reference_id",
    "idempotency_key_in_use", "refund_not_supported", "payload_too_large", "unsupported_media_type",
    "idempotency_key_reused", "rate_limited", "internal_error", "rail_unavailable",
}


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _validate(value: object, schema: dict, components: dict) -> None:
    """`value` against an OpenAPI 3.0 schema (its `$ref`s resolved in `components`)."""
    root = {**schema, "components": {"schemas": components}}
    jsonschema.Draft7Validator(root).validate(value)


def _operations(schema: dict):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield f"{method.upper()} {path}", operation


def test_every_property_of_every_component_has_a_description_and_a_valid_example(schema):
    components = schema["components"]["schemas"]
    undocumented, bad_examples = [], []

    for name, component in components.items():
        for prop_name, prop in component.get("properties", {}).items():
            where = f"{name}.{prop_name}"
            if not prop.get("description", "").strip():
                undocumented.append(f"{where}: no description")
            if is_object(prop, components):
                continue  # an object's example is its properties'
            if "example" not in prop:
                undocumented.append(f"{where}: no example")
            elif not (prop["example"] is None and prop.get("nullable")):
                try:
                    _validate(prop["example"], resolve(prop, components), components)
                except jsonschema.ValidationError as exc:
                    bad_examples.append(f"{where}: {exc.message}")

    assert undocumented == [], "add a help_text or a payments/reference/glossary.py entry"
    assert bad_examples == []


def test_every_operation_has_a_summary_a_description_and_documented_parameters(schema):
    missing = []

    for name, operation in _operations(schema):
        for key in ("summary", "description"):
            if not operation.get(key, "").strip():
                missing.append(f"{name}: no {key}")
        for parameter in operation.get("parameters", []):
            if not parameter.get("description", "").strip():
                missing.append(f"{name}: parameter {parameter['name']} has no description")

    assert missing == []


def test_every_request_body_has_examples_that_its_schema_accepts(schema):
    components = schema["components"]["schemas"]
    problems = []

    for name, operation in _operations(schema):
        content = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if content is None:
            continue
        if not content.get("examples"):
            problems.append(f"{name}: no request example")
        for key, example in content.get("examples", {}).items():
            try:
                _validate(example["value"], content["schema"], components)
            except jsonschema.ValidationError as exc:
                problems.append(f"{name} example {key}: {exc.message}")

    assert problems == []


def test_payin_and_payout_examples_cover_every_method_and_pix_key_type(schema):
    def bodies(path: str) -> list[dict]:
        content = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        return [example["value"] for example in content["examples"].values()]

    payins = bodies("/payin")
    payouts = bodies("/payout")

    assert {body["paymentMethod"] for body in payins} == {"PIX", "BOLETO", "CREDIT_CARD"}
    assert any("address" in body["customer"] for body in payins if body["paymentMethod"] == "BOLETO")
    cards = [body["card"] for body in payins if body["paymentMethod"] == "CREDIT_CARD"]
    assert any("token" in card for card in cards) and any("number" in card for card in cards)
    assert {body["pixKeyType"] for body in payouts} == set(PixKeyType.values)


def test_every_error_code_has_a_meaning_and_the_specs_codes_are_all_there(schema):
    get_resolver().url_patterns  # every API module, so every DomainError subclass, is loaded
    codes = {error.code for error in error_catalog()}

    assert sorted(error.code for error in error_catalog() if not error.meaning) == []
    assert SPEC_CODES - codes == set()
    assert set(MEANINGS) - codes == set(), "a meaning for a code the API no longer has"
    assert all(f"`{code}`" in schema["info"]["description"] for code in codes)


def test_the_errors_guide_is_the_generated_list():
    get_resolver().url_patterns

    guide = (DOCS / "errors.md").read_text()

    assert guide_generated(guide) == guide, (
        "docs/errors.md drifted from the code: run `python manage.py errors_guide`")
    assert errors_markdown() in guide


def test_the_changelog_names_the_current_api_version():
    assert f"`{settings.API_VERSION}`" in (DOCS / "changelog.md").read_text()


def test_the_guide_links_resolve():
    broken = []
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if not (page.parent / target).exists():
                broken.append(f"{page.name} -> {target}")

    assert broken == []


@pytest.mark.django_db
def test_docs_page_loads_nothing_from_the_internet():
    response = Client().get("/docs")

    html = response.content.decode()
    assert response.status_code == 200
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)""", html) + re.findall(r"url\(([^)]+)\)", html)
    assert urls, html
    assert [url for url in urls if re.match(r"^(https?:)?//", url.strip("'\""))] == []
    assert re.findall(r"https?://", html) == []
    script = re.search(r'<script src="([^"]+)"', html).group(1)
    assert finders.find(script.removeprefix(settings.STATIC_URL))


def test_the_python_verification_in_the_guide_accepts_our_signatures():
    # docs/webhooks.md verifies with the official Standard Webhooks library: it must accept what we send.
    secret = signing.secret_generate()
    body = json.dumps({"id": "evt", "type": "webhook.test"}).encode()
    headers = signing.headers([secret], message_id="0193a4f5-0000-7000-8000-00000000e001",
                              timestamp=int(time.time()), body=body)

    payload = Webhook(secret).verify(body, headers)

    assert payload == {"id": "evt", "type": "webhook.test"}


@pytest.mark.django_db
def test_the_guide_and_the_schema_name_every_field_of_the_balance(api, schema):
    """Issue 37, item 19: `/balance` was documented without `held`."""
    answer = api.get("/balance").json()
    guide = re.search(r"`GET /balance` answers `\{(.*?)\}`", (DOCS / "README.md").read_text())

    assert guide, "docs/README.md no longer says what GET /balance answers"
    assert re.findall(r'"(\w+)"', re.sub(r':\s*"[^"]*"', "", guide.group(1))) == list(answer)  # names, not values
    assert list(schema["components"]["schemas"]["Balance"]["properties"]) == list(answer)
    balance = schema["paths"]["/balance"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert balance == {"$ref": "#/components/schemas/Balance"}


@pytest.mark.django_db
def test_the_card_token_examples_have_the_shape_of_a_real_token(api, schema):
    """Issue 37, item 19: the examples showed `ctok_…`, a token the API never gives (its tokens are `card_…`)."""
    paid = api.post("/payin", {
        "paymentMethod": "CREDIT_CARD", "amount": 1000, "referenceId": "token-shape", "payerIp": "203.0.113.9",
        "isPhysicalProduct": False, "customer": {"name": "Ana Souza", "document": "52998224725",
                                                 "email": "ana@example.com"},
        "items": [{"title": "Caneca", "quantity": 1, "unitPrice": 1000}],
        "card": {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12",
                 "expirationYear": "2099", "cvv": "123"}}, format="json").json()
    examples = [schema["components"]["schemas"]["CardData"]["properties"]["token"]["example"]]
    content = schema["paths"]["/payin"]["post"]["requestBody"]["content"]["application/json"]
    examples += [example["value"]["card"]["token"] for example in content["examples"].values()
                 if "token" in example["value"].get("card", {})]

    def shape(token: str) -> str:  # the prefix kept, each letter or digit after it an x
        prefix, _, rest = token.partition("_")
        return f"{prefix}_{re.sub(r'[A-Za-z0-9]', 'x', rest)}"

    assert len(examples) == 2
    assert [shape(example) for example in examples] == [shape(paid["card"]["token"])] * 2


def raised_detail_codes() -> set[str]:
    """The `details[].code` literals the API's own rules raise: `problem(message, "code")`, `...(code="code")` and
    `{"code": "code"}` in the source of the API's packages (not the dashboard's forms)."""
    codes = set()
    for package in API_PACKAGES:
        for path in (Path(settings.BASE_DIR) / package).rglob("*.py"):
            if {"migrations", "dashboard", "reference"} & set(path.parts):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call):
                    name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                    if name == "problem" and len(node.args) == 2 and isinstance(node.args[1], ast.Constant):
                        codes.add(node.args[1].value)
                    codes |= {kw.value.value for kw in node.keywords
                              if kw.arg == "code" and isinstance(kw.value, ast.Constant)}
                elif isinstance(node, ast.Dict):
                    codes |= {value.value for key, value in zip(node.keys, node.values, strict=True)
                              if isinstance(key, ast.Constant) and key.value == "code"
                              and isinstance(value, ast.Constant)}
    return codes


def test_the_guide_lists_every_detail_code_the_api_can_give_and_no_other():
    """Issue 37, item 19: `null_characters_not_allowed` (DRF's, from every text field) reached clients and was in no
    list. The codes the request fields can give (their classes and validators) and the codes the API's rules raise,
    but those with their own line in the top-level table, are exactly the documented `details[].code`s."""
    get_resolver().url_patterns
    documented = {code for codes in DETAIL_CODES for code in codes.split(" / ")}

    possible = (request_field_codes() | raised_detail_codes()) - (set(MEANINGS) - documented)

    assert sorted(possible - documented) == [], "add a meaning to DETAIL_CODES (payments/reference/errors.py)"
    assert sorted(documented - possible) == [], "a documented code that nothing gives any more"
    assert {"null_characters_not_allowed", "surrogate_characters_not_allowed", "not_a_list"} <= possible
