"""Delivery by a real Celery worker (a separate process) over Redis, to a local receiver, and its faults.

The worker and the beat scheduler run against the test database, with the retry schedule, the lease and the sweep
interval shortened through their environment variables so that hours of production behaviour take seconds.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction
from standardwebhooks.webhooks import Webhook

from config.celery import app as celery_app
from core import cache as shared_cache
from payments.ledger import services as ledger
from payments.models import Payout, PayoutStatus
from payments.payouts import dispatch as payout_dispatch
from payments.payouts import services as payout_services
from payments.payouts.validation import payout_request_validate
from tests.conftest import broker_redis, subprocess_database_url
from tests.factories import MerchantFactory, UserFactory
from tests.webhooks.receiver import start_receiver
from webhooks import services
from webhooks.models import Delivery

SCHEDULE = [1, 2, 3]


class Processes:
    """The worker and the scheduler, started and killed as an operator (or a crash) would."""

    def __init__(self, environment: dict):
        self.environment = environment
        self.workdir = tempfile.mkdtemp(prefix="celery-test-")
        self.worker: subprocess.Popen | None = None
        self.beat: subprocess.Popen | None = None

    def _spawn(self, *args: str) -> subprocess.Popen:
        log = open(Path(self.workdir) / f"{args[0]}.log", "ab")  # closed when the test process ends
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", *args], env=self.environment,
                                cwd=settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT)

    def start_worker(self, *, plain: bool = False) -> None:
        if plain:  # as an operator starts it: pool, concurrency and prefetch from the settings
            self.worker = self._spawn("worker", "--loglevel", "WARNING")
            return
        self.worker = self._spawn("worker", "--pool", "threads", "--concurrency", "8", "--loglevel", "WARNING",
                                  "--without-gossip", "--without-mingle", "--without-heartbeat")

    def start_beat(self) -> None:
        self.beat = self._spawn("beat", "--loglevel", "WARNING", "--schedule", f"{self.workdir}/beat-schedule")

    def kill_worker(self) -> None:
        self.worker.send_signal(signal.SIGKILL)
        self.worker.wait(timeout=10)

    def stop(self) -> None:
        for process in (self.worker, self.beat):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in Path(self.workdir).glob("*.log"))


@pytest.fixture
def receiver():
    server = start_receiver()
    yield server
    server.server.shutdown()


@pytest.fixture
def processes(transactional_db, settings):
    environment = {
        **os.environ,
        "DATABASE_URL": subprocess_database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "SECRET_KEY": settings.SECRET_KEY,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
        "WEBHOOKS_ALLOW_HTTP": "true",
        "WEBHOOK_RETRY_SCHEDULE": ",".join(str(s) for s in SCHEDULE),
        "WEBHOOK_SWEEP_INTERVAL_SECONDS": "1",
        "WEBHOOK_SWEEP_GRACE_SECONDS": "2",
        "WEBHOOK_REENQUEUE_SECONDS": "3",
        "WEBHOOK_DELIVERY_LEASE_SECONDS": "4",
        "WEBHOOK_TIMEOUT_SECONDS": "1",
        "WEBHOOK_CONNECT_TIMEOUT_SECONDS": "1",
        "LOG_LEVEL": "WARNING",
        "CONN_MAX_AGE": "0",
    }
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOKS_ALLOW_HTTP = True
    celery_app.control.purge()
    running = Processes(environment)
    yield running
    running.stop()


def record(merchant, url: str, n: int = 0):
    with transaction.atomic():
        return services.event_record(merchant=merchant, livemode=False, type="payin.paid",
                                     obj={"id": f"charge-{n}", "status": "PAID", "amount": 100 + n},
                                     previous_status="PENDING", webhook_url=url)


def verified(secret: str, request) -> dict:
    return Webhook(secret).verify(request.body, {k: request.headers[k] for k in
                                                 ("webhook-id", "webhook-timestamp", "webhook-signature")})


def wait_delivery_status(delivery: Delivery, status: str, timeout: float = 20) -> Delivery:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        delivery.refresh_from_db()
        if delivery.status == status:
            return delivery
        time.sleep(0.1)
    return delivery


def test_end_to_end_delivery_with_a_valid_signature(processes, receiver):
    processes.start_worker()
    merchant = MerchantFactory()
    secret = services.signing_secret_reveal(merchant=merchant, livemode=False)

    event = record(merchant, receiver.url("/ok"))

    assert receiver.wait_for(lambda: receiver.received("/ok"), timeout=20), processes.logs()
    request = receiver.received("/ok")[0]
    assert request.headers["webhook-id"] == str(event.id)
    assert verified(secret, request) == event.payload
    delivery = wait_delivery_status(Delivery.objects.get(event=event), "SUCCEEDED")
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("SUCCEEDED", 1, 200)


def test_retries_on_500_follow_the_schedule_with_one_webhook_id(processes, receiver):
    processes.start_worker()
    processes.start_beat()
    merchant = MerchantFactory()

    event = record(merchant, receiver.url("/fail"))

    assert receiver.wait_for(lambda: len(receiver.received("/fail")) == 4, timeout=30), processes.logs()
    delivery = wait_delivery_status(Delivery.objects.get(event=event), "FAILED")
    requests = receiver.received("/fail")
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(requests)]
    for gap, planned in zip(gaps, SCHEDULE, strict=True):
        assert planned * 0.9 - 0.3 <= gap <= planned * 1.1 + 1.5, gaps
    assert {r.headers["webhook-id"] for r in requests} == {str(event.id)}
    assert (delivery.status, delivery.attempts, delivery.failures) == ("FAILED", 4, 4)
    time.sleep(1.5)
    assert len(receiver.received("/fail")) == 4  # nothing after the schedule is over


def test_410_stops_retries(processes, receiver):
    processes.start_worker()
    processes.start_beat()

    event = record(MerchantFactory(), receiver.url("/gone"))

    delivery = wait_delivery_status(Delivery.objects.get(event=event), "FAILED")
    time.sleep(SCHEDULE[0] + 1.5)
    assert len(receiver.received("/gone")) == 1
    assert (delivery.status, delivery.last_status_code) == ("FAILED", 410)


def test_a_redirect_is_a_failure_and_its_target_is_never_requested(processes, receiver):
    processes.start_worker()
    processes.start_beat()

    event = record(MerchantFactory(), receiver.url("/redirect"))

    delivery = wait_delivery_status(Delivery.objects.get(event=event), "FAILED", timeout=30)
    assert delivery.status == "FAILED"
    assert len(receiver.received("/redirect")) == 4
    assert receiver.received("/redirect-target") == []
    assert set(delivery.attempt_log.values_list("status_code", flat=True)) == {302}


def test_a_receiver_slower_than_the_timeout_is_retried(processes, receiver):
    processes.start_worker()

    event = record(MerchantFactory(), receiver.url("/slow/2"))

    assert receiver.wait_for(lambda: len(receiver.received("/slow/2")) >= 2, timeout=20), processes.logs()
    attempt = Delivery.objects.get(event=event).attempt_log.order_by("attempted_at").first()
    assert attempt.status_code is None or attempt.error.startswith("timeout")
    assert attempt.error


def test_no_event_is_lost_when_the_worker_is_killed_twice_and_the_broker_flushed(processes, receiver):
    """300 events; the worker is SIGKILLed twice (once mid-delivery) and the broker's database flushed once:
    every event still reaches the receiver, validly signed."""
    broker = broker_redis()
    processes.start_worker()
    processes.start_beat()
    merchant = MerchantFactory()
    secret = services.signing_secret_reveal(merchant=merchant, livemode=False)
    url = receiver.url("/ok")
    events = []

    for n in range(100):
        events.append(record(merchant, url, n))
    processes.kill_worker()  # some of the first hundred are in flight or queued
    for n in range(100, 200):
        events.append(record(merchant, url, n))
    broker.flushdb()  # every queued message is gone
    processes.start_worker()
    for n in range(200, 300):
        events.append(record(merchant, url, n))
        if n == 250:
            processes.kill_worker()
            processes.start_worker()

    expected = {str(e.id) for e in events}
    delivered = lambda: {r.headers["webhook-id"] for r in receiver.received("/ok")} >= expected  # noqa: E731
    assert receiver.wait_for(delivered, timeout=120), (
        f"{len(expected - {r.headers['webhook-id'] for r in receiver.received('/ok')})} missing\n{processes.logs()}")
    requests = receiver.received("/ok")
    for request in requests:
        assert verified(secret, request)["id"] == request.headers["webhook-id"]
    duplicates = len(requests) - len({r.headers["webhook-id"] for r in requests})
    print(f"fault test: {len(expected)} events, {len(requests)} deliveries received, {duplicates} duplicates")


def test_a_payout_task_is_not_held_behind_a_storm_of_deliveries(processes, receiver):
    """Issue 17, goal 3: the worker started the plain way consumes the money queue beside the deliveries' one. 400
    deliveries to a merchant that takes 0.5 s an answer keep every pool thread busy for ~25 s; a payout task sent
    after them has started its payout within a few seconds, not after the storm."""
    broker = broker_redis()
    processes.start_worker(plain=True)
    merchant = MerchantFactory()
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=10_000, reason="fund",
                             staff=UserFactory(is_staff=True))
    shared_cache.flag_set(payout_dispatch.DISPATCH_FLAG, seconds=60)  # no dispatch message: the task below alone
    payout = payout_services.payout_create(merchant=merchant, livemode=False, data=payout_request_validate(
        {"amount": 1_000, "referenceId": "storm", "pixKeyType": "EVP", "pixKey": str(uuid.uuid4())},
        merchant=merchant))
    url = receiver.url("/slow/0.5")
    with transaction.atomic():
        for n in range(400):
            services.event_record(merchant=merchant, livemode=False, type="payin.paid",
                                  obj={"id": f"charge-{n}", "status": "PAID", "amount": 100 + n}, webhook_url=url)
    assert receiver.wait_for(lambda: len(receiver.received("/slow/0.5")) >= 8, timeout=30), processes.logs()

    sent = time.monotonic()
    celery_app.send_task("payments.payouts.tasks.payouts_process", kwargs={"payout_ids": [str(payout.pk)]})

    def started() -> bool:  # the task ran: its payout left PENDING
        return Payout.objects.filter(pk=payout.pk).exclude(status=PayoutStatus.PENDING).exists()

    assert receiver.wait_for(started, timeout=20), processes.logs()
    waited = time.monotonic() - sent
    still_queued = broker.llen("webhooks")
    assert waited < 5, f"the payout task waited {waited:.1f} s"
    assert still_queued > 200, still_queued  # the storm was still there: the payout did not wait for it
