"""The lifecycle of a charge (SPEC §3.3): the only writer of `Payin.status` and `refundedAmount`, and so the one
place that tells the read cache (core.readcache) that a charge's body changed.

Every transition locks the charge row, moves it with one conditional update (`UPDATE … WHERE status IN (the allowed
sources)`), and writes its ledger movement and its event in the same transaction."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from accounts.models import Merchant
from core import readcache
from core.errors import InvalidState
from integrations.idempotency import effect_record
from payments import policy
from payments.ledger import services as ledger
from payments.ledger.services import Leg
from payments.models import (
    AccountKind,
    LineType,
    Payin,
    PayinStatus,
    PaymentMethod,
)
from payments.payins.serializers import payin_serialize
from payments.rows import row_locked
from webhooks.services import event_record

logger = logging.getLogger(__name__)


# Which statuses each status may be reached from (SPEC §3.3). A payment confirmed after expiry is still credited:
# the money arrived.
TRANSITIONS = {
    # A live card asked of the rail (ADR 0085).
    PayinStatus.PROCESSING: {PayinStatus.PENDING},
    PayinStatus.PAID: {PayinStatus.PENDING, PayinStatus.EXPIRED, PayinStatus.PROCESSING},
    PayinStatus.FAILED: {PayinStatus.PENDING, PayinStatus.PROCESSING},
    PayinStatus.EXPIRED: {PayinStatus.PENDING},
    PayinStatus.CANCELED: {PayinStatus.PENDING},
    PayinStatus.PARTIALLY_REFUNDED: {PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED},
    PayinStatus.REFUNDED: {PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED},
    # A card dispute lost or accepted (payments.disputes); a partial refund may have come before it.
    PayinStatus.CHARGEBACK: {PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED},
}


# Stored and sent by the API in English (its contract); marked for the catalog so the payer's page can translate them.
FAILURE_MESSAGES = {
    "card_declined": gettext_noop("The card was declined."),
    "insufficient_funds": gettext_noop("The card has insufficient funds."),
    "expired_card": gettext_noop("The card has expired."),
    "incorrect_cvc": gettext_noop("The card's security code is incorrect."),
    "processing_error": gettext_noop("An error occurred while processing the card."),
}


# --- Transitions -----------------------------------------------------------------------------------------------------
def payin_locked(payin_id, *, merchant: Merchant | None = None, livemode: bool | None = None) -> Payin:
    """The charge, payin_locked for this transaction; another merchant's or mode's charge does not exist."""
    return row_locked(Payin, payin_id, merchant=merchant, livemode=livemode, missing="No such charge")


def payin_transition(payin: Payin, *, to: str, previous_status: str | None = "", now: datetime | None = None,
                     **changes) -> Payin:
    """Move a locked charge with one conditional update and record its event; `previous_status=None` marks a charge
    created in this status (its event's previousStatus is null)."""
    now = now or timezone.now()
    source = payin.status
    updated = Payin.objects.filter(pk=payin.pk, status__in=TRANSITIONS[to]).update(status=to, updated_at=now,
                                                                                    **changes)
    if not updated:
        raise InvalidState(gettext("A charge in status %(source)s cannot become %(to)s") % {"source": source, "to": to})
    readcache.changed(readcache.key("payin", payin.pk))
    payin.status = to
    payin.updated_at = now
    for name, value in changes.items():
        setattr(payin, name, value)
    payin_event_record(payin, f"payin.{to.lower()}",
                       previous_status=source if previous_status == "" else previous_status)
    return payin


def payin_refunded_amount_add(payin: Payin, amount: int, *, now: datetime) -> None:
    """Add `amount` (negative: give it back) to a locked charge's refundedAmount, in the database only."""
    Payin.objects.filter(pk=payin.pk).update(refunded_amount=F("refunded_amount") + amount, updated_at=now)
    readcache.changed(readcache.key("payin", payin.pk))


def payin_event_record(payin: Payin, type: str, *, previous_status: str | None) -> None:
    """The charge's event, in the caller's transaction, which is the request's effect (`effect_record`)."""
    event_record(merchant=payin.merchant, livemode=payin.livemode, type=type, obj=payin_serialize(payin),
                 previous_status=previous_status, webhook_url=payin.webhook_url or None)
    effect_record()


def payin_mark_paid(payin: Payin, *, authorization_code: str = "", previous_status: str | None = "",
                    received: int | None = None, **changes) -> Payin:
    """Credit the money that arrived: the net to `available` (PIX, BOLETO, test-mode cards) or to `pending` until
    the card settlement date; the fee to the platform. `received`: what the payer paid when the rail says it was
    more than the amount (a boleto paid late, with its fine and interest): all of it is the merchant's, kept as
    `paidAmount`."""
    now = timezone.now()
    changes["paid_at"] = now
    received = payin.amount if received is None else received
    if payin.payment_method == PaymentMethod.BOLETO:
        changes["paid_amount"] = received
    target = AccountKind.AVAILABLE
    if payin.payment_method == PaymentMethod.CREDIT_CARD:
        changes["authorization_code"] = authorization_code
        days = policy.card_settlement_days(merchant=payin.merchant, livemode=payin.livemode)
        if days > 0:
            target = AccountKind.PENDING
            changes["settle_at"] = now + timedelta(days=days)
    payin = payin_transition(payin, to=PayinStatus.PAID, previous_status=previous_status, now=now, **changes)
    ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="payin", object_id=str(payin.id),
                reference_id=payin.reference_id, description=f"{payin.payment_method} charge", legs=[
                    Leg(AccountKind.RAIL_IN, -received, LineType.PAYIN),
                    Leg(target, received, LineType.PAYIN),
                    Leg(target, -payin.fee, LineType.PAYIN_FEE),
                    Leg(AccountKind.FEE_REVENUE, payin.fee, LineType.PAYIN_FEE),
                ])
    return payin


# --- Jobs ------------------------------------------------------------------------------------------------------------
BATCH = 500
