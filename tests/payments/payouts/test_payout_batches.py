"""Payouts started, sent and completed in batches (issue 17, goal 2; payments/payouts/worker.py): a batch does for
each payout exactly what a batch of one does, its statements do not grow with its size, and two workers given
overlapping batches at once start, send and complete each payout once."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from payments import rails
from payments.inbound.services import RECONCILE_AFTER as INBOUND_RECONCILE_AFTER
from payments.ledger import services as ledger
from payments.management.commands.ledger_check import Command as LedgerCheck
from payments.models import AccountKind, LedgerEntry, LineType, Payout, PayoutStatus, SimulatorOperation
from payments.payouts import sending, worker
from payments.payouts import services as payouts
from payments.payouts import tasks as payout_tasks
from payments.payouts.validation import payout_request_validate
from payments.rails.base import RailTimeout
from payments.rails.simulator import SimulatorRail
from tests.conftest import run_in_threads
from tests.factories import MerchantFactory, UserFactory
from tests.payments.payouts.test_payout_api import ledger_balances
from webhooks.models import Event


@pytest.fixture(autouse=True)
def at_once(settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0  # the simulator confirms each payout as it is sent
    settings.SIMULATOR_LATENCY_SECONDS = 0


def funded_merchant(amount: int = 1_000_000):
    merchant = MerchantFactory()
    ledger.adjustment_create(merchant=merchant, livemode=False, amount=amount, reason="fund",
                             staff=UserFactory(is_staff=True))
    return merchant


def payout_create(merchant, n: int, *, amount: int = 1_000, failing: bool = False) -> Payout:
    body = {"amount": amount + n, "referenceId": f"batch-{merchant.pk}-{n}",
            "pixKeyType": "EMAIL" if failing else "EVP",
            "pixKey": f"payee{n}@fail.example.com" if failing else str(uuid.uuid4())}
    return payouts.payout_create(merchant=merchant, livemode=False,
                                 data=payout_request_validate(body, merchant=merchant))


def events_by_payout(ids) -> Counter:
    return Counter(Event.objects.filter(object_id__in=[str(pk) for pk in ids]).values_list("object_id", "type"))


def lifecycle(payouts_: dict) -> Counter:
    return Counter((str(pk), f"payout.{status}") for pk, final in payouts_.items()
                   for status in ("created", "processing", final))


@pytest.mark.django_db
def test_a_batch_of_two_merchants_payouts_ends_each_as_a_batch_of_one_would(django_capture_on_commit_callbacks):
    first, second = funded_merchant(), funded_merchant()
    mine = [payout_create(first, n) for n in range(3)] + [payout_create(first, 3, failing=True)]
    theirs = [payout_create(second, n, amount=2_000) for n in range(2)]
    canceled = payout_create(first, 9)
    payouts.payout_cancel(merchant=first, livemode=False, payout_id=canceled.pk)
    batch = [p.pk for p in mine + theirs] + [canceled.pk, uuid.uuid4()]  # one not PENDING, one that does not exist

    sending.payouts_process(payout_ids=batch)

    status = dict(Payout.objects.filter(pk__in=batch).values_list("pk", "status"))
    assert status == {**{p.pk: PayoutStatus.COMPLETED for p in mine[:3] + theirs},
                      mine[3].pk: PayoutStatus.FAILED, canceled.pk: PayoutStatus.CANCELED}
    assert events_by_payout(batch) == lifecycle(
        {**{p.pk: "completed" for p in mine[:3] + theirs}, mine[3].pk: "failed"}) + Counter(
        {(str(canceled.pk), "payout.created"): 1, (str(canceled.pk), "payout.canceled"): 1})
    for merchant, completed in ((first, mine[:3]), (second, theirs)):
        balances = ledger_balances(merchant)
        assert (balances[AccountKind.AVAILABLE], balances[AccountKind.PAYOUTS_IN_FLIGHT],
                balances[AccountKind.RAIL_OUT]) == (1_000_000 - sum(p.amount + p.fee for p in completed), 0,
                                                    sum(p.amount for p in completed))
    completions = LedgerEntry.objects.filter(transaction__description="Payout completed",
                                             account__kind=AccountKind.RAIL_OUT, line_type=LineType.PAYOUT)
    assert sorted(completions.values_list("transaction__object_id", "amount")) == sorted(
        (str(p.pk), p.amount) for p in mine[:3] + theirs)  # one movement per payout, in the merchant's own books
    assert {op.key: op.calls for op in SimulatorOperation.objects.filter(kind="payout")} == {
        str(p.pk): 1 for p in mine + theirs}
    assert LedgerCheck().inspect()[0] == []


@pytest.mark.django_db
def test_a_batchs_statements_do_not_grow_with_its_size():
    """What the worker writes for a batch of 1 and of 12 payouts of one merchant: the same statements, the
    simulator's own books (two a batch: the sends and their confirmation) aside."""
    merchant = funded_merchant()

    def statements(size: int) -> list[str]:
        ids = [payout_create(merchant, size * 100 + n).pk for n in range(size)]
        with CaptureQueriesContext(connection) as captured:
            sending.payouts_process(payout_ids=ids)
        assert set(Payout.objects.filter(pk__in=ids).values_list("status", flat=True)) == {PayoutStatus.COMPLETED}
        ours = [q["sql"] for q in captured.captured_queries if "simulator" not in q["sql"]]
        return [sql.split(" ", 1)[0] for sql in ours if "SAVEPOINT" not in sql]

    one = statements(1)
    assert statements(12) == one
    # start: the payouts locked and moved, their merchant's endpoints, the events; complete: the same, then the ledger
    # lock, the movements, their entries, the balances
    assert one == ["SELECT", "UPDATE", "SELECT", "INSERT", "SELECT", "UPDATE", "SELECT", "INSERT",
                   "SELECT", "INSERT", "INSERT", "UPDATE"]


@pytest.mark.django_db(transaction=True)
def test_two_workers_given_overlapping_batches_move_and_send_each_payout_once():
    merchants = [funded_merchant(), funded_merchant()]
    created = [payout_create(merchants[n % 2], n) for n in range(24)]
    ids = [p.pk for p in created]
    # Four workers at once, two by two on the same payouts, in opposite orders: the rows are locked in id order.
    batches = [ids[:16], list(reversed(ids[:16])), ids[8:], list(reversed(ids[8:]))]

    results = run_in_threads(4, lambda i: sending.payouts_process(payout_ids=batches[i]))

    assert results == [None] * 4
    assert Counter(Payout.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
        PayoutStatus.COMPLETED: 24}
    assert events_by_payout(ids) == lifecycle({pk: "completed" for pk in ids})  # each transition once
    assert {op.key: op.calls for op in SimulatorOperation.objects.filter(kind="payout")} == {
        str(pk): 1 for pk in ids}  # the rail was asked to pay each once
    for merchant in merchants:
        mine = [p for p in created if p.merchant_id == merchant.pk]
        assert ledger_balances(merchant)[AccountKind.RAIL_OUT] == sum(p.amount for p in mine)
        assert ledger_balances(merchant)[AccountKind.PAYOUTS_IN_FLIGHT] == 0
    assert LedgerCheck().inspect()[0] == []


@pytest.mark.django_db
def test_post_many_refuses_an_unbalanced_movement_among_several_before_writing_any():
    merchant = funded_merchant(10_000)
    before = LedgerEntry.objects.count()
    balanced = ledger.Movement(legs=[ledger.Leg(AccountKind.AVAILABLE, -100, LineType.ADJUSTMENT),
                                     ledger.Leg(AccountKind.ADJUSTMENTS, 100, LineType.ADJUSTMENT)],
                               object_type="adjustment", object_id="a")
    unbalanced = ledger.Movement(legs=[ledger.Leg(AccountKind.AVAILABLE, -100, LineType.ADJUSTMENT)],
                                 object_type="adjustment", object_id="b")
    with pytest.raises(ledger.UnbalancedTransaction), transaction.atomic():
        ledger.post_many(merchant=merchant, livemode=False, movements=[balanced, unbalanced])
    assert LedgerEntry.objects.count() == before

    with transaction.atomic():
        written = ledger.post_many(merchant=merchant, livemode=False, movements=[balanced, balanced])
    assert [movement.object_id for movement in written] == ["a", "a"]
    assert list(LedgerEntry.objects.filter(account__kind=AccountKind.AVAILABLE, transaction__in=written)
                .order_by("pk").values_list("amount", "balance_after")) == [(-100, 9_900), (-100, 9_800)]
    assert ledger_balances(merchant)[AccountKind.AVAILABLE] == 9_800
    assert LedgerCheck().inspect()[0] == []


def test_a_batch_never_sends_when_the_reconciliation_job_could_send_too(settings):
    """A send started within the window has ended (answer or timeout) before the job takes its payout for stuck."""
    assert sending.SEND_WINDOW_SECONDS + settings.EFI_TIMEOUT_SECONDS < sending.RECONCILE_AFTER.total_seconds()
    assert INBOUND_RECONCILE_AFTER >= sending.RECONCILE_AFTER


@pytest.fixture(params=["together", "one call each"])
def rail_calls(request, monkeypatch) -> str:
    """The simulator taking a batch's payouts in one call (its own way), or one call each (a rail such as Efí's)."""
    if request.param == "one call each":
        monkeypatch.setattr(rails.for_mode(False), "payouts_together", False)
    return request.param


@pytest.mark.django_db
def test_the_payouts_a_batch_could_not_send_in_its_window_are_sent_once_by_the_job(monkeypatch, rail_calls):
    merchant = funded_merchant()
    ids = [payout_create(merchant, n).pk for n in range(3)]
    monkeypatch.setattr(sending, "SEND_WINDOW_SECONDS", -1.0)  # a rail so slow the window closed before the first

    sending.payouts_process(payout_ids=ids)

    assert set(Payout.objects.filter(pk__in=ids).values_list("status", flat=True)) == {PayoutStatus.PROCESSING}
    assert not SimulatorOperation.objects.filter(key__in=[str(pk) for pk in ids]).exists()  # never sent
    monkeypatch.setattr(sending, "SEND_WINDOW_SECONDS", 4.0)
    assert sending.payouts_reconcile(older_than=timedelta(0)) == 3  # the rail never got them: sent now

    assert set(Payout.objects.filter(pk__in=ids).values_list("status", flat=True)) == {PayoutStatus.COMPLETED}
    assert {op.key: op.calls for op in SimulatorOperation.objects.filter(kind="payout")} == {
        str(pk): 1 for pk in ids}


@pytest.mark.django_db
def test_one_payout_that_breaks_leaves_the_rest_of_its_batch_sent_and_recorded(monkeypatch):
    """On a rail that takes one payout per call (Efí): the others of the batch are sent and recorded."""
    monkeypatch.setattr(rails.for_mode(False), "payouts_together", False)
    merchant = funded_merchant()
    ids = [payout_create(merchant, n).pk for n in range(4)]
    broken = str(ids[1])
    send = SimulatorRail.payout_send

    def breaks_on_one(self, **call):
        if call["key"] == broken:
            raise ValueError("a bug in one payout's path")
        return send(self, **call)

    monkeypatch.setattr(SimulatorRail, "payout_send", breaks_on_one)
    sending.payouts_process(payout_ids=ids)

    status = dict(Payout.objects.filter(pk__in=ids).values_list("pk", "status"))
    assert status == {**{pk: PayoutStatus.COMPLETED for pk in ids}, ids[1]: PayoutStatus.PROCESSING}
    monkeypatch.setattr(SimulatorRail, "payout_send", send)
    assert sending.payouts_reconcile(older_than=timedelta(0)) == 1  # the job asks the rail, which never got it
    assert Payout.objects.get(pk=ids[1]).status == PayoutStatus.COMPLETED
    assert LedgerCheck().inspect()[0] == []


@pytest.mark.django_db
def test_a_batch_sent_together_whose_answer_is_lost_is_settled_by_the_job_and_never_sent_twice(monkeypatch):
    """On a rail that takes a batch in one call (the simulator): the call reached the rail and then failed, so none
    of the answers is known; every payout stays PROCESSING, and the job asks the rail about each instead of sending
    again."""
    merchant = funded_merchant()
    ids = [payout_create(merchant, n).pk for n in range(3)] + [payout_create(merchant, 3, failing=True).pk]
    send = SimulatorRail.payouts_send

    def arrives_then_times_out(self, **call):
        send(self, **call)
        raise RailTimeout("no answer in time")

    monkeypatch.setattr(SimulatorRail, "payouts_send", arrives_then_times_out)
    sending.payouts_process(payout_ids=ids)
    assert set(Payout.objects.filter(pk__in=ids).values_list("status", flat=True)) == {PayoutStatus.PROCESSING}

    with CaptureQueriesContext(connection) as asked:
        assert sending.payouts_reconcile(older_than=timedelta(0)) == 4
    books = [query["sql"] for query in asked.captured_queries if SimulatorOperation._meta.db_table in query["sql"]]
    # The four at once: the confirmation of those due (none: the lost call's send confirmed its three), then one
    # read of the rest.
    assert [sql.split()[0] for sql in books] == ["UPDATE", "SELECT"]

    status = dict(Payout.objects.filter(pk__in=ids).values_list("pk", "status"))
    assert status == {**{pk: PayoutStatus.COMPLETED for pk in ids[:3]}, ids[3]: PayoutStatus.FAILED}
    assert {op.key: op.calls for op in SimulatorOperation.objects.filter(kind="payout")} == {
        str(pk): 1 for pk in ids}
    assert LedgerCheck().inspect()[0] == []


@pytest.mark.django_db
def test_a_batch_is_sent_together_in_one_statement_of_the_simulators_books():
    merchant = funded_merchant()
    ids = [payout_create(merchant, n).pk for n in range(5)]
    with CaptureQueriesContext(connection) as sent:
        sending.payouts_process(payout_ids=ids)
    books = [query["sql"] for query in sent.captured_queries if SimulatorOperation._meta.db_table in query["sql"]]
    assert len(books) == 2  # the sends, then the confirmation of the five (due at once here)
    assert set(Payout.objects.filter(pk__in=ids).values_list("status", flat=True)) == {PayoutStatus.COMPLETED}


@pytest.mark.django_db
def test_of_two_reconciliation_runs_that_read_an_unsent_payout_one_sends_it(monkeypatch, rail_calls):
    merchant = funded_merchant()
    payout_id = payout_create(merchant, 0).pk
    monkeypatch.setattr(sending, "SEND_WINDOW_SECONDS", -1.0)
    sending.payouts_process(payout_ids=[payout_id])  # PROCESSING, never sent
    monkeypatch.setattr(sending, "SEND_WINDOW_SECONDS", 4.0)
    read_by_both = Payout.objects.get(pk=payout_id)
    other_run = Payout.objects.get(pk=payout_id)

    assert worker.payout_resend_claim(read_by_both) is True
    assert worker.payout_resend_claim(other_run) is False  # it read the same row: the first run has it
    assert sending.payouts_reconcile(older_than=timedelta(0)) == 1  # a later run reads the new stamp: it sends
    assert Payout.objects.get(pk=payout_id).status == PayoutStatus.COMPLETED
    assert SimulatorOperation.objects.get(key=str(payout_id)).calls == 1


@pytest.fixture
def tasks(monkeypatch) -> list:
    """The `payouts_process` tasks the dispatch queues (not sent to a broker), with an empty dispatch memory."""
    queued: list = []
    monkeypatch.setattr(worker, "_sent", {})
    monkeypatch.setattr(payout_tasks.payouts_process, "delay", lambda **kwargs: queued.append(kwargs["payout_ids"]))
    return queued


@pytest.mark.django_db
def test_the_dispatch_queues_pending_payouts_oldest_first_in_batches_of_a_mode(tasks, settings):
    settings.PAYOUT_BATCH_MAX = 2
    merchant = funded_merchant()
    ledger.adjustment_create(merchant=merchant, livemode=True, amount=100_000, reason="fund",
                             staff=UserFactory(is_staff=True))
    test_mode = [str(payout_create(merchant, n).pk) for n in range(5)]
    body = {"amount": 1_000, "referenceId": "live-1", "pixKeyType": "EVP", "pixKey": str(uuid.uuid4())}
    live = str(payouts.payout_create(merchant=merchant, livemode=True,
                                     data=payout_request_validate(body, merchant=merchant)).pk)

    assert sending.payouts_dispatch() == 6
    assert tasks == [test_mode[0:2], test_mode[2:4], test_mode[4:], [live]]  # a task never mixes the modes


@pytest.mark.django_db
def test_a_dispatch_skips_the_payouts_this_process_queued_lately_until_its_memory_expires(tasks, monkeypatch):
    merchant = funded_merchant()
    first = [str(payout_create(merchant, n).pk) for n in range(2)]
    assert sending.payouts_dispatch() == 2
    later = str(payout_create(merchant, 2).pk)

    assert sending.payouts_dispatch() == 1  # the first two are still PENDING behind their queued task
    assert tasks == [first, [later]]

    monkeypatch.setattr(worker, "DISPATCH_MEMORY_SECONDS", -1.0)  # their task is taken for lost
    assert sending.payouts_dispatch() == 3
    assert tasks[2:] == [[*first, later]]


@pytest.mark.django_db
def test_a_backlog_longer_than_one_dispatch_goes_on_in_the_next_until_none_is_left(tasks, monkeypatch):
    """A worker back from an outage finds more PENDING payouts than one dispatch lists: each dispatch queues the next
    one from where it stopped (in any process: the position travels in the message), and every payout gets one
    task."""
    monkeypatch.setattr(sending, "DISPATCH_BATCH", 3)
    merchant = funded_merchant()
    backlog = [str(payout_create(merchant, n).pk) for n in range(7)]
    chained: list = []
    monkeypatch.setattr(payout_tasks.payouts_dispatch, "delay", lambda **kwargs: chained.append(kwargs))

    assert sending.payouts_dispatch() == 3
    monkeypatch.setattr(worker, "_sent", {})  # the next one runs in another process: no memory of these
    assert sending.payouts_dispatch(**chained[-1]) == 3
    assert sending.payouts_dispatch(**chained[-1]) == 1
    assert len(chained) == 2  # the third found the end: no fourth

    assert [payout_id for task in tasks for payout_id in task] == backlog


@pytest.mark.django_db
def test_a_dispatch_set_off_while_a_chain_drains_the_backlog_starts_no_second_chain(tasks, monkeypatch):
    monkeypatch.setattr(sending, "DISPATCH_BATCH", 2)
    merchant = funded_merchant()
    backlog = [str(payout_create(merchant, n).pk) for n in range(5)]
    chained: list = []
    monkeypatch.setattr(payout_tasks.payouts_dispatch, "delay", lambda **kwargs: chained.append(kwargs))

    assert sending.payouts_dispatch() == 2  # the chain starts
    monkeypatch.setattr(worker, "_sent", {})  # a new payout's dispatch, in a process that queued none of them
    assert sending.payouts_dispatch() == 2
    assert len(chained) == 1  # the chain's own next step only
    while len(chained) < 3 and sending.payouts_dispatch(**chained[-1]) == 2:
        pass
    assert len(chained) == 2  # the chain went on once more and ended at the backlog's end

    monkeypatch.setattr(worker, "_sent", {})
    assert sending.payouts_dispatch() == 2 and len(chained) == 3  # ended: a later backlog may chain again
    assert {payout_id for task in tasks for payout_id in task} == set(backlog)


@pytest.mark.django_db
def test_the_unfinished_payouts_of_a_task_are_those_the_orm_finds():
    """The statement written once per count of ids (a confirmation task's payouts) finds what the ORM's query finds:
    PENDING and PROCESSING payouts of those ids last changed before the time, whole rows."""
    merchant = funded_merchant()
    pending, processing, completed, recent = (payout_create(merchant, n) for n in range(4))
    sending.payouts_process(payout_ids=[completed.pk])
    payouts.payouts_start(payout_ids=[processing.pk])
    before = timezone.now()
    Payout.objects.filter(pk=recent.pk).update(updated_at=before + timedelta(seconds=1))
    ids = [str(payout.pk) for payout in (pending, processing, completed, recent)] + [str(uuid.uuid4())]

    found = worker.payouts_unfinished(before=before, payout_ids=ids)
    by_orm = Payout.objects.filter(pk__in=ids, status__in=[PayoutStatus.PENDING, PayoutStatus.PROCESSING],
                                   updated_at__lte=before)
    assert sorted((p.pk, p.status, p.amount, p.updated_at) for p in found) == sorted(
        (p.pk, p.status, p.amount, p.updated_at) for p in by_orm) == sorted(
        [(pending.pk, PayoutStatus.PENDING, pending.amount, pending.updated_at),
         (processing.pk, PayoutStatus.PROCESSING, processing.amount,
          Payout.objects.get(pk=processing.pk).updated_at)])
    assert worker.payouts_unfinished(before=before, payout_ids=[]) == []


@pytest.mark.django_db
def test_moved_payouts_carry_their_merchant_without_a_query(django_assert_num_queries):
    """`worker.payouts_moved`: each payout's merchant is there without a query of its own, one instance per merchant,
    and it is the merchant; its enabled endpoints are read once per merchant and mode."""
    first, second = funded_merchant(), funded_merchant()
    created = [payout_create(first, 0), payout_create(first, 1), payout_create(second, 2)]
    with transaction.atomic():
        with django_assert_num_queries(4):  # the lock, the UPDATE, each merchant's endpoints
            moved = worker.payouts_moved([p.pk for p in created], to=PayoutStatus.PROCESSING,
                                         sources=(PayoutStatus.PENDING,))
            by_id = {payout.pk: payout for payout in moved}
            merchants = [by_id[p.pk].merchant for p in created]
        assert merchants[0] is merchants[1] and merchants[2] is not merchants[0]
        assert [m.pk for m in merchants] == [first.pk, first.pk, second.pk]
        assert merchants[2].name == second.name
        assert {payout.status for payout in moved} == {PayoutStatus.PROCESSING}
