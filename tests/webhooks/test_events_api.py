"""Events: the transactional outbox (event_record), where deliveries go, GET /events and GET /events/{id}, retention.

No test here sends anything: `webhooks.services._enqueue` is replaced by a recorder in every test, so deliveries stay
rows in the database and what would have been sent to the broker is a list the test can read.
"""

from __future__ import annotations

import base64
import json
import math
import re
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.db import transaction
from django.utils import timezone

from tests.factories import ApiKeyFactory, MerchantFactory
from webhooks import services
from webhooks.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint
from webhooks.services import event_record, events_purge

ISO_MS_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
ORDER_URL = "https://shop.example.com/hooks/order-1"


# --- Helpers ---------------------------------------------------------------------------------------------------------
def iso(value: datetime) -> str:
    """The SPEC's timestamp (UTC, milliseconds, Z), written independently of the code under test."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def charge(*, status: str = "PAID", object_id: str | None = None, **fields) -> dict:
    """A pay-in as its GET endpoint would return it: the event stores whatever object the caller hands over."""
    return {"id": object_id or str(uuid.uuid4()), "object": "payin", "status": status, "amount": 10_000,
            "currency": "BRL", "paymentMethod": "PIX", "referenceId": "order-1", **fields}


def record(merchant, *, livemode: bool = False, type: str = "payin.paid", obj: dict | None = None,
           previous_status: str | None = "PENDING", webhook_url: str | None = None) -> Event:
    """Record an event the way a status change does: inside the change's transaction."""
    with transaction.atomic():
        return event_record(merchant=merchant, livemode=livemode, type=type, obj=obj or charge(),
                            previous_status=previous_status, webhook_url=webhook_url)


def envelope(event: Event, obj: dict, previous_status: str | None) -> dict:
    """The envelope the SPEC (§6.1) requires for this event row, built from the row's own columns."""
    return {"id": str(event.id), "type": event.type, "createdAt": iso(event.created_at), "livemode": event.livemode,
            "apiVersion": "2026-11-20", "data": {"object": obj, "previousStatus": previous_status}}


def endpoint(merchant, *, url: str, livemode: bool = False, event_types: list[str] | None = None,
             enabled: bool = True) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(merchant=merchant, livemode=livemode, url=url,
                                          event_types=event_types or [], enabled=enabled)


def error_body(response, *, type: str, code: str, message: str, param: str | None = None,
               details: list | None = None) -> dict:
    """The whole SPEC §1.1 error body; its requestId must be the response's own X-Request-Id."""
    return {"error": {"type": type, "code": code, "message": message, "param": param, "details": details or [],
                      "requestId": response["X-Request-Id"]}}


def targets(event: Event) -> set[tuple[str, uuid.UUID | None]]:
    return set(Delivery.objects.filter(event=event).values_list("url", "endpoint_id"))


# --- Fixtures --------------------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def enqueued(monkeypatch) -> list[list[str]]:
    """What would have been sent to the broker: one list of delivery ids per after-commit enqueue."""
    calls: list[list[str]] = []
    monkeypatch.setattr(services, "_enqueue", lambda delivery_ids: calls.append(list(delivery_ids)))
    return calls


@pytest.fixture
def clock(monkeypatch) -> SimpleNamespace:
    """The services' clock, set by the test, so events get known, distinct (or deliberately equal) timestamps. The
    microseconds are not a whole millisecond, so createdAt must cut them to milliseconds."""
    now = SimpleNamespace(now=timezone.now().replace(microsecond=123_456) - timedelta(hours=1))
    monkeypatch.setattr(services, "timezone", SimpleNamespace(now=lambda: now.now))
    return now


@pytest.fixture
def other_merchant(db):
    return MerchantFactory()


@pytest.fixture
def live_api(api_client_for, merchant):
    return api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))


def events_page(api, **params) -> dict:
    response = api.get("/events", params)
    assert response.status_code == 200, response.content
    return response.json()


# --- The outbox ------------------------------------------------------------------------------------------------------
def test_an_event_recorded_in_a_transaction_that_rolls_back_leaves_nothing(
        merchant, enqueued, django_capture_on_commit_callbacks):
    endpoint(merchant, url="https://hooks.example.com/all")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(RuntimeError, match="the status change failed"):
            with transaction.atomic():
                event_record(merchant=merchant, livemode=False, type="payin.paid", obj=charge(),
                             previous_status="PENDING", webhook_url=ORDER_URL)
                raise RuntimeError("the status change failed")

    assert Event.objects.count() == 0
    assert Delivery.objects.count() == 0
    assert callbacks == []
    assert enqueued == []


@pytest.mark.parametrize(("type", "previous_status"), [("payin.paid", "PENDING"), ("payin.created", None)])
def test_a_committed_event_is_stored_as_the_exact_envelope(merchant, clock, type, previous_status):
    obj = charge(status="PAID" if previous_status else "PENDING")

    event = record(merchant, type=type, obj=obj, previous_status=previous_status)

    stored = Event.objects.get()
    assert stored.pk == event.pk
    assert (stored.merchant_id, stored.livemode, stored.type, stored.object_id) == (merchant.pk, False, type, obj["id"])
    assert stored.created_at == clock.now
    assert stored.payload == {
        "id": str(event.id), "type": type, "createdAt": iso(clock.now), "livemode": False,
        "apiVersion": "2026-11-20", "data": {"object": obj, "previousStatus": previous_status},
    }
    assert ISO_MS_Z.fullmatch(stored.payload["createdAt"])
    assert stored.payload["createdAt"].endswith(".123Z")
    assert uuid.UUID(stored.payload["id"]).version == 7


def test_a_live_event_says_livemode_true(merchant):
    event = record(merchant, livemode=True)

    assert Event.objects.get(pk=event.pk).payload["livemode"] is True
    assert Event.objects.get(pk=event.pk).livemode is True


def test_deliveries_go_to_the_object_url_and_to_every_enabled_endpoint_of_the_mode_that_wants_the_type(
        merchant, other_merchant):
    every_type = endpoint(merchant, url="https://hooks.example.com/all")
    paid_among_others = endpoint(merchant, url="https://hooks.example.com/paid",
                                 event_types=["payin.paid", "payout.completed"])
    endpoint(merchant, url="https://hooks.example.com/payouts", event_types=["payout.completed"])
    endpoint(merchant, url="https://hooks.example.com/disabled", enabled=False)
    endpoint(merchant, url="https://hooks.example.com/disabled-paid", event_types=["payin.paid"], enabled=False)
    endpoint(merchant, url="https://hooks.example.com/live", livemode=True)
    endpoint(other_merchant, url="https://hooks.example.com/other-merchant")

    event = record(merchant, type="payin.paid", webhook_url=ORDER_URL)

    assert targets(event) == {
        (ORDER_URL, None),
        ("https://hooks.example.com/all", every_type.pk),
        ("https://hooks.example.com/paid", paid_among_others.pk),
    }
    assert set(Delivery.objects.values_list("merchant_id", "livemode", "status", "attempts", "failures",
                                            "next_attempt_at", "locked_until")) == {
        (merchant.pk, False, "PENDING", 0, 0, event.created_at, None)}


def test_live_events_go_only_to_live_endpoints(merchant):
    endpoint(merchant, url="https://hooks.example.com/test")
    live = endpoint(merchant, url="https://hooks.example.com/live", livemode=True)

    event = record(merchant, livemode=True)

    assert targets(event) == {("https://hooks.example.com/live", live.pk)}
    assert Delivery.objects.get().livemode is True


def test_an_endpoint_with_the_objects_own_webhook_url_gets_one_delivery(merchant):
    endpoint(merchant, url=ORDER_URL)
    endpoint(merchant, url=ORDER_URL, event_types=["payin.paid"])

    event = record(merchant, webhook_url=ORDER_URL)

    assert Delivery.objects.filter(event=event).count() == 1
    assert Delivery.objects.get(event=event).url == ORDER_URL


def test_two_endpoints_with_the_same_url_get_one_delivery(merchant):
    first = endpoint(merchant, url="https://hooks.example.com/same")
    second = endpoint(merchant, url="https://hooks.example.com/same", event_types=["payin.paid"])

    event = record(merchant)

    assert Delivery.objects.filter(event=event).count() == 1
    assert Delivery.objects.get(event=event).endpoint_id in (first.pk, second.pk)


def test_an_event_with_nowhere_to_go_has_no_delivery_and_enqueues_nothing(
        merchant, enqueued, django_capture_on_commit_callbacks):
    endpoint(merchant, url="https://hooks.example.com/payouts", event_types=["payout.completed"])

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        event = record(merchant, type="payin.paid")

    assert Event.objects.filter(pk=event.pk).exists()
    assert Delivery.objects.count() == 0
    assert callbacks == []
    assert enqueued == []


def test_deliveries_are_enqueued_only_after_the_commit(merchant, enqueued, django_capture_on_commit_callbacks):
    endpoint(merchant, url="https://hooks.example.com/all")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with transaction.atomic():
            event = event_record(merchant=merchant, livemode=False, type="payin.paid", obj=charge(),
                                 previous_status="PENDING", webhook_url=ORDER_URL)
            enqueued_inside_the_transaction = list(enqueued)
        enqueued_before_the_commit = list(enqueued)

    assert enqueued_inside_the_transaction == []
    assert enqueued_before_the_commit == []
    assert len(callbacks) == 1
    assert len(enqueued) == 1
    assert sorted(enqueued[0]) == sorted(str(pk) for pk in Delivery.objects.filter(event=event).values_list(
        "pk", flat=True))
    assert len(enqueued[0]) == 2


@pytest.mark.django_db(transaction=True)
def test_deliveries_are_enqueued_when_a_real_transaction_commits(merchant, enqueued):
    endpoint(merchant, url="https://hooks.example.com/all")

    with transaction.atomic():
        event = event_record(merchant=merchant, livemode=False, type="payin.paid", obj=charge(),
                             previous_status="PENDING")
        enqueued_before_the_commit = list(enqueued)

    assert enqueued_before_the_commit == []
    assert enqueued == [[str(Delivery.objects.get(event=event).pk)]]


@pytest.mark.django_db(transaction=True)
def test_a_real_rollback_enqueues_nothing_and_leaves_no_rows(merchant, enqueued):
    endpoint(merchant, url="https://hooks.example.com/all")

    with pytest.raises(RuntimeError):
        with transaction.atomic():
            event_record(merchant=merchant, livemode=False, type="payin.paid", obj=charge(),
                         previous_status="PENDING", webhook_url=ORDER_URL)
            raise RuntimeError("the status change failed")

    assert enqueued == []
    assert Event.objects.count() == 0
    assert Delivery.objects.count() == 0


# --- GET /events -----------------------------------------------------------------------------------------------------
def test_events_are_listed_newest_first_as_their_envelopes(api, merchant, clock):
    objects = [charge(status="PENDING"), charge(status="PAID"), charge(status="EXPIRED")]
    recorded = []
    for obj, (type, previous) in zip(objects, [("payin.created", None), ("payin.paid", "PENDING"),
                                               ("payin.expired", "PENDING")], strict=True):
        recorded.append((record(merchant, type=type, obj=obj, previous_status=previous), obj, previous))
        clock.now += timedelta(seconds=1)
    oldest, middle, newest = (envelope(Event.objects.get(pk=e.pk), o, p) for e, o, p in recorded)

    first = api.get("/events", {"limit": "2"})
    second = api.get("/events", {"limit": "2", "cursor": first.json()["nextCursor"]})
    everything = api.get("/events")

    assert first.status_code == 200
    assert first["Content-Type"] == "application/json"
    assert first.json() == {"data": [newest, middle], "hasMore": True, "nextCursor": first.json()["nextCursor"]}
    assert isinstance(first.json()["nextCursor"], str) and first.json()["nextCursor"]
    assert second.status_code == 200
    assert second.json() == {"data": [oldest], "hasMore": False, "nextCursor": None}
    assert everything.json() == {"data": [newest, middle, oldest], "hasMore": False, "nextCursor": None}


def test_an_empty_list(api):
    response = api.get("/events")

    assert response.status_code == 200
    assert response.json() == {"data": [], "hasMore": False, "nextCursor": None}


def test_default_page_is_20_events(api, merchant):
    for _ in range(21):
        record(merchant)

    body = events_page(api)

    assert len(body["data"]) == 20
    assert body["hasMore"] is True


@pytest.mark.parametrize("limit", [1, 4, 7, 24, 25, 100])
def test_walking_the_pages_visits_every_event_once_with_no_gap(api, merchant, clock, limit):
    recorded = []
    for i in range(25):
        # Three events per timestamp: the id breaks the tie, and the walk must neither skip nor repeat them.
        if i % 3 == 0:
            clock.now += timedelta(milliseconds=1)
        recorded.append(record(merchant, obj=charge(reference=f"order-{i}")))
    expected = [str(e.pk) for e in sorted(recorded, key=lambda e: (e.created_at, e.pk), reverse=True)]

    seen, pages, cursor = [], 0, None
    while True:
        body = events_page(api, limit=str(limit), **({"cursor": cursor} if cursor else {}))
        pages += 1
        seen.extend(item["id"] for item in body["data"])
        if not body["hasMore"]:
            assert body["nextCursor"] is None
            break
        cursor = body["nextCursor"]

    assert seen == expected
    assert len(set(seen)) == 25
    assert pages == math.ceil(25 / limit)


def test_filter_by_type(api, merchant, clock):
    paid = []
    for type in ["payin.created", "payin.paid", "payout.created", "payin.paid"]:
        event = record(merchant, type=type)
        clock.now += timedelta(seconds=1)
        if type == "payin.paid":
            paid.append(Event.objects.get(pk=event.pk))

    body = events_page(api, type="payin.paid")

    assert body == {"data": [paid[1].payload, paid[0].payload], "hasMore": False, "nextCursor": None}
    assert [item["type"] for item in body["data"]] == ["payin.paid", "payin.paid"]


def test_filter_by_object_id(api, merchant, clock):
    mine = charge(status="PENDING")
    record(merchant, type="payin.created", obj=mine, previous_status=None)
    clock.now += timedelta(seconds=1)
    record(merchant, type="payin.created", obj=charge(status="PENDING"), previous_status=None)
    clock.now += timedelta(seconds=1)
    paid = {**mine, "status": "PAID"}
    record(merchant, type="payin.paid", obj=paid, previous_status="PENDING")
    created, _, paid_event = Event.objects.order_by("created_at")

    by_object = events_page(api, objectId=mine["id"])
    by_object_and_type = events_page(api, objectId=mine["id"], type="payin.paid")
    by_unknown_object = events_page(api, objectId=str(uuid.uuid4()))

    assert by_object == {"data": [envelope(paid_event, paid, "PENDING"), envelope(created, mine, None)],
                         "hasMore": False, "nextCursor": None}
    assert by_object_and_type == {"data": [envelope(paid_event, paid, "PENDING")], "hasMore": False,
                                  "nextCursor": None}
    assert by_unknown_object == {"data": [], "hasMore": False, "nextCursor": None}


def test_an_unknown_type_is_a_validation_error(api, merchant):
    record(merchant)

    response = api.get("/events", {"type": "payin.payed"})

    assert response.status_code == 400
    assert response.json() == error_body(
        response, type="invalid_request_error", code="validation_error", message="The request has invalid fields",
        param="type",
        details=[{"param": "type", "code": "invalid_choice", "message": "Unknown event type 'payin.payed'."}])


def test_unknown_query_parameters_are_refused_by_name(api, merchant):
    record(merchant)

    response = api.get("/events", {"typ": "payin.paid", "status": "PAID"})

    assert response.status_code == 400
    assert response.json() == error_body(
        response, type="invalid_request_error", code="unknown_field", message="The request has unknown fields",
        details=[{"param": "status", "code": "unknown_field", "message": "Unknown query parameter 'status'."},
                 {"param": "typ", "code": "unknown_field", "message": "Unknown query parameter 'typ'."}])


def test_one_unknown_query_parameter_is_named_in_param_as_an_unknown_body_field_is(api, merchant):
    record(merchant)

    response = api.get("/events", {"object_id": "x"})

    assert response.status_code == 400
    assert response.json() == error_body(
        response, type="invalid_request_error", code="unknown_field", message="The request has unknown fields",
        param="object_id",
        details=[{"param": "object_id", "code": "unknown_field", "message": "Unknown query parameter 'object_id'."}])


@pytest.mark.parametrize("limit", ["0", "101", "abc", "-1", "", "2.5"])
def test_a_limit_outside_1_to_100_is_refused(api, merchant, limit):
    record(merchant)

    response = api.get("/events", {"limit": limit})

    assert response.status_code == 400
    assert response.json() == error_body(
        response, type="invalid_request_error", code="validation_error", message="The request has invalid fields",
        param="limit", details=[{"param": "limit", "code": "invalid_limit",
                                 "message": "limit must be an integer from 1 to 100."}])


@pytest.mark.parametrize("cursor", ["not-a-cursor", "e30", "W10"])
def test_an_unreadable_cursor_is_refused(api, merchant, cursor):
    record(merchant)

    response = api.get("/events", {"cursor": cursor})

    assert response.status_code == 400
    assert response.json() == error_body(
        response, type="invalid_request_error", code="validation_error", message="The request has invalid fields",
        param="cursor", details=[{"param": "cursor", "code": "invalid_cursor",
                                  "message": "The cursor is not one this API returned."}])


def cursor_of(value) -> str:
    """A cursor written by hand in the API's own encoding (url-safe base64 of JSON, no padding)."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize("value", [
    ["2026-11-20T12:00:00+00:00", "not-a-uuid"],
    ["2026-11-20T12:00:00+00:00", None],
    ["2026-11-20T12:00:00+00:00", 7],
    ["yesterday", "0190a0b0-0000-7000-8000-000000000000"],
])
def test_a_forged_cursor_is_refused_not_a_server_error(api, merchant, value):
    record(merchant)

    response = api.get("/events", {"cursor": cursor_of(value)})

    assert response.status_code == 400
    assert response.json() == error_body(
        response, type="invalid_request_error", code="validation_error", message="The request has invalid fields",
        param="cursor", details=[{"param": "cursor", "code": "invalid_cursor",
                                  "message": "The cursor is not one this API returned."}])


def test_the_list_shows_only_this_merchants_events_of_this_mode(api, live_api, merchant, other_merchant):
    mine_test = record(merchant)
    mine_live = record(merchant, livemode=True)
    record(other_merchant)
    record(other_merchant, livemode=True)

    test_page = events_page(api)
    live_page = events_page(live_api)

    assert test_page == {"data": [Event.objects.get(pk=mine_test.pk).payload], "hasMore": False, "nextCursor": None}
    assert live_page == {"data": [Event.objects.get(pk=mine_live.pk).payload], "hasMore": False, "nextCursor": None}


def test_one_event_by_id(api, merchant):
    obj = charge()
    event = record(merchant, obj=obj)

    response = api.get(f"/events/{event.pk}")

    assert response.status_code == 200
    assert response["Api-Version"] == "2026-11-20"
    assert response.json() == envelope(Event.objects.get(pk=event.pk), obj, "PENDING")


@pytest.mark.parametrize("whose", ["other merchant", "other mode", "nobody"])
def test_an_event_of_another_merchant_or_mode_is_not_found(api, merchant, other_merchant, whose):
    event_id = {
        "other merchant": lambda: record(other_merchant).pk,
        "other mode": lambda: record(merchant, livemode=True).pk,
        "nobody": uuid.uuid4,
    }[whose]()

    response = api.get(f"/events/{event_id}")

    assert response.status_code == 404
    assert response.json() == error_body(response, type="not_found", code="not_found", message="No such event")


@pytest.mark.parametrize("event_id", ["not-a-uuid", "123", "evt_0190"])
def test_an_id_that_is_not_a_uuid_is_not_found(api, merchant, event_id):
    record(merchant)

    response = api.get(f"/events/{event_id}")

    assert response.status_code == 404
    assert response.json() == error_body(response, type="not_found", code="not_found", message="No such event")


@pytest.mark.parametrize("path", ["/events", "/events/{id}"])
def test_events_need_an_api_key(client, merchant, path):
    event = record(merchant)

    response = client.get(path.format(id=event.pk))

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="api"'
    assert response.json() == error_body(
        response, type="authentication_error", code="authentication_required",
        message="Authentication required: send your API key pair with HTTP Basic or x-api-key and x-api-secret")


# --- Retention -------------------------------------------------------------------------------------------------------
def test_purge_deletes_events_older_than_30_days_with_their_deliveries_and_keeps_newer_ones(merchant):
    endpoint(merchant, url="https://hooks.example.com/all")
    old = record(merchant, webhook_url=ORDER_URL)
    recent = record(merchant, webhook_url=ORDER_URL)
    fresh = record(merchant, webhook_url=ORDER_URL)
    Event.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=30, minutes=1))
    Event.objects.filter(pk=recent.pk).update(created_at=timezone.now() - timedelta(days=29, hours=23))
    old_delivery = Delivery.objects.filter(event=old).first()
    DeliveryAttempt.objects.create(delivery=old_delivery, url=old_delivery.url, status_code=500)

    events_purge()

    assert set(Event.objects.values_list("pk", flat=True)) == {recent.pk, fresh.pk}
    assert set(Delivery.objects.values_list("event_id", flat=True)) == {recent.pk, fresh.pk}
    assert Delivery.objects.count() == 4
    assert DeliveryAttempt.objects.count() == 0


def test_a_purged_event_is_not_found_any_more(api, merchant):
    event = record(merchant)
    Event.objects.filter(pk=event.pk).update(created_at=timezone.now() - timedelta(days=31))

    events_purge()

    assert api.get(f"/events/{event.pk}").status_code == 404
    assert events_page(api) == {"data": [], "hasMore": False, "nextCursor": None}


# --- OpenAPI ---------------------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_the_events_endpoints_are_documented_with_their_error_body(client):
    response = client.get("/openapi.json", HTTP_ACCEPT="application/json")

    schema = json.loads(response.content)
    assert response.status_code == 200
    error_ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                 "description": ""}
    for path in ("/events", "/events/{event_id}"):
        operation = schema["paths"][path]["get"]
        for status in ("400", "401", "404"):
            response = dict(operation["responses"][status])
            assert {"X-Request-Id", "Api-Version"} <= set(response.pop("headers"))  # on every response
            assert response == error_ref
        assert operation["security"] == [{"basicAuth": []}, {"apiKeyHeader": [], "apiSecretHeader": []}]
    parameters = {p["name"]: p for p in schema["paths"]["/events"]["get"]["parameters"]}
    assert set(parameters) == {"type", "objectId", "limit", "cursor"}
    assert "webhook.test" in parameters["type"]["schema"]["enum"]
    assert schema["components"]["schemas"]["Error"] == {
        "type": "object", "required": ["error"], "properties": {"error": {
            "$ref": "#/components/schemas/ErrorBody",
            "description": "The error: type, code, message, param, details and requestId."}}}
    assert set(schema["components"]["schemas"]["ErrorBody"]["properties"]) == {
        "type", "code", "message", "param", "details", "requestId"}


@pytest.mark.django_db
def test_openapi_json_is_json_without_asking_for_it(client):
    response = client.get("/openapi.json")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json") or response["Content-Type"].startswith(
        "application/vnd.oai.openapi+json")
    assert "/events" in json.loads(response.content)["paths"]
