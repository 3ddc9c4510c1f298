"""The delivery engine in-process: claim, POST, record, retry schedule, 410, redirects, timeouts, the sweeper."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from tests.factories import MerchantFactory
from tests.webhooks.receiver import start_receiver
from webhooks import delivery as engine
from webhooks import services
from webhooks.models import Delivery


@pytest.fixture
def receiver():
    server = start_receiver()
    yield server
    server.server.shutdown()


@pytest.fixture(autouse=True)
def local_targets(settings, monkeypatch):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOK_RETRY_SCHEDULE = [60, 300, 1800]
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)


@pytest.fixture
def retries(monkeypatch):
    """Retries the engine enqueues with a countdown, instead of a broker."""
    queued = []
    monkeypatch.setattr("webhooks.tasks.delivery_attempt.apply_async", lambda kwargs, countdown: queued.append(
        (kwargs["delivery_id"], countdown)))
    return queued


def record(url: str, merchant=None) -> Delivery:
    merchant = merchant or MerchantFactory()
    with transaction.atomic():
        event = services.event_record(merchant=merchant, livemode=False, type="payin.paid",
                                      obj={"id": "c1", "status": "PAID"}, previous_status="PENDING", webhook_url=url)
    return Delivery.objects.get(event=event)


@pytest.mark.django_db
def test_success_is_recorded_with_the_attempt(receiver):
    row = record(receiver.url("/ok"))

    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert (row.status, row.attempts, row.failures, row.last_status_code, row.locked_until) == (
        "SUCCEEDED", 1, 0, 200, None)
    attempt = row.attempt_log.get()
    assert (attempt.url, attempt.status_code, attempt.error, attempt.response_excerpt) == (
        receiver.url("/ok"), 200, "", "ok")
    request = receiver.received("/ok")[0]
    assert request.headers["webhook-id"] == str(row.event_id)
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"] == "Pagamentos-Webhooks/2026-11-20"


@pytest.mark.django_db
def test_a_done_delivery_is_not_sent_again(receiver):
    row = record(receiver.url("/ok"))
    engine.delivery_attempt(delivery_id=str(row.id))

    engine.delivery_attempt(delivery_id=str(row.id))

    assert len(receiver.received("/ok")) == 1


@pytest.mark.django_db
def test_failures_follow_the_schedule_with_jitter_then_fail(receiver, retries, settings):
    row = record(receiver.url("/fail"))
    delays = []

    for expected in settings.WEBHOOK_RETRY_SCHEDULE:
        before = timezone.now()
        engine.delivery_attempt(delivery_id=str(row.id))
        row.refresh_from_db()
        delay = (row.next_attempt_at - before).total_seconds()
        assert expected * 0.9 - 1 <= delay <= expected * 1.1 + 1
        delays.append(delay)
        Delivery.objects.filter(pk=row.pk).update(next_attempt_at=timezone.now())  # skip the wait
    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert (row.status, row.attempts, row.failures, row.last_status_code) == ("FAILED", 4, 4, 500)
    assert row.completed_at is not None
    assert row.attempt_log.count() == 4
    # Retries due within WEBHOOK_MAX_ETA_SECONDS go to the broker with their countdown; the 1800 s one does not.
    # (Each countdown is measured from a moment after `before`: equal to its delay within a second, not rounded alike.)
    assert len(retries) == 2 and all(abs(c - d) < 1 for (_, c), d in zip(retries, delays[:2], strict=True)), retries
    assert len({r.headers["webhook-id"] for r in receiver.received("/fail")}) == 1


@pytest.mark.django_db
def test_410_stops_retries(receiver, retries):
    row = record(receiver.url("/gone"))

    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert (row.status, row.last_status_code, row.last_error) == ("FAILED", 410, "410 Gone: retries stopped")
    assert retries == []


@pytest.mark.django_db
def test_a_redirect_is_a_failure_and_its_target_is_never_requested(receiver, retries):
    row = record(receiver.url("/redirect"))

    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert (row.status, row.failures, row.last_status_code) == ("PENDING", 1, 302)
    assert row.last_error == f"redirect to {receiver.url('/redirect-target')} not followed"
    assert receiver.received("/redirect-target") == []


@pytest.mark.django_db
def test_a_slow_answer_is_a_timeout(receiver, retries, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5

    row = record(receiver.url("/slow/1.5"))
    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert row.status == "PENDING"
    assert row.failures == 1
    assert row.last_error.startswith("ReadTimeoutError") or row.last_error.startswith("timeout")


@pytest.mark.django_db
def test_connection_refused_is_recorded(retries):
    row = record("http://127.0.0.1:9/hook")  # the discard port: nothing listens

    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    attempt = row.attempt_log.get()
    assert attempt.status_code is None
    assert "NewConnectionError" in attempt.error or "MaxRetryError" in attempt.error
    assert row.failures == 1


@pytest.mark.django_db
def test_only_the_first_2_kib_of_the_answer_is_kept(receiver):
    row = record(receiver.url("/big"))

    engine.delivery_attempt(delivery_id=str(row.id))

    assert row.attempt_log.get().response_excerpt == "x" * 2048


@pytest.mark.django_db
def test_a_lease_is_exclusive_until_it_expires(receiver):
    row = record(receiver.url("/ok"))

    first = engine.delivery_claim(delivery_id=str(row.id))
    second = engine.delivery_claim(delivery_id=str(row.id))
    Delivery.objects.filter(pk=row.pk).update(locked_until=timezone.now() - timedelta(seconds=1))
    after_expiry = engine.delivery_claim(delivery_id=str(row.id))

    assert first is not None and second is None and after_expiry is not None


@pytest.mark.django_db
def test_an_expired_lease_holder_does_not_overwrite_the_new_owner(receiver):
    row = record(receiver.url("/ok"))
    stale = engine.delivery_claim(delivery_id=str(row.id))
    Delivery.objects.filter(pk=row.pk).update(locked_until=timezone.now() - timedelta(seconds=1))
    engine.delivery_attempt(delivery_id=str(row.id))

    from webhooks.http import HttpResult
    engine._record(stale, HttpResult(status=500, body_excerpt="", error="", duration_ms=1))

    row.refresh_from_db()
    assert row.status == "SUCCEEDED"
    assert row.attempt_log.count() == 2


@pytest.mark.django_db
def test_sweeper_enqueues_only_overdue_unleased_deliveries(receiver, monkeypatch, settings):
    settings.WEBHOOK_SWEEP_GRACE_SECONDS = 10
    enqueued = []
    monkeypatch.setattr("webhooks.tasks.delivery_attempt.delay", lambda delivery_id: enqueued.append(delivery_id))
    merchant = MerchantFactory()
    now = timezone.now()
    overdue = record(receiver.url("/a"), merchant)
    just_due = record(receiver.url("/b"), merchant)
    leased = record(receiver.url("/c"), merchant)
    done = record(receiver.url("/d"), merchant)
    later = record(receiver.url("/e"), merchant)
    Delivery.objects.filter(pk__in=[overdue.pk, leased.pk, done.pk]).update(next_attempt_at=now - timedelta(minutes=5),
                                                                         enqueued_at=now - timedelta(minutes=5))
    Delivery.objects.filter(pk=leased.pk).update(locked_until=now + timedelta(seconds=20))
    Delivery.objects.filter(pk=done.pk).update(status="SUCCEEDED")
    Delivery.objects.filter(pk=later.pk).update(next_attempt_at=now + timedelta(hours=1))

    count = engine.deliveries_sweep()
    again = engine.deliveries_sweep()

    assert count == 1
    assert enqueued == [str(overdue.pk)]
    assert just_due.pk not in enqueued
    assert again == 0  # its message was just sent: not again before WEBHOOK_REENQUEUE_SECONDS


@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_of_one_delivery_have_one_winner():
    from tests.conftest import run_in_threads

    row = record("http://127.0.0.1:9/hook")

    claims = run_in_threads(20, lambda i: engine.delivery_claim(delivery_id=str(row.id)))

    assert sum(c is not None for c in claims) == 1
    row.refresh_from_db()
    assert row.attempts == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("livemode", "rail", "marked"), [(True, "simulator", True), (False, "simulator", False),
                                                          (True, "efi", False)])
def test_a_live_delivery_on_the_simulator_says_no_money_moved(receiver, settings, livemode, rail, marked):
    """As live API responses do (payments.middleware): a merchant's server must not ship goods for a simulated
    live payment."""
    settings.PAYMENTS_RAIL = rail
    with transaction.atomic():
        event = services.event_record(merchant=MerchantFactory(), livemode=livemode, type="payin.paid",
                                      obj={"id": "c1", "status": "PAID"}, previous_status="PENDING",
                                      webhook_url=receiver.url("/ok"))
    row = Delivery.objects.get(event=event)

    engine.delivery_attempt(delivery_id=str(row.id))

    headers = receiver.received("/ok")[0].headers
    assert headers.get("pagamentos-simulated") == ("true" if marked else None)
