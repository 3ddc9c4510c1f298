"""Pay-in jobs (SPEC §8). Each is idempotent and safe on several workers at once: every change is a conditional
transition on a locked row, so two workers racing over one charge move it once."""

import logging
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready

from payments import payouts, services

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def payins_expire() -> int:
    return services.payins_expire()


@shared_task(acks_late=True, ignore_result=True)
def card_settlements_release() -> int:
    return services.card_settlements_release()


@shared_task(acks_late=True, ignore_result=True)
def rail_reconcile() -> int:
    return services.card_charges_reconcile() + services.refunds_reconcile()


@shared_task(acks_late=True, ignore_result=True)
def refund_reconcile(*, refund_id: str) -> int:
    """Ask the rail about one refund at the moment it is expected to be settled (the periodic job is the net)."""
    return services.refunds_reconcile(refund_ids=[refund_id])


@shared_task(acks_late=True, ignore_result=True)
def payout_process(*, payout_id: str) -> None:
    payouts.payout_process(payout_id=payout_id)


@shared_task(acks_late=True, ignore_result=True)
def payouts_dispatch() -> int:
    """One message per burst of new payouts (see payments.payouts._dispatch_soon): a task per PENDING payout."""
    return payouts.payouts_dispatch()


@worker_ready.connect
def payouts_resume(**kwargs) -> None:
    """A worker that starts sends the PENDING payouts on at once. The messages a SIGKILLed worker held (its reserved
    `payout_process` tasks, or a `payouts_dispatch` cut off halfway through its fan-out) stay unacknowledged in the
    broker until its visibility timeout, an hour on Redis; without this they would wait for the reconciliation job.
    A payout whose task is still queued gets a second one, which finds it no longer PENDING and does nothing."""
    try:
        payouts_dispatch.delay()
    except Exception:  # the reconciliation job is the net
        logger.warning("payments.payouts_resume_failed")


@shared_task(acks_late=True, ignore_result=True)
def payout_reconcile(*, payout_id: str) -> int:
    """Ask the rail about one payout when it should have settled (the periodic job is the safety net)."""
    return payouts.payouts_reconcile(older_than=timedelta(0), payout_ids=[payout_id])


@shared_task(acks_late=True, ignore_result=True)
def payouts_reconcile() -> int:
    return payouts.payouts_reconcile()
