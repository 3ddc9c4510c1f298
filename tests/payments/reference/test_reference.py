"""The API reference (issue 16): every property, parameter and operation of /openapi.json documented, the examples
true to the rules they illustrate, the error codes and the guide held to the code, and /docs served offline."""

from __future__ import annotations

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

from payments.models import PixKeyType
from payments.reference.errors import MEANINGS, error_catalog, errors_markdown
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

    assert errors_markdown() in guide, (
        "docs/errors.md drifted from the code: paste the output of "
        "`python -c 'import django; django.setup(); from django.urls import get_resolver; get_resolver().url_patterns; "
        "from payments.reference.errors import errors_markdown; print(errors_markdown())'` (DJANGO_SETTINGS_MODULE="
        "config.settings) between its markers")


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
