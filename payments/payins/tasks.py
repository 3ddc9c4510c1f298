"""Pay-in jobs (SPEC §8). Each is idempotent and safe on several workers at once: every change is a conditional
transition on a locked row, so two workers racing over one charge move it once."""

import logging
from datetime import timedelta

from celery import shared_task

from payments.payins import cards as card_charges
from payments.payins import refunds
from payments.payins import services as payins

logger = logging.getLogger(__name__)

RECONCILE_AFTER = timedelta(seconds=30)


@shared_task(acks_late=True, ignore_result=True)
def payins_expire() -> int:
    return payins.payins_expire()


@shared_task(acks_late=True, ignore_result=True)
def card_settlements_release() -> int:
    return card_charges.card_settlements_release()


@shared_task(acks_late=True, ignore_result=True)
def rail_reconcile() -> int:
    # Older than 30 s: a charge or refund is committed before its rail call, and one younger may still be on its
    # way to the rail, which would answer "never received".
    return (card_charges.card_charges_reconcile(older_than=RECONCILE_AFTER)
            + refunds.refunds_reconcile(older_than=RECONCILE_AFTER))


@shared_task(acks_late=True, ignore_result=True)
def refund_reconcile(*, refund_id: str) -> int:
    """Ask the rail about one refund at the moment it is expected to be settled (the periodic job is the net)."""
    return refunds.refunds_reconcile(refund_ids=[refund_id])
