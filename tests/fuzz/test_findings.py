"""What the schema fuzzing (test_schemathesis.py) found in the code, each pinned by a plain test that runs anywhere:
values that reached PostgreSQL or datetime arithmetic unchecked and came back as 500s, and a DNS lookup without a
timeout. (Its findings in the schema are held by the fuzzing itself.)"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
import uuid

import pytest

from webhooks import ssrf

CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}


def _error(response, param: str | None, details: list[dict]) -> None:
    assert response.status_code == 400, response.content
    assert response.json() == {"error": {"type": "invalid_request_error", "code": "validation_error",
                                         "message": "The request has invalid fields", "param": param,
                                         "details": details, "requestId": response["X-Request-Id"]}}


def _pix_charge(**extra) -> dict:
    return {"paymentMethod": "PIX", "amount": 1_000, "referenceId": "order-1", "payerIp": "203.0.113.9",
            "isPhysicalProduct": False, "customer": CUSTOMER,
            "items": [{"title": "Caneca", "quantity": 1, "unitPrice": 1_000}], **extra}


@pytest.mark.django_db
def test_timestamps_whose_utc_time_is_outside_years_1_to_9999_select_the_rows_they_name(api):
    charge = api.post("/payin", _pix_charge(), format="json").json()

    latest = api.get("/payin", {"createdFrom": "9999-12-31T23:59:59-23:59"})  # 10000-01-01 in UTC
    earliest = api.get("/payin", {"createdTo": "0001-01-01T00:00:00+23:59"})  # year 0 in UTC
    everything = api.get("/payin", {"createdFrom": "0001-01-01T00:00:00+23:59", "createdTo": "9999-12-31t23:59:59z"})

    assert (latest.status_code, latest.json()["data"]) == (200, [])
    assert (earliest.status_code, earliest.json()["data"]) == (200, [])
    assert everything.status_code == 200
    assert [c["id"] for c in everything.json()["data"]] == [charge["id"]]
    assert api.get("/payout", {"createdFrom": "9999-12-31T23:59:59-23:59"}).json()["data"] == []


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/payin", "/payout", "/events"])
def test_a_cursor_whose_utc_time_is_outside_years_1_to_9999_is_refused(api, path):
    forged = json.dumps(["9999-12-31T23:59:59-23:59", str(uuid.uuid4())], separators=(",", ":")).encode()
    cursor = base64.urlsafe_b64encode(forged).decode().rstrip("=")

    response = api.get(path, {"cursor": cursor})

    _error(response, "cursor", [{"param": "cursor", "code": "invalid_cursor",
                                 "message": "The cursor is not one this API returned."}])


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/payin", "/payout"])
@pytest.mark.parametrize("reference_id", ["order\x001", "", "x" * 65, "order 1"])
def test_a_reference_id_filter_no_object_can_have_is_refused(api, path, reference_id):
    response = api.get(path, {"referenceId": reference_id})

    _error(response, "referenceId", [{
        "param": "referenceId", "code": "invalid_reference_id",
        "message": "referenceId must be 1 to 64 characters of letters, digits, '.', '_', ':' and '-'."}])


@pytest.mark.django_db
@pytest.mark.parametrize("object_id", ["x\x00", "", "not-a-uuid"])
def test_an_object_id_filter_that_is_not_a_uuid_is_refused(api, object_id):
    response = api.get("/events", {"objectId": object_id})

    _error(response, "objectId", [{"param": "objectId", "code": "invalid_object_id",
                                   "message": "objectId must be a UUID."}])


@pytest.mark.django_db
def test_an_object_id_filter_matches_the_uuid_in_any_case(api):
    charge = api.post("/payin", _pix_charge(), format="json").json()

    response = api.get("/events", {"objectId": charge["id"].upper()})

    assert response.status_code == 200
    assert [e["type"] for e in response.json()["data"]] == ["payin.created"]


@pytest.mark.django_db
@pytest.mark.parametrize("metadata", [{"order\x00": "1"}, {"order": "1\x00"}, {"order": "\ud800"}])
def test_metadata_with_a_character_postgresql_cannot_store_is_refused(api, metadata):
    body = json.dumps(_pix_charge(metadata=metadata))  # ASCII: a lone surrogate travels as \ud800

    response = api.post("/payin", body, content_type="application/json")

    _error(response, "metadata", [{"param": "metadata", "code": "invalid_metadata",
                                   "message": "Keys and values must not contain NUL or surrogate characters."}])


def test_a_dns_lookup_that_gets_no_answer_is_given_up_and_the_url_accepted(monkeypatch):
    # A resolver that lost the answer: glibc waits its `timeout` (5 s) per attempt, the request thread with it.
    released = threading.Event()
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: released.wait(30) and [])
    monkeypatch.setattr(ssrf, "DNS_TIMEOUT_SECONDS", 0.2)
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            ssrf.resolve("hooks.example.com", 443)
        accepted = ssrf.webhook_url_validate("https://hooks.example.com/pagamentos")
        elapsed = time.monotonic() - started
    finally:
        released.set()

    assert accepted == "https://hooks.example.com/pagamentos"  # "does not resolve now" (SPEC §6.4)
    assert elapsed < 1.5
