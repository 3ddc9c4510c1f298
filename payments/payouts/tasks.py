"""Payout jobs (SPEC §8): thin wrappers queuing the payout services; every change they make is a conditional
transition on a locked row, so a task run twice moves a payout once."""

import logging
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready

from payments.payouts import sending as payouts

logger = logging.getLogger(__name__)


@shared_task
def payouts_process(*, payout_ids: list[str]) -> None:
    payouts.payouts_process(payout_ids=payout_ids)


@shared_task
def payout_process(*, payout_id: str) -> None:
    """One payout: what `payouts_dispatch` queued before it queued batches (messages still in a broker)."""
    payouts.payout_process(payout_id=payout_id)


@shared_task
def payouts_dispatch(*, after: list | None = None) -> int:
    """One message per burst of new payouts (payments.payouts.dispatch.dispatch_soon): a task per batch of PENDING
    payouts. `after`: where the dispatch before it stopped, in a backlog longer than one dispatch."""
    return payouts.payouts_dispatch(after=after)


@worker_ready.connect
def payouts_resume(**kwargs) -> None:
    """A worker that starts sends the PENDING payouts on at once. The messages a SIGKILLed worker held (its reserved
    `payout_process` tasks, or a `payouts_dispatch` cut off halfway through its fan-out) died with it (the Redis
    broker keeps no copy of a message a worker took: docs/decisions/0045-tasks-are-nudges.md); without this their
    payouts would wait for the reconciliation job.
    A payout whose task is still queued gets a second one, which finds it no longer PENDING and does nothing."""
    try:
        payouts_dispatch.delay()
    except Exception:  # the reconciliation job is the net
        logger.warning("payments.payouts_resume_failed")


@shared_task
def payout_reconcile(*, payout_ids: list[str] | None = None, payout_id: str | None = None) -> int:
    """Ask the rail about payouts sent together when they should have settled (the periodic job is the safety net).
    `payout_id`: one payout, as messages queued before batches name it."""
    return payouts.payouts_reconcile(older_than=timedelta(0), payout_ids=payout_ids or [payout_id])


@shared_task
def payouts_reconcile() -> int:
    return payouts.payouts_reconcile()
