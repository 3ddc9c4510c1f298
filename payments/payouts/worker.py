"""What keeps a payout's worker CPU low (issue 17, `bench/payouts_e2e.py`), for payments.payouts.services.

- **One statement per state change of a batch**: a conditional UPDATE that takes the rows' locks (in id order),
  checks the status each moves from and returns the rows as they now are. PostgreSQL re-checks the condition on the
  newest version of a row that another transaction changed meanwhile, so of two workers moving one payout one gets
  the row and the other nothing, as a SELECT … FOR UPDATE followed by the same conditional UPDATE decided it, in one
  round trip for the whole batch and with no ORM query compiled per call. On PostgreSQL the same statement returns
  each merchant's enabled webhook endpoints of the mode (`enabled_endpoints`, what
  `webhooks.services.event_record` would query for the event): one round trip, not two.
- **Payouts go in batches**: `payouts_dispatch` queues one task for up to the rail's `payout_batch` PENDING payouts;
  the task starts them all in one transaction (one UPDATE, one INSERT of their events), sends each (one rail call
  each, under its own idempotency key), and queues one confirmation task for those still on their way; that task
  completes them per merchant in one transaction (one UPDATE, one INSERT of the events, one ledger lock and one
  INSERT of the movements). A Celery message, a transaction and a statement cost the same for fifty payouts as for
  one.
- **A payout is fanned out once, not once per dispatch**: `payouts_dispatch` runs again as soon as a payout commits
  after it cleared its flag, and without this memory it sent a second task for every payout whose task
  was still queued behind it: under a backlog, each dispatch doubled the queue it had to wait for.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from accounts.models import Merchant
from core import readback
from payments.models import Payout, PayoutStatus
from webhooks.models import WebhookEndpoint

# How long this process skips a payout it queued a task for. A task lost meanwhile (a flushed broker) is sent again
# after this by a later dispatch, or started by the reconciliation job (PENDING for 15 s); a worker that starts has
# an empty memory and sends every PENDING payout (payments.payouts.tasks.payouts_resume).
DISPATCH_MEMORY_SECONDS = 20.0
_sent: dict = {}
_sent_lock = threading.Lock()


def payouts_moved(payout_ids: list, *, to: str, sources: tuple[str, ...], now=None, **changes) -> list[Payout]:
    """Move the payouts to `to` whose status is one of `sources` (setting `updated_at` and `changes`), inside the
    caller's transaction: those rows as they now are, locked until the caller commits (in id order, so that two
    callers with overlapping lists never wait on each other in a cycle), in no set order; the others are left out.
    Each one's `merchant` is the merchant's id alone, one instance for the payouts of a merchant, cached as the
    related object is (the row's own `merchant_id` is its id already): any other field is read on access.
    `enabled_endpoints`: the merchant's enabled endpoints of the mode, as the statement saw them on PostgreSQL (one
    more query elsewhere)."""
    meta = Payout._meta
    values = {"status": to, "updated_at": now or timezone.now(), **changes}
    params = [meta.get_field(name).get_db_prep_save(value, connection) for name, value in values.items()]
    params += [meta.pk.get_db_prep_value(meta.pk.to_python(payout_id), connection) for payout_id in payout_ids]
    params += sources
    payouts = readback.returned_all(Payout, _update_sql(len(payout_ids), len(sources), tuple(changes)), params,
                                   extra=("enabled_endpoints",) if connection.vendor == "postgresql" else ())
    found: dict[tuple, list] = {}  # elsewhere than on PostgreSQL, the endpoints of all the rows, in one query
    if payouts and connection.vendor != "postgresql":
        for endpoint in WebhookEndpoint.objects.filter(
                merchant_id__in={payout.merchant_id for payout in payouts}, enabled=True).order_by("pk"):
            found.setdefault((endpoint.merchant_id, endpoint.livemode), []).append(endpoint)
    merchants: dict = {}  # one instance per merchant, shared by its payouts
    for payout in payouts:
        merchant = merchants.get(payout.merchant_id)
        if merchant is None:
            merchant = merchants[payout.merchant_id] = Merchant.from_db(connection.alias, ["id"], [payout.merchant_id])
        _MERCHANT.set_cached_value(payout, merchant)
        endpoints = getattr(payout, "enabled_endpoints", None)
        if endpoints is None:
            payout.enabled_endpoints = found.get((payout.merchant_id, payout.livemode), [])
        else:
            payout.enabled_endpoints = [
                WebhookEndpoint.from_db(connection.alias, _ENDPOINT_FIELDS,
                                        [uuid.UUID(pk), payout.merchant_id, payout.livemode, url, types, True])
                for pk, url, types in json.loads(endpoints)]
    return payouts


_MERCHANT = Payout._meta.get_field("merchant")
_ENDPOINT_FIELDS = ["id", "merchant_id", "livemode", "url", "event_types", "enabled"]


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
    """PENDING and PROCESSING payouts last changed before `before` (of `payout_ids` if given), at most 500: for
    the payouts of a confirmation task a statement written once per count of ids (`core.readback.returned_all`:
    no ORM query compiled, no raw query's per-call work), else the ORM's query."""
    statuses = (PayoutStatus.PENDING, PayoutStatus.PROCESSING)
    if payout_ids is None or len(payout_ids) > 500:
        queryset = Payout.objects.filter(status__in=statuses, updated_at__lte=before)
        return list((queryset if payout_ids is None else queryset.filter(pk__in=payout_ids))[:500])
    if not payout_ids:
        return []
    meta = Payout._meta
    params = [*(meta.pk.get_db_prep_value(meta.pk.to_python(payout_id), connection) for payout_id in payout_ids),
              *statuses, meta.get_field("updated_at").get_db_prep_value(before, connection)]
    return readback.returned_all(Payout, _unfinished_sql(len(payout_ids)), params)


@functools.lru_cache(maxsize=64)
def _unfinished_sql(count: int) -> str:
    quote = connection.ops.quote_name
    meta = Payout._meta
    columns = ", ".join(quote(field.column) for field in meta.concrete_fields)
    keys = ", ".join(["%s"] * count)
    return (f"SELECT {columns} FROM {quote(meta.db_table)} WHERE {quote(meta.pk.column)} IN ({keys}) "  # noqa: S608
            f"AND {quote(meta.get_field('status').column)} IN (%s, %s) "
            f"AND {quote(meta.get_field('updated_at').column)} <= %s")


@functools.cache
def _update_sql(count: int, sources: int, changes: tuple[str, ...]) -> str:
    """The statement, written once per shape (names from the model, placeholders for every value): SET's values,
    then the ids, then the statuses it moves from."""
    quote = connection.ops.quote_name
    meta = Payout._meta
    assignments = ", ".join(f"{quote(meta.get_field(name).column)} = %s" for name in ("status", "updated_at", *changes))
    table, pk = quote(meta.db_table), quote(meta.pk.column)
    columns = ", ".join(quote(field.column) for field in meta.concrete_fields)
    ids = ", ".join(["%s"] * count)
    chosen = f"{pk} IN ({ids})"
    if connection.vendor == "postgresql":
        if count > 1:  # the rows locked first, in id order: the UPDATE's own scan follows no set order
            chosen = f"{pk} IN (SELECT {pk} FROM {table} WHERE {pk} IN ({ids}) ORDER BY {pk} FOR UPDATE)"  # noqa: S608
        # and the endpoints event_record needs, as JSON [[id, url, types], …]
        endpoint = WebhookEndpoint._meta
        e = {name: f"_e.{quote(endpoint.get_field(name).column)}"
             for name in ("id", "url", "event_types", "merchant", "livemode", "enabled")}
        columns += (f", (SELECT coalesce(json_agg(json_build_array({e['id']}, {e['url']}, {e['event_types']}) "  # noqa: S608
                    f"ORDER BY {e['id']}), '[]')::text FROM {quote(endpoint.db_table)} _e "
                    f"WHERE {e['merchant']} = {table}.{quote(meta.get_field('merchant').column)} "
                    f"AND {e['livemode']} = {table}.{quote(meta.get_field('livemode').column)} "
                    f"AND {e['enabled']}) AS enabled_endpoints")
    return (f"UPDATE {table} SET {assignments} "  # noqa: S608
            f"WHERE {chosen} AND {quote(meta.get_field('status').column)} "
            f"IN ({', '.join(['%s'] * sources)}) RETURNING {columns}")


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
