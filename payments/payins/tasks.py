"""Pay-in jobs (SPEC §8). Each is idempotent and safe on several workers at once: every change is a conditional
transition on a locked row, so two workers racing over one charge move it once."""

import logging

from celery import shared_task

from payments.payins import cards as card_charges
from payments.payins import refunds
from payments.payins import services as payins

logger = logging.getLogger(__name__)


@shared_task
def payins_expire() -> int:
    return payins.payins_expire()


@shared_task
def card_settlements_release() -> int:
    return card_charges.card_settlements_release()


@shared_task
def refund_reconcile(*, refund_id: str) -> int:
    """Ask the rail about one refund at the moment it is expected to be settled (the periodic job is the net)."""
    return refunds.refunds_reconcile(refund_ids=[refund_id])
