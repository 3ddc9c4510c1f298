"""The worker's side of payouts (SPEC §4.3): PENDING payouts started and sent in batches, the rail's answers
recorded, and reconciliation of the ones left unfinished. Every state change is a service of
payments.payouts.services (a conditional transition on locked rows); what is here decides when each runs, and no
rail call happens inside a database transaction. Why batches: payments/payouts/worker.py.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from config import cache as shared_cache
from config.celery import task_enqueue
from payments import rails
from payments.models import Payout, PayoutStatus
from payments.payouts.services import (
    DISPATCH_BATCH,
    DISPATCH_FLAG,
    payout_resolve,
    payouts_complete,
    payouts_start,
)
from payments.payouts.worker import dispatch_list, dispatch_sent, payouts_unfinished
from payments.rails.base import OperationStatus, RailError

logger = logging.getLogger(__name__)


def payouts_dispatch() -> int:
    """The worker's side: the PENDING payouts, oldest first, in `payouts_process` tasks of up to the rail's
    `payout_batch` payouts each (one task's state changes are written once for all of its payouts). One whose task
    is already queued gets none from the process that queued it (payouts.worker.dispatch_list), and at most one more
    from another worker; the second finds it no longer PENDING and does nothing."""
    shared_cache.flag_clear(DISPATCH_FLAG)
    pending = dispatch_list(DISPATCH_BATCH)
    for livemode in (False, True):
        ids = [str(payout_id) for payout_id, mode in pending if mode == livemode]
        size = max(1, min(rails.for_mode(livemode).payout_batch, settings.PAYOUT_BATCH_MAX))
        for start in range(0, len(ids), size):
            batch = ids[start:start + size]
            task_enqueue("payments.payouts.tasks.payouts_process", payout_ids=batch)
            dispatch_sent(batch)
    return len(pending)



def payout_process(*, payout_id) -> None:
    """Start a PENDING payout and send it. Runs in a Celery task, outside any transaction."""
    payouts_process(payout_ids=[payout_id])


def payouts_process(*, payout_ids: list) -> None:
    """Start the PENDING payouts among these (one transaction for all), send each (one rail call each, its id the
    idempotency key), and record the answers. Runs in a Celery task, outside any transaction."""
    sent = [(payout, answer) for payout in payouts_start(payout_ids=payout_ids)
            if (answer := _send(payout)) is not None]
    _record(sent)


def _send(payout: Payout) -> OperationStatus | None:
    """The rail's answer to the payout, or None when it is unknown."""
    try:
        return rails.for_mode(payout.livemode).payout_send(
            key=str(payout.id), livemode=payout.livemode, amount=payout.amount, pix_key=payout.pix_key_normalized,
            pix_key_type=payout.pix_key_type, end_to_end_id=payout.external_id,
            beneficiary_document=payout.beneficiary_document)
    except RailError:  # it may or may not have arrived: the reconciliation job asks the rail, never resends blind
        logger.warning("payments.payout_rail_error", extra={"payout_id": str(payout.id)})
        return None


def _record(answers: list[tuple[Payout, OperationStatus]]) -> None:
    """Record the rail's answers: the confirmed payouts completed together (payouts_complete), a refusal or a
    return one by one, and the payouts still on their way asked about again, in one task, when they should have
    settled."""
    completed, pending = [], []
    for payout, answer in answers:
        if answer.end_to_end_id and answer.end_to_end_id != payout.external_id:
            # A real rail names the Pix itself: `externalId` becomes the end-to-end id the receiving bank knows.
            Payout.objects.filter(pk=payout.pk).update(external_id=answer.end_to_end_id)
        if answer.status == "SUCCEEDED":
            completed.append(payout)
        elif answer.status in ("FAILED", "RETURNED"):
            payout_resolve(payout_id=payout.pk, answer=answer)
        elif answer.status == "PENDING":
            pending.append(str(payout.pk))
    payouts_complete(completed)
    if pending:
        try:  # ask again when the rail should have settled them; the periodic job is the safety net
            task_enqueue("payments.payouts.tasks.payout_reconcile", payout_ids=pending,
                         countdown=max(1, settings.SIMULATOR_AUTO_CONFIRM_SECONDS))
        except Exception:
            logger.warning("payments.payout_enqueue_failed", extra={"payout_ids": pending})


def payouts_reconcile(*, older_than: timedelta = timedelta(seconds=15), payout_ids: list | None = None) -> int:
    """Settle unfinished payouts: PROCESSING ones by asking the rail (sending only what it never received, under
    the same key), PENDING ones whose task was lost by starting them."""
    # Whole rows: what a send needs, with no second read per payout.
    unfinished = payouts_unfinished(before=timezone.now() - older_than, payout_ids=payout_ids)
    pending = [payout.pk for payout in unfinished if payout.status == PayoutStatus.PENDING]
    if pending:
        payouts_process(payout_ids=pending)
    handled, answers = len(pending), []
    for payout in unfinished:
        if payout.status == PayoutStatus.PENDING:
            continue
        try:
            answer = rails.for_mode(payout.livemode).payout_status(key=str(payout.pk))
        except RailError:
            logger.warning("payments.payout_reconcile_rail_error", extra={"payout_id": str(payout.pk)})
            continue
        handled += 1
        if answer.status == "NOT_FOUND":
            answer = _send(payout)  # never reached the rail: send it now, under the same idempotency key
        if answer is not None:
            answers.append((payout, answer))
    _record(answers)
    return handled
