"""Telling the worker that payouts are waiting: one `payouts_dispatch` message per burst of payouts, not one Celery
message per payout (publishing one cost a fifth of a payout's CPU in the web process), and, while a process knows its
dispatch is due after a payout's commit, no round trip to Redis at all (README, Decisions 53 and 119). The worker's
side is `payments.payouts.sending.payouts_dispatch`."""

from __future__ import annotations

import logging
import time

from core import cache as shared_cache
from core.tasks import task_enqueue

logger = logging.getLogger(__name__)

DISPATCH_FLAG = "payouts:dispatch"
DISPATCH_FLAG_SECONDS = 60
DISPATCH_BATCH = 1000
# The dispatch runs this long after the first payout of a burst: the payouts accepted meanwhile go in its batches
# (at 150 payouts a second, about 40 of them), instead of a task, a transaction and a confirmation each.
DISPATCH_DELAY_SECONDS = 0.25
# How far the worker's clock may run ahead of a web process's: a payout committed this long before a dispatch is due
# is surely committed before that dispatch lists. The hosts' clocks must agree to better than this (NTP does).
DISPATCH_CLOCK_MARGIN_SECONDS = 0.05
# Until when (time.monotonic()) this process knows of a dispatch due after a payout's commit; see dispatch_soon.
_skip_until = 0.0


def dispatch_soon() -> None:
    """After a payout commits: make sure a worker will list the PENDING payouts soon. The payout that finds the flag
    unset sets it and sends one `payouts_dispatch` message, due DISPATCH_DELAY_SECONDS later; the payouts after it,
    until the worker clears the flag, find it set and send nothing. The worker clears the flag *before* it lists, so
    a payout committed before the clear is in its list, and one committed after it (and after the due time, below)
    sets the flag again. If the message is lost, the payouts wait for the flag to expire (a minute) or for the
    reconciliation job, which starts PENDING payouts older than 15 s.

    The flag holds the time its dispatch is due (the setter's clock), and a process keeps the latest it learnt
    (setting the flag, or finding it set) as a deadline of its own monotonic clock, never more than
    DISPATCH_DELAY_SECONDS ahead: a dispatch never runs before it is due (Celery holds a message until its ETA, which
    is no earlier than that time), so a payout committed before then, less DISPATCH_CLOCK_MARGIN_SECONDS, is in that
    dispatch's list whoever clears the flag meanwhile, and needs no round trip to Redis at all. From that deadline
    until the worker clears the flag, payouts ask again and learn a due time already past; the payouts of each
    process between ask nothing. The price: a process that read the due time of a flag whose setter then failed to
    send its message (the broker down: the setter clears the flag) leaves its payouts of the next quarter second to
    the reconciliation job, as every payout is left while the broker is down; and the hosts' clocks must agree to
    better than the margin (a worker's clock ahead by more could run the message before such a payout commits, which
    then waits for the reconciliation job)."""
    global _skip_until
    monotonic = time.monotonic()
    if monotonic < _skip_until:
        return
    try:
        now = time.time()
        due = now + DISPATCH_DELAY_SECONDS  # the message's ETA is counted from a later clock reading: no earlier
        held = shared_cache.flag_claim(DISPATCH_FLAG, f"{due:.6f}", seconds=DISPATCH_FLAG_SECONDS)
        if held is None:
            try:
                task_enqueue("payments.payouts.tasks.payouts_dispatch", countdown=DISPATCH_DELAY_SECONDS)
            except Exception:
                shared_cache.flag_clear(DISPATCH_FLAG)  # the next payout tries again
                _skip_until = 0.0  # nor may another thread of this process count on a due time it read
                raise
        else:
            due = _due_time(held)
        ahead = min(due - now, DISPATCH_DELAY_SECONDS)  # a clock stepped back or a bogus value: never longer
        _skip_until = monotonic + ahead - DISPATCH_CLOCK_MARGIN_SECONDS
    except Exception:  # the broker or Redis is down: the reconciliation job picks up PENDING payouts
        logger.warning("payments.payout_dispatch_failed")


def _due_time(held: str) -> float:
    """A flag's due time; 0 (long past) for one that holds none (set by a version before due times, or not yet
    written)."""
    try:
        return float(held)
    except ValueError:
        return 0.0


def dispatch_due_forget() -> None:
    """Forget the dispatch this process learnt of (a test that clears the flags starts from none)."""
    global _skip_until
    _skip_until = 0.0
