"""Card charges: the rail's authorization, its result applied to the charge, the settlement of the money held in
`pending`, and the reconciliation of charges whose answer was lost. No rail call runs inside a database
transaction: a charge is committed PENDING before its call and its answer recorded after it."""

from __future__ import annotations

import logging
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import InvalidState
from integrations.idempotency import effect_record
from payments import rails
from payments.formats.cards import bin6, brand, fingerprint, last4
from payments.ledger import services as ledger
from payments.ledger.services import Leg
from payments.models import (
    AccountKind,
    CardToken,
    LineType,
    Payin,
    PayinStatus,
    PaymentMethod,
)
from payments.payins.transitions import (
    BATCH,
    FAILURE_MESSAGES,
    payin_event_record,
    payin_locked,
    payin_mark_paid,
    payin_transition,
)
from payments.rails.base import CardData, RailError, RailTimeout

logger = logging.getLogger(__name__)


def _card_fingerprint_key() -> bytes:
    return settings.SECRET_KEY.encode() + b"/card-fingerprint"


def card_charge(payin: Payin, *, card: dict, rail: rails.Rail) -> Payin:
    """Charge a card, never inside a database transaction (call it outside one): the charge is committed PENDING,
    the rail is asked under the charge's id as its idempotency key, and its answer is recorded by a conditional
    transition in a transaction of its own. A rail that does not answer (a timeout, a 5xx, a refused connection)
    leaves the charge PENDING with its `payin.created` event, for `card_charges_reconcile` to ask under the same key:
    it is never sent again under another one."""
    token: CardToken | None = card.get("token")
    card_data = None
    if token is not None:
        payin.card = {"brand": token.brand, "bin": token.bin, "last4": token.last4, "holderName": token.holder_name,
                      "expirationMonth": token.expiration_month, "expirationYear": token.expiration_year,
                      "installments": card["installments"], "token": token.token}
    else:
        card_data = CardData(number=card["number"], cvv=card["cvv"], holder_name=card["holderName"],
                             expiration_month=card["expirationMonth"], expiration_year=card["expirationYear"])
        payin.card = {"brand": brand(card_data.number), "bin": bin6(card_data.number),
                      "last4": last4(card_data.number), "holderName": card_data.holder_name,
                      "expirationMonth": card_data.expiration_month, "expirationYear": card_data.expiration_year,
                      "installments": card["installments"], "token": None}
    # Committed before the call: whatever happens next, the rail can only have charged a charge we know of, and the
    # request has taken effect. Its event waits for the answer, so a charge answered at once has one event.
    with transaction.atomic():
        payin.save(force_insert=True)
        effect_record()
    try:
        result = rail.card_authorize(key=str(payin.id), livemode=payin.livemode, amount=payin.amount,
                                     installments=card["installments"], card=card_data,
                                     rail_token=token.rail_token if token else None)
    except RailError as exc:
        logger.warning("payments.card_rail_no_answer",
                       extra={"payin_id": str(payin.id), "timeout": isinstance(exc, RailTimeout)})
        return _card_left_pending(payin)
    if result.status not in ("PAID", "FAILED"):  # the rail holds it: ask again later
        return _card_left_pending(payin)
    new_token = None
    if result.status == "PAID" and token is None and card_data is not None:
        token = CardToken(token="card_" + secrets.token_urlsafe(18).replace("-", "x").replace("_", "y"),
                          merchant=payin.merchant, livemode=payin.livemode, rail_token=result.rail_token,
                          brand=payin.card["brand"], bin=payin.card["bin"], last4=payin.card["last4"],
                          holder_name=card_data.holder_name, expiration_month=card_data.expiration_month,
                          expiration_year=card_data.expiration_year,
                          fingerprint=fingerprint(card_data.number, key=_card_fingerprint_key()))
        payin.card["token"] = token.token
        new_token = token  # written with the payin.paid transition
    try:
        with transaction.atomic():
            # No lock needed first: the transition is a conditional update from PENDING, which finds nothing to move
            # (InvalidState, and the token's row is rolled back with it) when reconciliation recorded the answer first.
            if new_token is not None:
                new_token.save(force_insert=True)
            return _card_result_apply(payin, status=result.status, failure_code=result.failure_code,
                                      authorization_code=result.authorization_code, previous_status=None,
                                      card=payin.card)
    except InvalidState:
        return Payin.objects.select_related("merchant").get(pk=payin.pk)


def _card_left_pending(payin: Payin) -> Payin:
    """No answer from the rail: the charge stays PENDING, announced by `payin.created`."""
    with transaction.atomic():
        locked = payin_locked(payin.pk)
        if locked.status == PayinStatus.PENDING:
            payin_event_record(locked, "payin.created", previous_status=None)
        return locked


def _card_result_apply(payin: Payin, *, status: str, failure_code: str, authorization_code: str,
                       previous_status: str | None, **changes) -> Payin:
    if status == "PAID":
        return payin_mark_paid(payin, authorization_code=authorization_code, previous_status=previous_status, **changes)
    if status == "FAILED":
        code = failure_code or "processing_error"
        return payin_transition(payin, to=PayinStatus.FAILED, previous_status=previous_status, failure_code=code,
                           failure_message=FAILURE_MESSAGES.get(code, FAILURE_MESSAGES["processing_error"]),
                           **changes)
    return payin


def card_settlements_release(*, now: datetime | None = None) -> int:
    """Move card money whose settlement date has come from `pending` to `available`."""
    now = now or timezone.now()
    released = 0
    for payin_id in Payin.objects.filter(settle_at__lte=now).values_list("pk", flat=True)[:BATCH]:
        with transaction.atomic():
            payin = payin_locked(payin_id)
            if payin.settle_at is None or payin.settle_at > now:
                continue
            Payin.objects.filter(pk=payin.pk).update(settle_at=None)
            net = payin.amount - payin.fee
            if net:
                ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="payin",
                            object_id=str(payin.id), reference_id=payin.reference_id, description="Card settlement",
                            legs=[Leg(AccountKind.PENDING, -net, LineType.SETTLEMENT),
                                  Leg(AccountKind.AVAILABLE, net, LineType.SETTLEMENT)])
            released += 1
    return released


def card_charges_reconcile(*, older_than: timedelta = timedelta(seconds=30)) -> int:
    """Ask the rail about card charges left PENDING by a timeout. The question is asked outside any transaction."""
    cutoff = timezone.now() - older_than
    resolved = 0
    pending = Payin.objects.filter(status=PayinStatus.PENDING, payment_method=PaymentMethod.CREDIT_CARD,
                                   created_at__lte=cutoff)
    if rails.for_mode(True).card_tokens_only:
        # A live card on such a rail is PENDING only while its payer has not paid on the hosted page: nothing was
        # asked of the rail (what was is PROCESSING, read by rail_charges_reconcile).
        pending = pending.filter(livemode=False)
    for payin_id, livemode in pending.values_list("pk", "livemode")[:BATCH]:
        try:
            result = rails.for_mode(livemode).card_status(key=str(payin_id))
        except RailError:
            logger.warning("payments.card_reconcile_rail_error", extra={"payin_id": str(payin_id)})
            continue
        if result.status == "PENDING":
            continue
        with transaction.atomic():
            payin = payin_locked(payin_id)
            if payin.status == PayinStatus.PENDING:
                _card_result_apply(payin, status=result.status, failure_code=result.failure_code,
                                   authorization_code=result.authorization_code, previous_status="")
                resolved += 1
    return resolved
