"""Every error, from our code, DRF or Django itself, has the SPEC's body and JSON content type."""

import json

import pytest


def error(status_type: str, code: str, message: str, request_id: str, *, param=None, details=None) -> dict:
    return {"error": {"type": status_type, "code": code, "message": message, "param": param,
                      "details": details or [], "requestId": request_id}}


@pytest.fixture(autouse=True)
def test_urls(settings):
    settings.ROOT_URLCONF = "tests.core.urls"


def test_unknown_path_is_json_404(client):
    response = client.get("/v1/nothing-here", HTTP_X_REQUEST_ID="req-404")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == error("not_found", "not_found", "Not found", "req-404")
    assert response["X-Request-Id"] == "req-404"
    assert response["Api-Version"] == "2026-11-20"


def test_unknown_path_is_json_404_with_debug_on(client, settings):
    settings.DEBUG = True

    response = client.get("/nothing-here", HTTP_X_REQUEST_ID="req-404d")

    assert response.status_code == 404
    assert response.json() == error("not_found", "not_found", "Not found", "req-404d")


@pytest.mark.django_db
def test_wrong_method_is_json_405_with_allow(api):
    response = api.delete("/account", HTTP_X_REQUEST_ID="req-405")

    assert response.status_code == 405
    assert response.json() == error("invalid_request_error", "method_not_allowed", "Method not allowed", "req-405")
    assert response["Allow"] == "GET, HEAD, OPTIONS"


@pytest.mark.django_db
def test_malformed_json_is_400(api):
    response = api.post("/_test/orders", data='{"amount": 100,', content_type="application/json",
                        HTTP_X_REQUEST_ID="req-mj")

    assert response.status_code == 400
    assert response.json() == error("invalid_request_error", "malformed_json", "The request body is not valid JSON",
                                    "req-mj")


@pytest.mark.django_db
def test_nan_is_malformed_json(api):
    response = api.post("/_test/orders", data='{"amount": NaN}', content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


@pytest.mark.django_db
def test_body_over_64_kib_is_413(api):
    body = json.dumps({"note": "x" * (64 * 1024)})

    response = api.post("/_test/orders", data=body, content_type="application/json", HTTP_X_REQUEST_ID="req-413")

    assert response.status_code == 413
    assert response.json() == error("invalid_request_error", "payload_too_large",
                                    "Request bodies are limited to 64 KiB", "req-413")


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_non_json_body_is_415(api, content_type):
    response = api.post("/_test/orders", data="amount=100", content_type=content_type, HTTP_X_REQUEST_ID="req-415")

    assert response.status_code == 415
    assert response.json() == error("invalid_request_error", "unsupported_media_type",
                                    "Send the body as Content-Type: application/json", "req-415")


@pytest.mark.django_db
def test_json_with_charset_is_accepted(api):
    body = {"amount": 100, "isPhysicalProduct": False, "customer": {"name": "Ana"}, "items": []}

    response = api.post("/_test/orders", data=json.dumps(body), content_type="application/json; charset=utf-8")

    assert response.status_code == 201


@pytest.mark.django_db
def test_crash_in_api_view_is_500_without_internals(api, caplog):
    response = api.get("/_test/crash", HTTP_X_REQUEST_ID="req-500")

    assert response.status_code == 500
    assert response.json() == error("api_error", "internal_error",
                                    "Something went wrong on our side; it has been logged", "req-500")
    assert "internals" not in response.content.decode()
    assert any(r.getMessage() == "api.unhandled_exception" for r in caplog.records)


def test_crash_outside_drf_is_json_500(settings):
    from django.test import Client

    client = Client(raise_request_exception=False)

    response = client.get("/_test/plain-crash", HTTP_X_REQUEST_ID="req-500p")

    assert response.status_code == 500
    assert response.json() == error("api_error", "internal_error",
                                    "Something went wrong on our side; it has been logged", "req-500p")


def test_dashboard_errors_stay_html(client):
    response = client.get("/dashboard/no-such-page/")

    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


def test_invalid_request_id_is_replaced(client):
    response = client.get("/health", HTTP_X_REQUEST_ID="has spaces and/slash")

    assert response["X-Request-Id"] != "has spaces and/slash"
    assert len(response["X-Request-Id"]) == 32


def test_request_id_longer_than_64_is_replaced(client):
    response = client.get("/nothing", HTTP_X_REQUEST_ID="a" * 65)

    assert response["X-Request-Id"] != "a" * 65
    assert response.json()["error"]["requestId"] == response["X-Request-Id"]
