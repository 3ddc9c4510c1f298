"""The drf-spectacular postprocessing hook that completes the generated schema into the API reference (named in
settings.SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]). It only fills in what is missing: a field's help_text, a
view's description and an example the code gives are kept."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings

from core.dates import sao_paulo_today
from payments.reference import glossary
from payments.reference.errors import errors_markdown
from payments.reference.operations import OPERATIONS

INTRO = """Pix, card and boleto pay-in, Pix payouts, balances and signed webhooks for Brazilian merchants.

The guide (quick start, authentication, idempotency, webhooks, the sandbox, going live, errors, changelog) is in the
repository's `docs/` folder. Every response carries `Api-Version: {version}` and `X-Request-Id`. Money is integer
cents (BRL); timestamps are ISO 8601 in UTC with milliseconds; unknown fields are refused.

## Authentication

Send the key pair as HTTP Basic (public key as user, secret as password) or as the headers `x-api-key` and
`x-api-secret`. `pk_test_`/`sk_test_` keys work in the sandbox from sign-up on; `pk_live_`/`sk_live_` keys once the
account's KYC is approved.

## Errors

Every error has one shape: `{{"error": {{"type", "code", "message", "param", "details", "requestId"}}}}`. Branch on
`code`; `message` is for humans.

"""

# Examples that a schema implies, by format: used where the glossary has none (or one outside an enum).
_FORMAT_EXAMPLES = {"date-time": glossary.TIMESTAMP, "uuid": glossary.PAYIN_ID,
                    "uri": "https://pay.example.com/pay/6Zb3kQm9T0aX", "email": "ana@example.com",
                    "ipv4": "203.0.113.9"}


def reference_postprocess(result: dict, generator: Any, request: Any, public: bool, **kwargs: Any) -> dict:
    schemas = result.get("components", {}).get("schemas", {})
    for component_name, component in schemas.items():
        for name, prop in component.get("properties", {}).items():
            _document_property(component_name, name, prop, schemas)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            _document_operation(operation)
    result["info"]["description"] = INTRO.format(version=settings.API_VERSION) + errors_markdown()
    return result


def resolve(schema: dict, schemas: dict) -> dict:
    """The schema a property refers to: through `$ref` and a single `allOf`."""
    while True:
        if "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
        elif len(schema.get("allOf", [])) == 1:
            schema = schema["allOf"][0]
        else:
            return schema


def is_object(schema: dict, schemas: dict) -> bool:
    """Whether a property holds objects of a documented shape (its own properties say the rest), or a list of them."""
    target = resolve(schema, schemas)
    if target.get("type") == "array":
        target = resolve(target.get("items", {}), schemas)
    return "properties" in target or any(is_object(variant, schemas) for variant in target.get("oneOf", []))


def _document_property(component: str, name: str, prop: dict, schemas: dict) -> None:
    doc = glossary.property_doc(component, name)
    if "description" not in prop and doc is not None:
        prop["description"] = doc[0]
    if "example" in prop or is_object(prop, schemas):
        return
    example = _example(doc[1] if doc else None, resolve(prop, schemas), nullable=prop.get("nullable", False))
    if example is not None or prop.get("nullable"):
        prop["example"] = example


def _example(candidate: Any, schema: dict, *, nullable: bool) -> Any:
    enum = schema.get("enum")
    if enum:
        return candidate if candidate in enum else enum[0]
    if candidate is not None or nullable:
        return candidate
    if schema.get("format") == "date":  # a due date must be from today on: the example is always a valid one
        return (sao_paulo_today() + timedelta(days=3)).isoformat()
    if schema.get("format") in _FORMAT_EXAMPLES:
        return _FORMAT_EXAMPLES[schema["format"]]
    if schema.get("type") == "integer":
        return schema.get("minimum", 1)
    if schema.get("type") == "boolean":
        return False
    return None


def _document_operation(operation: dict) -> None:
    description, examples = OPERATIONS.get(operation.get("operationId"), ("", None))
    if description and not operation.get("description"):
        operation["description"] = description
    for parameter in operation.get("parameters", []):
        if "description" not in parameter and parameter["name"] in glossary.PARAMETERS:
            parameter["description"] = glossary.PARAMETERS[parameter["name"]]
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is not None and examples and "examples" not in content:
        content["examples"] = examples
