"""The worker's side of payouts (SPEC §4.3): PENDING payouts started and sent in batches, the rail's answers
recorded, and reconciliation of the ones left unfinished. Every state change is a service of
payments.payouts.services (a conditional transition on locked rows); what is here decides when each runs, and no
rail call happens inside a database transaction. Why batches: payments/payouts/worker.py.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from core import cache as shared_cache
from core.tasks import task_enqueue
from payments import rails
from payments.models import Payout, PayoutStatus
from payments.payouts.dispatch import DISPATCH_BATCH, DISPATCH_FLAG
from payments.payouts.services import payout_resolve, payouts_complete, payouts_start
from payments.payouts.worker import dispatch_list, dispatch_sent, payout_resend_claim, payouts_unfinished
from payments.rails.base import OperationStatus, RailError

logger = logging.getLogger(__name__)


def payouts_dispatch(*, after: list | None = None) -> int:
    """The worker's side: the PENDING payouts, oldest first, in `payouts_process` tasks of up to the rail's
    `payout_batch` payouts each (one task's state changes are written once for all of its payouts). One whose task
    is already queued gets none from the process that queued it (payouts.worker.dispatch_list), and at most one more
    from another worker; the second finds it no longer PENDING and does nothing. A backlog longer than
    DISPATCH_BATCH (a worker that was down) goes on in another dispatch, queued after these tasks, from the last
    payout listed (`after`: its creation time and id), until no PENDING payout is left. One such chain at a time
    (CHAIN_FLAG): a dispatch set off by a new payout while a chain drains the backlog lists its first DISPATCH_BATCH
    and leaves the rest to the chain, as every dispatch did before chains."""
    shared_cache.flag_clear(DISPATCH_FLAG)
    position = None if after is None else (datetime.fromisoformat(after[0]), uuid.UUID(after[1]))
    pending, more = dispatch_list(DISPATCH_BATCH, after=position)
    for batch in _batches([(str(payout_id), livemode) for payout_id, livemode in pending]):
        task_enqueue("payments.payouts.tasks.payouts_process", payout_ids=batch)
        dispatch_sent(batch)
    if more is None:
        if after is not None:  # the end of the chain
            shared_cache.flag_clear(CHAIN_FLAG)
    elif after is not None or shared_cache.flag_set(CHAIN_FLAG, seconds=CHAIN_FLAG_SECONDS):
        task_enqueue("payments.payouts.tasks.payouts_dispatch", after=[more[0].isoformat(), str(more[1])])
    return len(pending)


# Set while a chain of dispatches drains a backlog; if its next message is lost, another chain may start after this.
CHAIN_FLAG = "payouts:dispatch:chain"
CHAIN_FLAG_SECONDS = 300


def _batches(payouts: list[tuple]) -> list[list]:
    """(id, livemode) pairs, in their order, as the id lists of the tasks that start and send them: one mode per
    task, at most the mode's rail's `payout_batch` ids each, never more than PAYOUT_BATCH_MAX."""
    batches = []
    for livemode in (False, True):
        ids = [payout_id for payout_id, mode in payouts if mode == livemode]
        size = max(1, min(rails.for_mode(livemode).payout_batch, settings.PAYOUT_BATCH_MAX))
        batches += [ids[start:start + size] for start in range(0, len(ids), size)]
    return batches


def payout_process(*, payout_id) -> None:
    """Start a PENDING payout and send it. Runs in a Celery task, outside any transaction."""
    payouts_process(payout_ids=[payout_id])


# The reconciliation job takes a PROCESSING payout unchanged this long for stuck: it asks the rail, and sends it
# (under the same key) if the rail never got it.
RECONCILE_AFTER = timedelta(seconds=15)
# A batch starts a send only this long after it moved its payouts to PROCESSING: a send started then has ended
# (answered, or timed out: EFI_TIMEOUT_SECONDS, 10 s) before the job could take its payout for stuck, so the worker and
# the job never send one payout at the same time. The payouts of a batch left unsent by a slow rail stay PROCESSING,
# and the job sends them. tests/payments/payouts/test_payout_batches.py holds the sum under RECONCILE_AFTER.
SEND_WINDOW_SECONDS = 4.0


def payouts_process(*, payout_ids: list) -> None:
    """Start the PENDING payouts among these (one transaction for all), send them within SEND_WINDOW_SECONDS (one
    rail call each, its id the idempotency key, or one call for all on a rail that takes them together), and record
    the answers. Runs in a Celery task, outside any transaction."""
    started = payouts_start(payout_ids=payout_ids)
    deadline = time.monotonic() + SEND_WINDOW_SECONDS
    answers = []
    for rail, payouts in _by_rail(started):  # a task's payouts are of one mode (_batches)
        if rail.payouts_together:
            if time.monotonic() > deadline:
                logger.warning("payments.payout_send_window_passed",
                               extra={"payout_ids": [str(payout.id) for payout in payouts]})
            else:
                answers += _send_together(rail, payouts)
            continue
        for payout in payouts:
            if time.monotonic() > deadline:
                logger.warning("payments.payout_send_window_passed", extra={"payout_id": str(payout.id)})
                continue  # PROCESSING, never sent: the reconciliation job sends it
            answer = _send(payout)
            if answer is not None:
                answers.append((payout, answer))
    _record(answers)


def _by_rail(payouts: list[Payout]) -> list[tuple[rails.Rail, list[Payout]]]:
    """The payouts by mode, in their order, each mode's with its rail."""
    return [(rails.for_mode(livemode), [payout for payout in payouts if payout.livemode == livemode])
            for livemode in sorted({payout.livemode for payout in payouts})]


def _order(payout: Payout) -> dict:
    """The rail's `payout_send` arguments for the payout: its id is the idempotency key."""
    return {"key": str(payout.id), "livemode": payout.livemode, "amount": payout.amount,
            "pix_key": payout.pix_key_normalized, "pix_key_type": payout.pix_key_type,
            "end_to_end_id": payout.external_id, "beneficiary_document": payout.beneficiary_document}


def _send(payout: Payout) -> OperationStatus | None:
    """The rail's answer to the payout, or None when it is unknown: it may or may not have arrived, and the
    reconciliation job asks the rail, never resends blind. Whatever goes wrong with one payout leaves the others of its
    batch to be sent and recorded."""
    try:
        return rails.for_mode(payout.livemode).payout_send(**_order(payout))
    except RailError:
        logger.warning("payments.payout_rail_error", extra={"payout_id": str(payout.id)})
    except Exception:
        logger.exception("payments.payout_send_failed", extra={"payout_id": str(payout.id)})
    return None


def _send_together(rail: rails.Rail, payouts: list[Payout]) -> list[tuple[Payout, OperationStatus]]:
    """The payouts (of the rail's mode) sent in one call and its answers; none when the call fails, since then none
    of them is known: the reconciliation job asks the rail about each."""
    try:
        return list(zip(payouts, rail.payouts_send(orders=[_order(payout) for payout in payouts]), strict=True))
    except RailError:
        logger.warning("payments.payout_rail_error", extra={"payout_ids": [str(payout.id) for payout in payouts]})
    except Exception:
        logger.exception("payments.payout_send_failed", extra={"payout_ids": [str(payout.id) for payout in payouts]})
    return []


def _statuses(payouts: list[Payout]) -> list[tuple[Payout, OperationStatus]]:
    """The rail's answer about each payout it answered for (`payout_status`; one call for all on a rail that takes
    them together): one it does not answer for is left out and asked again by a later run."""
    answered = []
    for rail, of_mode in _by_rail(payouts):
        if rail.payouts_together:  # a batch's worth of keys per call
            for start in range(0, len(of_mode), rail.payout_batch):
                chunk = of_mode[start:start + rail.payout_batch]
                try:
                    answered += zip(chunk, rail.payouts_status(keys=[str(payout.pk) for payout in chunk]), strict=True)
                except RailError:
                    logger.warning("payments.payout_reconcile_rail_error",
                                   extra={"payout_ids": [str(payout.pk) for payout in chunk]})
            continue
        for payout in of_mode:
            try:
                answered.append((payout, rail.payout_status(key=str(payout.pk))))
            except RailError:
                logger.warning("payments.payout_reconcile_rail_error", extra={"payout_id": str(payout.pk)})
    return answered


def _record(answers: list[tuple[Payout, OperationStatus]]) -> None:
    """Record the rail's answers: the confirmed payouts completed together (payouts_complete), a refusal or a
    return one by one, and the payouts still on their way asked about again, in one task, when they should have
    settled."""
    completed, pending = [], []
    for payout, answer in answers:
        try:  # one payout's failure (recorded later by the reconciliation job) never holds up the others
            if answer.end_to_end_id and answer.end_to_end_id != payout.external_id:
                # A real rail names the Pix itself: `externalId` becomes the end-to-end id the receiving bank knows.
                Payout.objects.filter(pk=payout.pk).update(external_id=answer.end_to_end_id)
            if answer.status in ("FAILED", "RETURNED"):
                payout_resolve(payout_id=payout.pk, answer=answer)
        except Exception:
            logger.exception("payments.payout_record_failed", extra={"payout_id": str(payout.pk)})
            continue
        if answer.status == "SUCCEEDED":
            completed.append(payout)
        elif answer.status == "PENDING":
            pending.append(str(payout.pk))
    payouts_complete(completed)
    if pending:
        try:  # ask again when the rail should have settled them; the periodic job is the safety net
            task_enqueue("payments.payouts.tasks.payout_reconcile", payout_ids=pending,
                         countdown=max(1, settings.SIMULATOR_AUTO_CONFIRM_SECONDS))
        except Exception:
            logger.warning("payments.payout_enqueue_failed", extra={"payout_ids": pending})


def payouts_reconcile(*, older_than: timedelta = RECONCILE_AFTER, payout_ids: list | None = None) -> int:
    """Settle unfinished payouts: PROCESSING ones by asking the rail (sending only what it never received, under
    the same key), PENDING ones whose task was lost by starting them, a rail's batch at a time."""
    # Whole rows: what a send needs, with no second read per payout.
    unfinished = payouts_unfinished(before=timezone.now() - older_than, payout_ids=payout_ids)
    pending = [payout for payout in unfinished if payout.status == PayoutStatus.PENDING]
    for batch in _batches([(payout.pk, payout.livemode) for payout in pending]):
        payouts_process(payout_ids=batch)
    handled, answers = len(pending), []
    for payout, answer in _statuses([payout for payout in unfinished if payout.status != PayoutStatus.PENDING]):
        handled += 1
        if answer.status == "NOT_FOUND":
            if not payout_resend_claim(payout):
                continue  # another run is sending it
            answer = _send(payout)  # never reached the rail: send it now, under the same idempotency key
        if answer is not None:
            answers.append((payout, answer))
    _record(answers)
    return handled
