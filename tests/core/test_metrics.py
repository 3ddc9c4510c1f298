"""GET /metrics: the bearer token, the request counters per route name, the cost of counting, the multiprocess
directory's cleaning."""

from __future__ import annotations

import os

import pytest

from core import metrics
from tests.metrics_helpers import TOKEN, scrape, value


@pytest.fixture
def token(settings):
    settings.METRICS_TOKEN = TOKEN


def test_metrics_do_not_exist_without_a_token(client, settings):
    settings.METRICS_TOKEN = ""

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer ")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("authorization", [None, f"Basic {TOKEN}", "Bearer wrong", f"Bearer {TOKEN}x", "Bearer"])
def test_metrics_refuse_a_missing_or_wrong_token(client, token, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}

    response = client.get("/metrics", **headers)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert response.json() == {"error": {
        "type": "authentication_error", "code": "authentication_required",
        "message": "Send Authorization: Bearer <METRICS_TOKEN>", "param": None, "details": [],
        "requestId": response["X-Request-Id"],
    }}
    assert TOKEN.encode() not in response.content


def test_the_token_is_compared_in_constant_time(client, token, monkeypatch):
    compared = []
    real = metrics.hmac.compare_digest
    monkeypatch.setattr(metrics.hmac, "compare_digest", lambda a, b: compared.append((a, b)) or real(a, b))

    client.get("/metrics", HTTP_AUTHORIZATION="Bearer guess")

    assert compared == [(b"guess", TOKEN.encode())]


@pytest.mark.django_db
def test_requests_are_counted_and_timed_by_route_name_not_path(client, token):
    before = scrape(client)

    for _ in range(3):
        client.get("/ping")
    client.get("/payin/not-a-real-id")  # a route with an id in its path: counted under its name

    after = scrape(client)
    assert value(after, "pagamentos_http_requests_total", route="ping", method="GET", status="200") - value(
        before, "pagamentos_http_requests_total", route="ping", method="GET", status="200") == 3
    assert value(after, "pagamentos_http_requests_total", route="payin", method="GET", status="401") - value(
        before, "pagamentos_http_requests_total", route="payin", method="GET", status="401") == 1
    assert value(after, "pagamentos_http_request_duration_seconds_count", route="ping", method="GET") - value(
        before, "pagamentos_http_request_duration_seconds_count", route="ping", method="GET") == 3
    assert not any("not-a-real-id" in str(labels) for _, labels in after)


def test_the_multiprocess_directory_keeps_only_live_processes_files(tmp_path):
    live = tmp_path / f"counter_{os.getpid()}.db"
    dead = tmp_path / "counter_999999999.db"
    other = tmp_path / "histogram_999999998.db"
    for file in (live, dead, other):
        file.write_bytes(b"")

    removed = metrics.metrics_dir_clean(str(tmp_path / "."))

    assert removed == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]


def test_the_multiprocess_directory_is_created(tmp_path):
    assert metrics.metrics_dir_clean(str(tmp_path / "metrics")) == 0
    assert (tmp_path / "metrics").is_dir()
