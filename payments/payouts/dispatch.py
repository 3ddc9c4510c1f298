"""Telling the worker that payouts are waiting: one `payouts_dispatch` message per burst of payouts, not one Celery
message per payout (publishing one cost a fifth of a payout's CPU in the web process). The worker's side is
`payments.payouts.sending.payouts_dispatch`."""

from __future__ import annotations

import logging

from core import cache as shared_cache
from core.tasks import task_enqueue

logger = logging.getLogger(__name__)

DISPATCH_FLAG = "payouts:dispatch"
DISPATCH_FLAG_SECONDS = 60
DISPATCH_BATCH = 1000
# The dispatch runs this long after the first payout of a burst: the payouts accepted meanwhile go in its batches
# (at 150 payouts a second, about 40 of them), instead of a task, a transaction and a confirmation each.
DISPATCH_DELAY_SECONDS = 0.25


def dispatch_soon() -> None:
    """After a payout commits: make sure a worker will list the PENDING payouts soon. The payout that finds the flag
    unset sets it and sends one `payouts_dispatch` message, due DISPATCH_DELAY_SECONDS later; the payouts after it,
    until the worker clears the flag, find it set and send nothing. The worker clears the flag *before* it lists, so
    a payout that found the flag set (after its commit) is in the list of the dispatch that clears it, and one
    committed after the clear sets the flag again: no clock is compared, only the order of the flag's operations in
    Redis. If the message is lost, the payouts wait for the flag to expire (a minute) or for the reconciliation job,
    which starts PENDING payouts older than 15 s; so do the payouts that found the flag of a setter that then failed
    to send its message (the broker down: the setter clears the flag)."""
    try:
        if shared_cache.flag_set(DISPATCH_FLAG, seconds=DISPATCH_FLAG_SECONDS):
            try:
                task_enqueue("payments.payouts.tasks.payouts_dispatch", countdown=DISPATCH_DELAY_SECONDS)
            except Exception:
                shared_cache.flag_clear(DISPATCH_FLAG)  # the next payout tries again
                raise
    except Exception:  # the broker or Redis is down: the reconciliation job picks up PENDING payouts
        logger.warning("payments.payout_dispatch_failed")
