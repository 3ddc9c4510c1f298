"""A body that nests too deep is a clean 400 malformed_json on every endpoint, never a RecursionError's 500."""

import logging
import uuid

import pytest

from core.parsers import MAX_DEPTH, too_deep

DEEP_BODIES = {
    "arrays": "[" * 1000 + "]" * 1000,  # 2 KB
    "objects": '{"a":' * 1000 + "1" + "}" * 1000,
    "unclosed": "[" * 5000,
    "in a field": '{"amount": 100, "metadata": ' + "[" * 1000 + "]" * 1000 + "}",
}
# A fixed id: pytest-xdist needs every worker to collect the same test ids.
ENDPOINTS = ["/payin", "/payout", "/payin/00000000-0000-4000-8000-000000000001/refunds"]


def error(message: str, request_id: str) -> dict:
    return {"error": {"type": "invalid_request_error", "code": "malformed_json", "message": message, "param": None,
                      "details": [], "requestId": request_id}}


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("body", DEEP_BODIES.values(), ids=DEEP_BODIES.keys())
@pytest.mark.parametrize("idempotency_key", [None, "deep-1"], ids=["plain", "idempotent"])
def test_deep_nesting_is_malformed_json(api, caplog, path, body, idempotency_key):
    headers = {"HTTP_IDEMPOTENCY_KEY": idempotency_key} if idempotency_key else {}

    with caplog.at_level(logging.INFO):
        response = api.post(path, data=body, content_type="application/json", HTTP_X_REQUEST_ID="req-deep", **headers)

    assert (response.status_code, response.json()) == (
        400, error("The request body nests deeper than 32 levels", "req-deep"))
    assert [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_nesting_up_to_the_limit_is_parsed(api):
    """At the limit the body reaches the validation, which names the field."""
    metadata = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)

    response = api.post(f"/payin/{uuid.uuid4()}/refunds", data='{"amount": ' + metadata + "}",
                        content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"]["details"] == [
        {"param": "amount", "code": "invalid", "message": "Must be a JSON integer."}]


@pytest.mark.parametrize(("raw", "deep"), [
    (b"[" * 32 + b"]" * 32, False),
    (b"[" * 33 + b"]" * 33, True),
    (b"[]" * 1000, False),  # many brackets, shallow
    (b'{"a": "' + b"[" * 1000 + b'"}', False),  # brackets inside a string do not nest
    (b'{"a": "\\"' + b"[" * 1000 + b'"}', False),  # nor after an escaped quote
    (b'{"a": ' + b"{" * 40, True),
])
def test_too_deep(raw, deep):
    assert too_deep(raw) is deep
