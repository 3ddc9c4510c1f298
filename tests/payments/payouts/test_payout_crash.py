"""Payouts processed by a real Celery worker (a separate process, over Redis) that is SIGKILLed mid-send (SPEC §4.3,
§7): never pay twice, never lose a payout.

The simulator rail records each payout it is sent (`SimulatorOperation`, keyed by the payout id, the idempotency key
of the call) and counts every call under that key. The worker's simulator answers only SIMULATOR_LATENCY_SECONDS
after recording the send, so a kill lands between "the rail has it" and "we recorded its answer". Whatever the
moment of the kill, after restarts and reconciliation every payout is final, the rail was asked to pay each one
exactly once, and the money adds up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.db.models import Sum

from config.celery import app as celery_app
from payments.ledger import selectors as ledger_selectors
from payments.ledger import services as ledger
from payments.management.commands.ledger_check import Command as LedgerCheck
from payments.models import Payout, PayoutStatus, SimulatorOperation
from payments.payouts import sending
from payments.payouts import services as payouts
from payments.payouts.validation import payout_request_validate
from tests.conftest import broker_redis, subprocess_database_url
from tests.factories import MerchantFactory, UserFactory
from tests.webhooks.test_worker import Processes
from webhooks.models import Event

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]  # real gunicorn or Celery processes

LATENCY_SECONDS = 0.3
CONFIRM_SECONDS = 1
# The reconciliation job leaves alone what a live worker may still be sending: a worker takes milliseconds between
# moving a payout to PROCESSING and recording the rail's answer (plus the simulated latency).
STUCK_AFTER = timedelta(seconds=2)
FUNDED = 1_000_000
FINAL = {PayoutStatus.COMPLETED, PayoutStatus.FAILED}
# Payouts a worker task starts together and sends one after another: a kill lands inside a batch, some of its payouts
# in the rail's hands and the others not yet sent, all PROCESSING here. With 8 threads, 16 of the 32 are PENDING.
BATCH = 2


class Workers(Processes):
    """tests/webhooks/test_worker.py's processes, each in a process group of its own, killed as a whole."""

    def _spawn(self, *args: str) -> subprocess.Popen:
        log = open(f"{self.workdir}/{args[0]}.log", "ab")  # closed when the test process ends
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", *args], env=self.environment,
                                cwd=settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def kill_worker(self) -> None:
        os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait(timeout=10)

    def stop(self) -> None:
        for process in (self.worker, self.beat):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture
def workers(transactional_db, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = CONFIRM_SECONDS  # reconciliation here asks the same simulator
    environment = {
        **os.environ,
        "DATABASE_URL": subprocess_database_url(),
        "CACHE_URL": os.environ.get("CACHE_URL", ""),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "SECRET_KEY": settings.SECRET_KEY,
        "SIMULATOR_LATENCY_SECONDS": str(LATENCY_SECONDS),
        "SIMULATOR_AUTO_CONFIRM_SECONDS": str(CONFIRM_SECONDS),
        "PAYOUT_BATCH_MAX": str(BATCH),
        "LOG_LEVEL": "WARNING",
        "CONN_MAX_AGE": "0",
    }
    broker = broker_redis()
    broker.flushdb()  # also the messages a killed worker left unacknowledged
    running = Workers(environment)
    try:
        yield running
    finally:
        running.stop()
        celery_app.control.purge()
        broker.flushdb()


def payout_create(merchant, n: int, *, failing: bool = False) -> Payout:
    body = {"amount": 1_000 + n, "referenceId": f"crash-{n}", "pixKeyType": "EMAIL" if failing else "EVP",
            "pixKey": f"payee{n}@fail.example.com" if failing else str(uuid.uuid4())}
    data = payout_request_validate(body, merchant=merchant)
    return payouts.payout_create(merchant=merchant, livemode=False, data=data)  # commits: its task is enqueued


def census(ids: list) -> Counter:
    return Counter(Payout.objects.filter(pk__in=ids).values_list("status", flat=True))


def with_status(ids: list, status: str) -> set:
    return set(Payout.objects.filter(pk__in=ids, status=status).values_list("pk", flat=True))


def sent_not_recorded(ids: list) -> set:
    """PROCESSING payouts the rail has recorded: the worker waits for the rail's answer."""
    processing = {str(pk) for pk in with_status(ids, PayoutStatus.PROCESSING)}
    return processing & set(SimulatorOperation.objects.filter(kind="payout").values_list("key", flat=True))


def wait_until(condition, *, timeout: float, why: str, logs) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting until {why}\n{logs()}")


def test_a_worker_killed_twice_mid_send_pays_every_payout_exactly_once(workers):
    merchant = MerchantFactory()
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=FUNDED, reason="test: fund the balance",
                               staff=UserFactory(is_staff=True))
    created = [payout_create(merchant, n, failing=n % 8 == 3) for n in range(32)]
    ids = [p.pk for p in created]
    assert census(ids) == {PayoutStatus.PENDING: 32}
    started_at = time.monotonic()

    def logs() -> str:
        return f"payouts by status: {dict(census(ids))}\n{workers.logs()}"

    # Kill 1: the first batch is in the rail's hands (recorded there), its answer not yet recorded here.
    workers.start_worker()
    wait_until(lambda: len(sent_not_recorded(ids)) >= 3, timeout=30, why="payouts are being sent", logs=logs)
    workers.kill_worker()
    first_kill = census(ids)
    stuck = with_status(ids, PayoutStatus.PROCESSING)
    sent_unrecorded = sent_not_recorded(ids)
    # Kill 2, later: a new worker has started the PENDING ones; some are in the send window, some await their
    # confirmation task.
    workers.start_worker()

    def second_batch_in_flight() -> bool:
        return (not with_status(ids, PayoutStatus.PENDING)
                and len(sent_not_recorded(ids) - {str(pk) for pk in stuck}) >= 2)

    wait_until(second_batch_in_flight, timeout=30, why="a second batch is being sent", logs=logs)
    workers.kill_worker()
    second_kill = census(ids)
    # Then a worker that lives, and the reconciliation job until every payout is final.
    workers.start_worker()
    rounds = 0
    while census(ids)[PayoutStatus.COMPLETED] + census(ids)[PayoutStatus.FAILED] < len(ids):
        assert time.monotonic() - started_at < 50, (census(ids), workers.logs())
        sending.payouts_reconcile(older_than=STUCK_AFTER)
        rounds += 1
        time.sleep(0.5)

    print(f"payout crash test: at kill 1 {dict(first_kill)} ({len(sent_unrecorded)} sent, answer unrecorded), "
          f"at kill 2 {dict(second_kill)}, "
          f"{rounds} reconciliation rounds, {time.monotonic() - started_at:.1f} s")
    assert first_kill[PayoutStatus.PROCESSING] >= 3 and first_kill[PayoutStatus.PENDING] >= 1
    assert sent_unrecorded  # the kill fell between the rail's send and the recording of its answer
    assert second_kill[PayoutStatus.PROCESSING] >= 1
    final = {p.pk: p for p in Payout.objects.filter(pk__in=ids)}
    assert {p.status for p in final.values()} <= FINAL
    failing = {p.pk for p in created if p.pix_key_type == "EMAIL"}
    assert {pk for pk, p in final.items() if p.status == PayoutStatus.FAILED} == failing
    assert {p.failure_code for p in final.values() if p.status == PayoutStatus.FAILED} == {"rejected_by_bank"}
    operations = {op.key: op for op in SimulatorOperation.objects.filter(kind="payout")}
    assert set(operations) == {str(pk) for pk in ids}  # one send recorded per payout, no other
    assert {key: op.calls for key, op in operations.items() if op.calls != 1} == {}  # the rail was asked once each
    assert all(operations[str(pk)].amount == p.amount for pk, p in final.items())
    events = Counter(Event.objects.filter(object_id__in=[str(pk) for pk in ids]).values_list("object_id", "type"))
    assert events == Counter((str(pk), f"payout.{s}") for pk, p in final.items()
                             for s in ("created", "processing", p.status.lower()))  # each transition once
    completed = Payout.objects.filter(pk__in=ids, status=PayoutStatus.COMPLETED).aggregate(t=Sum("amount"))["t"]
    assert ledger_selectors.balance_get(merchant=merchant, livemode=False).available == FUNDED - completed
    assert LedgerCheck().inspect()[0] == []
