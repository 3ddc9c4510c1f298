"""Money and webhook deliveries travel on queues of their own (issue 17, goal 3): a storm of deliveries never stands in
front of a payout. A worker started without -Q consumes both queues."""

from __future__ import annotations

from celery.utils.saferepr import saferepr

from config.celery import app


def queue_of(task_name: str) -> str:
    route = app.amqp.router.route({}, task_name, args=(), kwargs={})
    return route["queue"].name


def test_webhook_tasks_have_their_queue_and_money_tasks_the_default_one():
    assert {name: queue_of(name) for name in (
        "webhooks.tasks.delivery_attempt", "webhooks.tasks.deliveries_sweep", "payments.payouts.tasks.payouts_process",
        "payments.payins.tasks.refund_reconcile", "payments.unmatched.tasks.unmatched_refund_send",
        "payments.inbound.tasks.rail_reconcile")} == {
        "webhooks.tasks.delivery_attempt": "webhooks", "webhooks.tasks.deliveries_sweep": "webhooks",
        "payments.payouts.tasks.payouts_process": "celery", "payments.payins.tasks.refund_reconcile": "celery",
        "payments.unmatched.tasks.unmatched_refund_send": "celery", "payments.inbound.tasks.rail_reconcile": "celery"}


def test_a_worker_without_q_consumes_both_queues():
    assert sorted(queue.name for queue in app.conf.task_queues) == ["celery", "webhooks"]


def test_a_ready_worker_freezes_what_starting_it_made():
    """Its objects leave the garbage collector's view (config.celery._gc_freeze), as a web worker's do."""
    import gc

    from config.celery import _gc_freeze

    before = gc.get_freeze_count()
    try:
        _gc_freeze()
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()


class _Stop(Exception):
    pass


def _published_headers(name: str, **kwargs) -> dict:
    """The headers task_enqueue gives the message, caught before it leaves (nothing reaches the broker)."""
    from celery.signals import before_task_publish

    from core.tasks import task_enqueue

    seen = {}

    def catch(headers=None, **_):
        seen.update(headers)
        raise _Stop

    before_task_publish.connect(catch, weak=False)
    try:
        task_enqueue(name, **kwargs)
    except _Stop:
        pass
    finally:
        before_task_publish.disconnect(catch)
    return seen


def test_a_tasks_arguments_are_shown_in_its_message_and_its_countdown_applies():
    ids = [f"0194f3c2-7b1a-7c3e-9d2f-{n:012d}" for n in range(3)]

    headers = _published_headers("payments.payouts.tasks.payout_reconcile", payout_ids=ids, countdown=5)

    assert (headers["argsrepr"], headers["kwargsrepr"]) == ("()", saferepr({"payout_ids": ids}))
    assert headers["eta"] is not None
    assert _published_headers("payments.payouts.tasks.payouts_dispatch")["eta"] is None
