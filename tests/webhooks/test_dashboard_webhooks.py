"""The dashboard's webhook pages, as a merchant uses them: endpoints, test events, deliveries, resend, signing secret.

Nothing here sends a webhook or asks real DNS: `webhooks.services._enqueue` is replaced by a recorder and
`webhooks.ssrf.resolve` answers a public address (a test that needs another answer sets its own).
"""

from __future__ import annotations

import base64
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from tests.factories import MerchantFactory
from webhooks import services, signing, ssrf
from webhooks.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint, WebhookSecret
from webhooks.services import event_record, signing_secrets_active

PUBLIC_ADDRESS = "93.184.216.34"
SECRET = re.compile(r"whsec_[A-Za-z0-9+/]{43}=")
TEST_EVENT_MESSAGE = "This is a test event sent from the dashboard."
SUSPENDED_MESSAGE = "Your account is suspended, so the dashboard is read-only. Contact support."


# --- Helpers ---------------------------------------------------------------------------------------------------------
def endpoint(merchant, *, url: str = "https://hooks.example.com/all", livemode: bool = False,
             event_types: list[str] | None = None, enabled: bool = True, description: str = "") -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(merchant=merchant, livemode=livemode, url=url, description=description,
                                          event_types=event_types or [], enabled=enabled)


def delivery(merchant, *, livemode: bool = False, status: str = Delivery.Status.FAILED,
             url: str = "https://hooks.example.com/all", type: str = "payin.paid", **fields) -> Delivery:
    """An event and one delivery of it, written directly: the pages only read them."""
    event = Event.objects.create(merchant=merchant, livemode=livemode, type=type, object_id="pay_1", payload={
        "id": "x", "type": type, "livemode": livemode, "data": {"object": {"id": "pay_1"}, "previousStatus": None}})
    return Delivery.objects.create(event=event, merchant=merchant, livemode=livemode, url=url, status=status,
                                   **fields)


def delivery_state(row: Delivery) -> tuple:
    row.refresh_from_db()
    return (row.status, row.attempts, row.failures, row.next_attempt_at, row.locked_until, row.completed_at,
            row.last_status_code, row.last_error)


def url_error(message: str) -> str:
    """How the endpoint form shows a URL refusal beside the url field (templates/_form.html)."""
    return f'<small class="error" role="alert">The webhook URL is not accepted: {message}</small>'


def page_text(response) -> str:
    return response.content.decode()


def switch_mode(client: Client, mode: str) -> None:
    response = client.post("/dashboard/mode/", {"mode": mode, "next": "/dashboard/integrations/"})
    assert response.status_code == 302


# --- Fixtures --------------------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def enqueued(monkeypatch) -> list[list[str]]:
    """What would have been sent to the broker: one list of delivery ids per after-commit enqueue."""
    calls: list[list[str]] = []
    monkeypatch.setattr(services, "_enqueue", lambda delivery_ids: calls.append(list(delivery_ids)))
    return calls


@pytest.fixture(autouse=True)
def dns(monkeypatch) -> list[tuple[str, int]]:
    """Every name resolves to one public address; the (host, port) asked are recorded."""
    asked: list[tuple[str, int]] = []

    def resolve(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return [PUBLIC_ADDRESS]

    monkeypatch.setattr(ssrf, "resolve", resolve)
    return asked


@pytest.fixture(autouse=True)
def _production_url_rules(settings):
    settings.WEBHOOKS_ALLOW_HTTP = False
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False


@pytest.fixture
def dashboard(client, merchant) -> Client:
    client.force_login(merchant.owner)
    return client


@pytest.fixture
def other_merchant(db):
    return MerchantFactory()


# --- The webhooks page and endpoints ---------------------------------------------------------------------------------
def test_the_page_lists_only_the_endpoints_of_the_sessions_mode(dashboard, merchant, other_merchant):
    first = endpoint(merchant, url="https://hooks.example.com/first", description="Orders")
    second = endpoint(merchant, url="https://hooks.example.com/second", event_types=["payin.paid"], enabled=False)
    live = endpoint(merchant, url="https://hooks.example.com/live", livemode=True)
    endpoint(other_merchant, url="https://hooks.example.com/not-mine")

    test_page = dashboard.get("/dashboard/integrations/")
    switch_mode(dashboard, "live")
    live_page = dashboard.get("/dashboard/integrations/")

    assert test_page.status_code == 200
    assert list(test_page.context["endpoints"]) == [first, second]
    text = page_text(test_page)
    assert "https://hooks.example.com/first" in text and "Orders" in text
    assert "https://hooks.example.com/second" in text and "payin.paid" in text and "disabled" in text
    assert "https://hooks.example.com/live" not in text
    assert "https://hooks.example.com/not-mine" not in text
    assert live_page.status_code == 200
    assert list(live_page.context["endpoints"]) == [live]
    assert "https://hooks.example.com/first" not in page_text(live_page)


def test_adding_an_endpoint(dashboard, merchant, dns):
    form = {"url": "https://example.com/hook", "description": "Orders server",
            "event_types": ["payout.completed", "payin.paid"], "enabled": "on"}

    response = dashboard.post("/dashboard/webhooks/endpoints/", form)

    assert response.status_code == 302
    assert response.url == "/dashboard/integrations/"
    created = WebhookEndpoint.objects.get()
    assert (created.merchant_id, created.livemode, created.url, created.description, created.event_types,
            created.enabled) == (merchant.pk, False, "https://example.com/hook", "Orders server",
                                 ["payin.paid", "payout.completed"], True)
    assert dns == [("example.com", 443)]
    assert "Endpoint added." in page_text(dashboard.get(response.url))


def test_an_endpoint_added_in_live_mode_is_a_live_endpoint_and_with_no_types_gets_every_type(dashboard, merchant):
    switch_mode(dashboard, "live")

    response = dashboard.post("/dashboard/webhooks/endpoints/", {"url": "https://example.com/live-hook"})

    assert response.status_code == 302
    created = WebhookEndpoint.objects.get()
    assert (created.livemode, created.event_types) == (True, [])
    assert created.wants("payout.returned")


@pytest.mark.parametrize(("url", "reason"), [
    ("http://127.0.0.1/x", "it must start with https://"),
    ("http://example.com/hook", "it must start with https://"),
    ("https://127.0.0.1/x", "its address is not public"),
    ("https://10.0.0.1/x", "its address is not public"),
    ("https://169.254.169.254/latest/meta-data/", "its address is not public"),
    ("https://2130706433/x", "its address is not public"),
    ("https://[::ffff:127.0.0.1]/x", "its address is not public"),
    ("https://localhost/x", "its address is not public"),
    ("https://user:pw@example.com/x", "it must not contain credentials"),
    ("ftp://example.com/x", "it must start with https://"),
])
def test_a_refused_url_is_shown_beside_the_url_field_and_creates_nothing(dashboard, url, reason):
    response = dashboard.post("/dashboard/webhooks/endpoints/", {"url": url, "description": "x"})

    assert response.status_code == 400
    assert response.context["endpoint_form"].errors == {"url": [f"The webhook URL is not accepted: {reason}"]}
    assert url_error(reason) in page_text(response)
    assert WebhookEndpoint.objects.count() == 0


def test_a_name_that_resolves_to_a_private_address_is_refused(dashboard, monkeypatch):
    monkeypatch.setattr(ssrf, "resolve", lambda host, port: [PUBLIC_ADDRESS, "10.1.2.3"])

    response = dashboard.post("/dashboard/webhooks/endpoints/", {"url": "https://rebind.example.com/hook"})

    assert response.status_code == 400
    assert url_error("its host resolves to an address that is not public") in page_text(response)
    assert WebhookEndpoint.objects.count() == 0


def test_http_is_accepted_only_with_the_setting_and_still_not_to_private_addresses(dashboard, settings):
    settings.WEBHOOKS_ALLOW_HTTP = True

    public = dashboard.post("/dashboard/webhooks/endpoints/", {"url": "http://example.com/hook"})
    loopback = dashboard.post("/dashboard/webhooks/endpoints/", {"url": "http://127.0.0.1/x"})

    assert public.status_code == 302
    assert loopback.status_code == 400
    assert url_error("its address is not public") in page_text(loopback)
    assert list(WebhookEndpoint.objects.values_list("url", flat=True)) == ["http://example.com/hook"]


def test_an_empty_url_is_required(dashboard):
    response = dashboard.post("/dashboard/webhooks/endpoints/", {"url": ""})

    assert response.status_code == 400
    assert response.context["endpoint_form"].errors == {"url": ["This field is required."]}
    assert WebhookEndpoint.objects.count() == 0


def test_the_edit_page_shows_the_endpoint(dashboard, merchant):
    row = endpoint(merchant, url="https://hooks.example.com/old", description="Old", event_types=["payin.paid"])

    response = dashboard.get(f"/dashboard/webhooks/endpoints/{row.pk}/")

    assert response.status_code == 200
    assert response.context["form"].initial == {"url": "https://hooks.example.com/old", "description": "Old",
                                                "event_types": ["payin.paid"], "enabled": True}
    assert 'value="https://hooks.example.com/old"' in page_text(response)


def test_editing_changes_the_url_and_types_and_disables(dashboard, merchant, dns):
    row = endpoint(merchant, url="https://hooks.example.com/old", description="Old")
    form = {"url": "https://new.example.com/hook", "description": "New", "event_types": ["payin.refunded"]}

    response = dashboard.post(f"/dashboard/webhooks/endpoints/{row.pk}/", form)

    assert response.status_code == 302
    assert response.url == "/dashboard/integrations/"
    row.refresh_from_db()
    assert (row.url, row.description, row.event_types, row.enabled, row.livemode) == (
        "https://new.example.com/hook", "New", ["payin.refunded"], False, False)
    assert dns == [("new.example.com", 443)]
    event = event_record(merchant=merchant, livemode=False, type="payin.refunded", obj={"id": "pay_1"})
    assert Delivery.objects.filter(event=event).count() == 0


def test_editing_enables_again(dashboard, merchant):
    row = endpoint(merchant, enabled=False, event_types=["payin.paid"])

    response = dashboard.post(f"/dashboard/webhooks/endpoints/{row.pk}/",
                              {"url": row.url, "description": "", "enabled": "on"})

    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.enabled, row.event_types) == (True, [])


@pytest.mark.parametrize(("url", "reason"), [
    ("https://10.0.0.1/x", "its address is not public"),
    ("http://example.com/hook", "it must start with https://"),
    ("https://user:pw@example.com/x", "it must not contain credentials"),
])
def test_editing_validates_the_url_the_same_way(dashboard, merchant, url, reason):
    row = endpoint(merchant, url="https://hooks.example.com/old", description="Old", event_types=["payin.paid"])

    response = dashboard.post(f"/dashboard/webhooks/endpoints/{row.pk}/",
                              {"url": url, "description": "New", "event_types": []})

    assert response.status_code == 200
    assert response.context["form"].errors == {"url": [f"The webhook URL is not accepted: {reason}"]}
    assert url_error(reason) in page_text(response)
    row.refresh_from_db()
    assert (row.url, row.description, row.event_types, row.enabled) == (
        "https://hooks.example.com/old", "Old", ["payin.paid"], True)


# --- Another merchant's objects --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "path"), [
    ("get", "/dashboard/webhooks/endpoints/{endpoint}/"),
    ("post", "/dashboard/webhooks/endpoints/{endpoint}/"),
    ("post", "/dashboard/webhooks/endpoints/{endpoint}/test/"),
    ("get", "/dashboard/webhooks/deliveries/{delivery}/"),
    ("post", "/dashboard/webhooks/deliveries/{delivery}/resend/"),
])
def test_another_merchants_endpoint_or_delivery_is_not_found(dashboard, other_merchant, enqueued, method, path):
    theirs = endpoint(other_merchant, url="https://hooks.example.com/theirs")
    their_delivery = delivery(other_merchant, status=Delivery.Status.FAILED, failures=8, attempts=9)
    before = delivery_state(their_delivery)

    response = getattr(dashboard, method)(path.format(endpoint=theirs.pk, delivery=their_delivery.pk),
                                          {"url": "https://evil.example.com/x"} if method == "post" else None)

    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.url == "https://hooks.example.com/theirs"
    assert delivery_state(their_delivery) == before
    assert Event.objects.filter(type="webhook.test").count() == 0
    assert enqueued == []


# --- Test events -----------------------------------------------------------------------------------------------------
def test_send_test_event_delivers_one_webhook_test_to_that_endpoint_only(
        dashboard, merchant, enqueued, django_capture_on_commit_callbacks):
    target = endpoint(merchant, url="https://hooks.example.com/payouts-only", event_types=["payout.completed"])
    endpoint(merchant, url="https://hooks.example.com/every-type")

    with django_capture_on_commit_callbacks(execute=True):
        response = dashboard.post(f"/dashboard/webhooks/endpoints/{target.pk}/test/")
        enqueued_before_the_commit = list(enqueued)

    assert response.status_code == 302
    assert response.url == "/dashboard/webhooks/deliveries/"
    event = Event.objects.get()
    assert (event.merchant_id, event.livemode, event.type, event.object_id) == (
        merchant.pk, False, "webhook.test", str(target.pk))
    assert event.payload["type"] == "webhook.test"
    assert event.payload["data"] == {"object": {"id": str(target.pk), "object": "webhook_endpoint",
                                                "url": "https://hooks.example.com/payouts-only",
                                                "message": TEST_EVENT_MESSAGE},
                                     "previousStatus": None}
    sent = Delivery.objects.get()
    assert (sent.event_id, sent.url, sent.endpoint_id, sent.status, sent.livemode) == (
        event.pk, "https://hooks.example.com/payouts-only", target.pk, "PENDING", False)
    assert enqueued_before_the_commit == []
    assert enqueued == [[str(sent.pk)]]
    listed = dashboard.get(response.url)
    assert list(listed.context["page"].object_list) == [sent]
    assert f"Test event {event.pk} queued." in page_text(listed)


# --- Deliveries ------------------------------------------------------------------------------------------------------
def test_the_deliveries_list_filters_by_status_and_shows_only_this_merchant_and_mode(
        dashboard, merchant, other_merchant):
    now = timezone.now()
    older_failed = delivery(merchant, status="FAILED", url="https://hooks.example.com/a",
                            created_at=now - timedelta(minutes=3))
    pending = delivery(merchant, status="PENDING", url="https://hooks.example.com/b",
                       created_at=now - timedelta(minutes=2))
    succeeded = delivery(merchant, status="SUCCEEDED", url="https://hooks.example.com/c",
                         created_at=now - timedelta(minutes=1))
    newer_failed = delivery(merchant, status="FAILED", url="https://hooks.example.com/d", created_at=now)
    delivery(merchant, livemode=True, status="FAILED", url="https://hooks.example.com/live")
    delivery(other_merchant, status="FAILED", url="https://hooks.example.com/not-mine")

    failed_page = dashboard.get("/dashboard/webhooks/deliveries/", {"status": "FAILED"})
    all_page = dashboard.get("/dashboard/webhooks/deliveries/")
    succeeded_page = dashboard.get("/dashboard/webhooks/deliveries/", {"status": "SUCCEEDED"})

    assert failed_page.status_code == 200
    assert list(failed_page.context["page"].object_list) == [newer_failed, older_failed]
    text = page_text(failed_page)
    assert f"/dashboard/webhooks/deliveries/{newer_failed.pk}/" in text
    assert f"/dashboard/webhooks/deliveries/{older_failed.pk}/" in text
    assert "https://hooks.example.com/b" not in text
    assert "https://hooks.example.com/live" not in text
    assert "https://hooks.example.com/not-mine" not in text
    assert list(all_page.context["page"].object_list) == [newer_failed, succeeded, pending, older_failed]
    assert list(succeeded_page.context["page"].object_list) == [succeeded]


def test_the_live_deliveries_list_shows_only_live_deliveries(dashboard, merchant):
    delivery(merchant, status="FAILED", url="https://hooks.example.com/test")
    live = delivery(merchant, livemode=True, status="FAILED", url="https://hooks.example.com/live")
    switch_mode(dashboard, "live")

    response = dashboard.get("/dashboard/webhooks/deliveries/")

    assert list(response.context["page"].object_list) == [live]


def test_the_delivery_detail_shows_its_attempts_newest_first(dashboard, merchant):
    row = delivery(merchant, status="PENDING", attempts=2, failures=2, last_status_code=503)
    now = timezone.now()
    first = DeliveryAttempt.objects.create(delivery=row, attempted_at=now - timedelta(minutes=6), url=row.url,
                                           error="connection refused", duration_ms=3001)
    second = DeliveryAttempt.objects.create(delivery=row, attempted_at=now - timedelta(minutes=1), url=row.url,
                                            status_code=503, duration_ms=120,
                                            response_excerpt="Service Unavailable: try later")

    response = dashboard.get(f"/dashboard/webhooks/deliveries/{row.pk}/")

    assert response.status_code == 200
    assert response.context["delivery"] == row
    assert list(response.context["attempts"]) == [second, first]
    text = page_text(response)
    assert "connection refused" in text and "3001 ms" in text
    assert "<td>503</td>" in text and "120 ms" in text and "Service Unavailable: try later" in text
    assert str(row.event_id) in text


def test_a_delivery_never_attempted_says_so(dashboard, merchant):
    row = delivery(merchant, status="PENDING")

    response = dashboard.get(f"/dashboard/webhooks/deliveries/{row.pk}/")

    assert list(response.context["attempts"]) == []
    assert "Not attempted yet." in page_text(response)


def test_resending_a_failed_delivery_starts_it_again_and_enqueues_it_after_the_commit(
        dashboard, merchant, enqueued, django_capture_on_commit_callbacks):
    failed_at = timezone.now() - timedelta(days=2)
    row = delivery(merchant, status="FAILED", attempts=9, failures=8, next_attempt_at=failed_at,
                   completed_at=failed_at, last_status_code=500, last_error="HTTP 500")
    for status_code in (500, 502):
        DeliveryAttempt.objects.create(delivery=row, url=row.url, status_code=status_code, attempted_at=failed_at)

    with django_capture_on_commit_callbacks(execute=True):
        response = dashboard.post(f"/dashboard/webhooks/deliveries/{row.pk}/resend/")
        enqueued_before_the_commit = list(enqueued)

    assert response.status_code == 302
    assert response.url == f"/dashboard/webhooks/deliveries/{row.pk}/"
    row.refresh_from_db()
    assert (row.status, row.failures, row.attempts, row.completed_at, row.locked_until) == (
        "PENDING", 0, 9, None, None)
    assert abs(row.next_attempt_at - timezone.now()) < timedelta(seconds=5)
    assert sorted(row.attempt_log.values_list("status_code", flat=True)) == [500, 502]
    assert enqueued_before_the_commit == []
    assert enqueued == [[str(row.pk)]]
    assert "Delivery queued again." in page_text(dashboard.get(response.url))


def test_resending_a_succeeded_delivery_sends_it_again(dashboard, merchant, enqueued,
                                                       django_capture_on_commit_callbacks):
    row = delivery(merchant, status="SUCCEEDED", attempts=1, completed_at=timezone.now())

    with django_capture_on_commit_callbacks(execute=True):
        dashboard.post(f"/dashboard/webhooks/deliveries/{row.pk}/resend/")

    row.refresh_from_db()
    assert (row.status, row.completed_at, row.attempts) == ("PENDING", None, 1)
    assert enqueued == [[str(row.pk)]]


def test_resending_while_a_worker_holds_the_lease_is_refused_and_changes_nothing(
        dashboard, merchant, enqueued, django_capture_on_commit_callbacks):
    now = timezone.now()
    row = delivery(merchant, status="PENDING", attempts=3, failures=2, next_attempt_at=now - timedelta(seconds=1),
                   locked_until=now + timedelta(seconds=30))
    before = delivery_state(row)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = dashboard.post(f"/dashboard/webhooks/deliveries/{row.pk}/resend/")

    assert response.status_code == 302
    assert response.url == f"/dashboard/webhooks/deliveries/{row.pk}/"
    assert delivery_state(row) == before
    assert callbacks == []
    assert enqueued == []
    shown = page_text(dashboard.get(response.url))
    assert "This delivery is being sent right now" in shown
    assert "Delivery queued again." not in shown


# --- Signing secret --------------------------------------------------------------------------------------------------
def test_the_page_never_contains_the_signing_secret(dashboard, merchant):
    before_any_secret = dashboard.get("/dashboard/integrations/")
    dashboard.post("/dashboard/webhooks/secret/reveal/")
    dashboard.post("/dashboard/webhooks/secret/rotate/")

    after_a_reveal_and_a_rotation = dashboard.get("/dashboard/integrations/")

    assert before_any_secret.status_code == 200
    assert "whsec_" not in page_text(before_any_secret)
    assert after_a_reveal_and_a_rotation.status_code == 200
    assert "whsec_" not in page_text(after_a_reveal_and_a_rotation)
    assert after_a_reveal_and_a_rotation.context["revealed_secret"] is None


def test_reveal_shows_the_secret_on_a_page_that_is_not_cached(dashboard, merchant):
    response = dashboard.post("/dashboard/webhooks/secret/reveal/")
    again = dashboard.post("/dashboard/webhooks/secret/reveal/")

    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    secret = response.context["revealed_secret"]
    assert SECRET.fullmatch(secret)
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert f'value="{secret}"' in page_text(response)
    assert again.context["revealed_secret"] == secret
    assert signing_secrets_active(merchant_id=merchant.pk, livemode=False) == [secret]


def test_the_secret_is_stored_encrypted(dashboard, merchant):
    secret = dashboard.post("/dashboard/webhooks/secret/reveal/").context["revealed_secret"]

    row = WebhookSecret.objects.get(merchant=merchant, livemode=False)

    assert secret not in row.secret_encrypted
    assert secret.removeprefix("whsec_") not in row.secret_encrypted
    assert secret.encode() not in base64.b64decode(row.secret_encrypted)
    assert signing.secret_decrypt(row.secret_encrypted) == secret


def test_each_mode_has_its_own_secret(dashboard, merchant):
    test_secret = dashboard.post("/dashboard/webhooks/secret/reveal/").context["revealed_secret"]
    switch_mode(dashboard, "live")

    live_secret = dashboard.post("/dashboard/webhooks/secret/reveal/").context["revealed_secret"]

    assert SECRET.fullmatch(live_secret)
    assert live_secret != test_secret
    assert signing_secrets_active(merchant_id=merchant.pk, livemode=True) == [live_secret]
    assert signing_secrets_active(merchant_id=merchant.pk, livemode=False) == [test_secret]


def test_rotate_shows_a_new_secret_and_the_old_one_signs_too_for_24_hours(dashboard, merchant):
    old = dashboard.post("/dashboard/webhooks/secret/reveal/").context["revealed_secret"]

    response = dashboard.post("/dashboard/webhooks/secret/rotate/")

    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    new = response.context["revealed_secret"]
    assert SECRET.fullmatch(new)
    assert len(base64.b64decode(new.removeprefix("whsec_"), validate=True)) == 32
    assert new != old
    assert f'value="{new}"' in page_text(response)
    assert old not in page_text(response)
    assert "Signing secret rotated." in page_text(response)
    assert dashboard.post("/dashboard/webhooks/secret/reveal/").context["revealed_secret"] == new
    row = WebhookSecret.objects.get(merchant=merchant, livemode=False)
    assert new not in row.secret_encrypted and old not in row.previous_secret_encrypted
    assert signing_secrets_active(merchant_id=merchant.pk, livemode=False) == [new, old]
    WebhookSecret.objects.filter(pk=row.pk).update(rotated_at=timezone.now() - timedelta(hours=23, minutes=59))
    assert signing_secrets_active(merchant_id=merchant.pk, livemode=False) == [new, old]
    WebhookSecret.objects.filter(pk=row.pk).update(rotated_at=timezone.now() - timedelta(hours=24, seconds=1))
    assert signing_secrets_active(merchant_id=merchant.pk, livemode=False) == [new]


def test_rotating_before_any_reveal_keeps_the_first_secret_signing_too(dashboard, merchant):
    response = dashboard.post("/dashboard/webhooks/secret/rotate/")

    new = response.context["revealed_secret"]
    active = signing_secrets_active(merchant_id=merchant.pk, livemode=False)
    assert SECRET.fullmatch(new)
    assert len(active) == 2 and active[0] == new and SECRET.fullmatch(active[1]) and active[1] != new


# --- CSRF ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [
    "/dashboard/webhooks/secret/reveal/",
    "/dashboard/webhooks/secret/rotate/",
    "/dashboard/webhooks/endpoints/",
    "/dashboard/webhooks/endpoints/{endpoint}/",
    "/dashboard/webhooks/endpoints/{endpoint}/test/",
    "/dashboard/webhooks/deliveries/{delivery}/resend/",
])
def test_every_form_needs_the_csrf_token(merchant, enqueued, path):
    client = Client(enforce_csrf_checks=True)
    client.force_login(merchant.owner)
    row = endpoint(merchant, url="https://hooks.example.com/old")
    failed = delivery(merchant, status="FAILED", failures=8)
    before = delivery_state(failed)

    response = client.post(path.format(endpoint=row.pk, delivery=failed.pk), {"url": "https://example.com/new"})

    assert response.status_code == 403
    assert list(WebhookEndpoint.objects.values_list("url", flat=True)) == ["https://hooks.example.com/old"]
    assert WebhookSecret.objects.count() == 0
    assert Event.objects.count() == 1
    assert delivery_state(failed) == before
    assert enqueued == []


def test_a_form_with_the_csrf_token_is_accepted(merchant):
    client = Client(enforce_csrf_checks=True)
    client.force_login(merchant.owner)
    client.get("/dashboard/integrations/")
    token = client.cookies["csrftoken"].value

    response = client.post("/dashboard/webhooks/endpoints/", {"url": "https://example.com/hook",
                                                              "csrfmiddlewaretoken": token})

    assert response.status_code == 302
    assert WebhookEndpoint.objects.get().url == "https://example.com/hook"


# --- A suspended account is read-only --------------------------------------------------------------------------------
@pytest.fixture
def suspended(merchant):
    merchant.is_suspended = True
    merchant.suspended_at = timezone.now()
    merchant.save(update_fields=["is_suspended", "suspended_at"])
    return merchant


def test_a_suspended_merchant_cannot_add_an_endpoint(dashboard, suspended):
    response = dashboard.post("/dashboard/webhooks/endpoints/", {"url": "https://example.com/hook"})

    assert response.status_code == 302
    assert response.url == "/dashboard/"
    assert WebhookEndpoint.objects.count() == 0
    assert SUSPENDED_MESSAGE in page_text(dashboard.get(response.url))


def test_a_suspended_merchant_cannot_edit_an_endpoint(dashboard, suspended):
    row = endpoint(suspended, url="https://hooks.example.com/old")

    response = dashboard.post(f"/dashboard/webhooks/endpoints/{row.pk}/", {"url": "https://example.com/new"})

    assert response.status_code == 302
    assert response.url == "/dashboard/"
    row.refresh_from_db()
    assert (row.url, row.enabled) == ("https://hooks.example.com/old", True)


def test_a_suspended_merchant_cannot_rotate_the_secret(dashboard, suspended):
    secret = dashboard.post("/dashboard/webhooks/secret/reveal/").context["revealed_secret"]

    response = dashboard.post("/dashboard/webhooks/secret/rotate/")

    assert response.status_code == 302
    assert response.url == "/dashboard/"
    assert WebhookSecret.objects.get(merchant=suspended).rotated_at is None
    assert signing_secrets_active(merchant_id=suspended.pk, livemode=False) == [secret]
    assert SUSPENDED_MESSAGE in page_text(dashboard.get(response.url))


def test_a_suspended_merchant_cannot_resend(dashboard, suspended, enqueued, django_capture_on_commit_callbacks):
    row = delivery(suspended, status="FAILED", attempts=9, failures=8, completed_at=timezone.now())
    before = delivery_state(row)

    with django_capture_on_commit_callbacks(execute=True):
        response = dashboard.post(f"/dashboard/webhooks/deliveries/{row.pk}/resend/")

    assert response.status_code == 302
    assert response.url == "/dashboard/"
    assert delivery_state(row) == before
    assert enqueued == []


def test_a_suspended_merchant_cannot_send_a_test_event(dashboard, suspended, enqueued,
                                                       django_capture_on_commit_callbacks):
    row = endpoint(suspended)

    with django_capture_on_commit_callbacks(execute=True):
        response = dashboard.post(f"/dashboard/webhooks/endpoints/{row.pk}/test/")

    assert response.status_code == 302
    assert response.url == "/dashboard/"
    assert Event.objects.count() == 0
    assert Delivery.objects.count() == 0
    assert enqueued == []


def test_a_suspended_merchant_still_sees_the_pages(dashboard, suspended):
    row = delivery(suspended, status="FAILED")

    pages = [dashboard.get(path) for path in ("/dashboard/integrations/", "/dashboard/webhooks/deliveries/",
                                              f"/dashboard/webhooks/deliveries/{row.pk}/")]

    assert [page.status_code for page in pages] == [200, 200, 200]


def test_the_pages_need_a_login(client, merchant):
    row = delivery(merchant, status="FAILED")

    responses = [client.get(path) for path in ("/dashboard/integrations/", "/dashboard/webhooks/deliveries/",
                                               f"/dashboard/webhooks/deliveries/{row.pk}/")]
    reveal = client.post("/dashboard/webhooks/secret/reveal/")

    assert [r.status_code for r in responses] == [302, 302, 302]
    assert all(r.url.startswith("/dashboard/login/") for r in responses)
    assert reveal.status_code == 302 and reveal.url.startswith("/dashboard/login/")
    assert WebhookSecret.objects.count() == 0
