"""What keeps a payout's worker CPU low (issue 17), for payments.payouts.services.

- **Two statements per state change of a batch**: the rows locked in id order with the status each moves from
  checked (`lock_objects.payouts`: PostgreSQL checks it again on the newest version of a row another transaction
  changed meanwhile, so of two workers moving one payout one gets the row and the other nothing), then one
  conditional UPDATE of those rows. The merchants' enabled webhook endpoints, which their events need, are read once
  per merchant and mode (`webhooks.services.enabled_endpoints`), not once per payout.
- **Payouts go in batches**: `payouts_dispatch` queues one task for up to the rail's `payout_batch` PENDING payouts;
  the task starts them all in one transaction (the lock and the UPDATE, one INSERT of their events), sends each (one
  rail call each, under its own idempotency key), and queues one confirmation task for those still on their way;
  that task completes them per merchant in one transaction (the lock and the UPDATE, one INSERT of the events, one
  ledger lock and the INSERTs of the movements). A Celery message, a transaction and a statement cost the same for
  fifty payouts as for one.
- **A payout is fanned out once, not once per dispatch**: `payouts_dispatch` runs again as soon as a payout commits
  after it cleared its flag, and without this memory it sent a second task for every payout whose task
  was still queued behind it: under a backlog, each dispatch doubled the queue it had to wait for.
"""

from __future__ import annotations

import threading
import time

from django.db.models import Q
from django.utils import timezone

from payments import lock_objects
from payments.models import Payout, PayoutStatus
from webhooks.services import enabled_endpoints

# How long this process skips a payout it queued a task for. A task lost meanwhile (a flushed broker) is sent again
# after this by a later dispatch, or started by the reconciliation job (PENDING for 15 s); a worker that starts has
# an empty memory and sends every PENDING payout (payments.payouts.tasks.payouts_resume).
DISPATCH_MEMORY_SECONDS = 20.0
_sent: dict = {}
_sent_lock = threading.Lock()


def payouts_moved(payout_ids: list, *, to: str, sources: tuple[str, ...], now=None, **changes) -> list[Payout]:
    """Move the payouts to `to` whose status is one of `sources` (setting `updated_at` and `changes`), inside the
    caller's transaction: those rows as they now are, locked until the caller commits (in id order, so that two
    callers with overlapping lists never wait on each other in a cycle), in id order; the others are left out.
    The payouts of a merchant share one instance of it, and each carries `enabled_endpoints`: its merchant's enabled
    endpoints of the mode, which its event needs."""
    payouts = list(lock_objects.payouts(payout_ids=payout_ids, statuses=sources))
    if not payouts:
        return []
    values = {"status": to, "updated_at": now or timezone.now(), **changes}
    Payout.objects.filter(pk__in=[payout.pk for payout in payouts], status__in=sources).update(**values)
    merchants: dict = {}  # one instance per merchant, shared by its payouts
    endpoints: dict = {}  # by merchant and mode
    for payout in payouts:
        for name, value in values.items():
            setattr(payout, name, value)
        payout.merchant = merchants.setdefault(payout.merchant_id, payout.merchant)
        scope = (payout.merchant_id, payout.livemode)
        if scope not in endpoints:
            endpoints[scope] = enabled_endpoints(payout.merchant, payout.livemode)
        payout.enabled_endpoints = endpoints[scope]
    return payouts


def payout_resend_claim(payout: Payout) -> bool:
    """Claim a PROCESSING payout the rail says it never got, for this reconciliation run to send: its `updated_at`
    moves to now if it is still what this run read. Of two runs that read it at once (the periodic job and the
    inbound one), one claims it and the other leaves it, so the rail is never sent it twice at the same time; and the
    new stamp keeps the next run off it while the send runs."""
    now = timezone.now()
    claimed = Payout.objects.filter(pk=payout.pk, status=PayoutStatus.PROCESSING,
                                    updated_at=payout.updated_at).update(updated_at=now)
    if claimed:
        payout.updated_at = now
    return bool(claimed)


def payouts_unfinished(*, before, payout_ids: list | None) -> list[Payout]:
    """PENDING and PROCESSING payouts last changed before `before` (of `payout_ids` if given), at most 500."""
    queryset = Payout.objects.filter(status__in=(PayoutStatus.PENDING, PayoutStatus.PROCESSING), updated_at__lte=before)
    if payout_ids is not None:
        queryset = queryset.filter(pk__in=payout_ids)
    return list(queryset[:500])


def dispatch_list(batch: int, *, after: tuple | None = None) -> tuple[list[tuple], tuple | None]:
    """Up to `batch` PENDING payouts as (id, livemode), oldest first (after the (created_at, id) position `after`
    when given), that this process has not queued a task for lately (pages on past the ones it has, so a long
    backlog of them never hides a newer payout); and the position to go on from when the batch filled before the
    PENDING payouts ran out (None when they did)."""
    now = time.monotonic()
    with _sent_lock:
        for payout_id in [key for key, when in _sent.items() if now - when > DISPATCH_MEMORY_SECONDS]:
            del _sent[payout_id]
        recent = set(_sent)
    found = []
    while True:
        queryset = Payout.objects.filter(status=PayoutStatus.PENDING).order_by("created_at", "pk")
        if after is not None:
            queryset = queryset.filter(Q(created_at__gt=after[0]) | Q(created_at=after[0], pk__gt=after[1]))
        rows = list(queryset.values_list("created_at", "pk", "livemode")[:batch])
        for created_at, payout_id, livemode in rows:
            if str(payout_id) in recent:
                continue
            found.append((payout_id, livemode))
            if len(found) == batch:
                return found, (created_at, payout_id)
        if len(rows) < batch:
            return found, None
        after = rows[-1][:2]


def dispatch_sent(payout_ids: list[str]) -> None:
    """Remember that a task for these payouts was queued (only once it was: a failed send is tried again)."""
    now = time.monotonic()
    with _sent_lock:
        for payout_id in payout_ids:
            _sent[payout_id] = now
