"""Confirmed notifications and reconciliation with the live rail. Rail calls are made with no transaction open; what
the rail confirms is stored (one row per rail and dedupe key) and applied once by `notification_record`."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Min
from django.utils import timezone

from payments import rails
from payments.disputes import services as disputes
from payments.models import Dispute, DisputeRailAnswer, Payin, PayinStatus, PaymentMethod, RailNotification
from payments.payins import cards as card_charges
from payments.payins import rail_charges, refunds
from payments.payins import services as payins
from payments.payins.notifications import notification_record
from payments.payouts import sending as payouts
from payments.rails.base import Notification, RailError
from payments.unattributed import services as unattributed
from payments.unmatched import services as unmatched

logger = logging.getLogger(__name__)

# A charge or refund is committed before its rail call: one younger than this may still be on its way to the rail,
# which would answer "never received".
RECONCILE_AFTER = timedelta(seconds=30)
CHARGES_PER_RUN = 100


def notifications_receive(*, rail_name: str, body: bytes) -> tuple[int, int]:
    """A notification a rail POSTed: each item confirmed with the rail, then recorded. (items applied, confirmed).
    Raises `InvalidNotification` for a body the rail could not have sent, `RailError` when the rail cannot be asked
    (the caller answers 503 and the rail sends it again)."""
    confirmed = rails.by_name(rail_name).notifications_confirm(body=body)
    applied = sum(_record_new(rail_name, [notification]) for notification in confirmed)
    return applied, len(confirmed)


def charge_notification_receive(*, rail_name: str, token: str) -> tuple[int, int]:
    """A Charges API notification: its token's whole history read from the rail, every entry not applied before
    applied. (entries applied, entries read). `InvalidNotification` for a token the rail could not have sent,
    `RailError` when the rail cannot be asked (the caller answers 503 and the rail sends it again)."""
    rail = rails.by_name(rail_name)
    events = rail.charge_history(token=token)
    return rail_charges.charge_events_apply(rail=rail, token=token, events=events), len(events)


def _record_new(rail_name: str, notifications: list[Notification]) -> int:
    """Record the notifications not seen before; how many were new."""
    keys = [notification.dedupe_key for notification in notifications]
    seen = set(RailNotification.objects.filter(rail=rail_name, dedupe_key__in=keys)
               .values_list("dedupe_key", flat=True))
    new = [notification for notification in notifications if notification.dedupe_key not in seen]
    for notification in new:
        notification_record(rail_name=rail_name, notification=notification)
    return len(new)


def rail_reconcile(*, payouts_too: bool = True, hours: float | None = None) -> dict[str, int]:
    """Ask the rails about everything unfinished and apply what they know: card charges, refunds and payouts still
    waiting on an answer; with a real live rail, also the Pix it received in the last `hours` and the registered
    charges still PENDING here, and the dispute cases (MED) it opened. A lost notification is found here, never
    lost."""
    done = {"card_charges": card_charges.card_charges_reconcile(older_than=RECONCILE_AFTER),
            "refunds": refunds.refunds_reconcile(older_than=RECONCILE_AFTER)}
    done["unmatched_refunds"] = unmatched.unmatched_refunds_reconcile(older_than=RECONCILE_AFTER)
    done["unattributed_refunds"] = unattributed.unattributed_refunds_reconcile(older_than=RECONCILE_AFTER)
    if payouts_too:
        done["payouts"] = payouts.payouts_reconcile(older_than=RECONCILE_AFTER)
    rail = rails.by_name(settings.PAYMENTS_RAIL)
    if rail.card_tokens_only or rail.boleto_registered:
        done["rail_charges"] = rail_charges.rail_charges_reconcile(rail, older_than=RECONCILE_AFTER)
    if rail.dynamic_pix:
        done["received"] = received_reconcile(rail, hours=settings.RAIL_RECONCILE_HOURS if hours is None else hours)
        done["pix_charges"] = pix_charges_reconcile(rail)
        done["disputes"] = disputes_reconcile(rail)
    done["dispute_answers"] = sum(
        disputes.dispute_answer_send(dispute_id=dispute_id).rail_answer != DisputeRailAnswer.PENDING
        for dispute_id in disputes.dispute_answers_pending(older_than=RECONCILE_AFTER))
    return done


def received_reconcile(rail: rails.Rail, *, hours: float) -> int:
    end = timezone.now()
    try:
        notifications = rail.payments_received(start=end - timedelta(hours=hours), end=end)
    except RailError:
        logger.warning("payments.received_reconcile_rail_error", extra={"rail": rail.name})
        return 0
    return _record_new(rail.name, notifications)


def disputes_reconcile(rail: rails.Rail) -> int:
    """The rail's dispute cases of the last `RAIL_CASE_WINDOW` (and back from the oldest still open here): new ones
    opened here, the others followed to where the rail says they stand. How many cases named a charge of ours."""
    end = timezone.now()
    # Back from the oldest case of ours still open (it is followed to its end), or from now.
    oldest_open = (Dispute.objects.filter(livemode=True, status__in=disputes.OPEN).exclude(rail_reference="")
                   .aggregate(oldest=Min("created_at"))["oldest"])
    start = (oldest_open or end) - disputes.RAIL_CASE_WINDOW
    try:
        cases = rail.disputes_list(start=start, end=end)
    except RailError:
        logger.warning("payments.disputes_reconcile_rail_error", extra={"rail": rail.name})
        return 0
    return sum(disputes.dispute_rail_apply(case) is not None for case in cases)


def pix_charges_reconcile(rail: rails.Rail) -> int:
    """PENDING live Pix charges the rail registered: ask for each (oldest first) whether it was paid."""
    charges = Payin.objects.filter(livemode=True, status=PayinStatus.PENDING, payment_method=PaymentMethod.PIX,
                                   created_at__lte=timezone.now() - RECONCILE_AFTER).order_by("created_at")
    applied = 0
    for payin in charges.only("pk", "pix_txid")[:CHARGES_PER_RUN]:
        try:
            applied += payins.payin_payments_apply(rail, payin)
        except RailError:
            logger.warning("payments.pix_charge_reconcile_rail_error", extra={"payin_id": str(payin.pk)})
    return applied
