"""Writes of pay-in: charges, their lifecycle (SPEC §3.3), refunds and the jobs that move them.

Every transition locks the charge row, then moves it with one conditional update (`UPDATE … WHERE status IN (the
allowed sources)`), and writes its ledger movement and its event in the same transaction: the three commit together
or not at all. Locks are always taken charge first, then refund, then the merchant's ledger accounts (in id order,
`ledger.lock`), so two movements can never wait on each other in a cycle.
"""

from __future__ import annotations

import logging
import secrets
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Model, Sum
from django.utils import timezone

from accounts.models import Merchant
from config import inserts, readcache
from config.errors import DomainError, InvalidState, NotFound, ValidationFailed
from payments import fees, ledger, rails
from payments.formats import boleto, pix
from payments.formats.cards import bin6, brand, fingerprint, last4
from payments.ledger import Leg
from payments.models import (
    AccountKind,
    BalanceAdjustment,
    CardToken,
    LineType,
    Payin,
    PayinStatus,
    PaymentMethod,
    Refund,
    RefundStatus,
)
from payments.rails.base import CardData, OperationStatus, RailError, RailTimeout
from payments.selectors import merchant_city, merchant_display_name
from payments.serializers import payin_serialize, refund_serialize
from webhooks.services import deliveries_enqueue_on_commit, event_build, event_record

logger = logging.getLogger(__name__)

# Which statuses each status may be reached from (SPEC §3.3). A payment confirmed after expiry is still credited:
# the money arrived.
TRANSITIONS = {
    PayinStatus.PAID: {PayinStatus.PENDING, PayinStatus.EXPIRED},
    PayinStatus.FAILED: {PayinStatus.PENDING},
    PayinStatus.EXPIRED: {PayinStatus.PENDING},
    PayinStatus.CANCELED: {PayinStatus.PENDING},
    PayinStatus.PARTIALLY_REFUNDED: {PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED},
    PayinStatus.REFUNDED: {PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED},
    PayinStatus.CHARGEBACK: {PayinStatus.PAID},
}
PIX_FALLBACK_NAME = "PAGAMENTOS"
FAILURE_MESSAGES = {
    "card_declined": "The card was declined.",
    "insufficient_funds": "The card has insufficient funds.",
    "expired_card": "The card has expired.",
    "incorrect_cvc": "The card's security code is incorrect.",
    "processing_error": "An error occurred while processing the card.",
}


class InsufficientBalance(DomainError):
    code = "insufficient_balance"
    message = "Insufficient balance"


class RefundNotSupported(DomainError):
    status_code = 409
    type = "conflict"
    code = "refund_not_supported"
    message = "Boleto charges cannot be refunded"


class RailUnavailable(DomainError):
    status_code = 502
    type = "rail_error"
    code = "rail_unavailable"
    message = "The payment network is unavailable; nothing was charged. Try again."


# --- Creation --------------------------------------------------------------------------------------------------------
def payin_create(*, merchant: Merchant, livemode: bool, data: dict) -> Payin:
    """Create a charge from `payments.validation.payin_request_validate` output. PIX and BOLETO charges start
    PENDING; a card is authorized and captured by the rail within the request: PAID, FAILED, or PENDING when the
    rail did not answer in time (the reconciliation job settles it)."""
    method = data["payment_method"]
    now = timezone.now()
    payin = Payin(
        merchant=merchant, livemode=livemode, payment_method=method, amount=data["amount"],
        fee=fees.payin_fee(merchant=merchant, payment_method=method, amount=data["amount"]),
        reference_id=data["reference_id"], description=data["description"], metadata=data["metadata"],
        customer=data["customer"], items=data["items"], payer_ip=data["payer_ip"],
        is_physical_product=data["is_physical_product"], webhook_url=data["webhook_url"],
        public_token=secrets.token_urlsafe(32), created_at=now, updated_at=now,
    )
    rail = rails.for_mode(livemode)
    if method == PaymentMethod.CREDIT_CARD:
        with transaction.atomic():
            return _card_charge(payin, card=data["card"], rail=rail)
    if method == PaymentMethod.PIX:
        return _pending_charge_create(payin, data=data, rail=rail, now=now)
    with transaction.atomic():  # on SQLite the boleto number is the largest plus one: the write lock keeps it unique
        return _pending_charge_create(payin, data=data, rail=rail, now=now)


def _pending_charge_create(payin: Payin, *, data: dict, rail: rails.Rail, now: datetime) -> Payin:
    """A PIX charge or a boleto, registered with the rail, then written with its payin.created event."""
    if payin.payment_method == PaymentMethod.PIX:
        _pix_prepare(payin, expires_in=data["pix_expires_in"], now=now)
    else:
        _boleto_prepare(payin, due_date=data["boleto_due_date"], instructions=data["boleto_instructions"])
    # Registered before the charge is written: a registration that fails or times out is given up with the request
    # and leaves nothing here; one whose charge then fails to be written names a charge no payer was ever shown.
    try:
        if payin.payment_method == PaymentMethod.PIX:
            rail.pix_charge_create(key=str(payin.id), livemode=payin.livemode, txid=payin.pix_txid,
                                   amount=payin.amount, expires_at=payin.pix_expires_at)
        else:
            rail.boleto_register(key=str(payin.id), livemode=payin.livemode, nosso_numero=payin.boleto_nosso_numero,
                                 amount=payin.amount, due_date=payin.boleto_due_date)
    except RailError as exc:
        raise RailUnavailable() from exc
    # The charge, its payin.created event and the event's deliveries: one statement, all or nothing.
    event, deliveries = event_build(merchant=payin.merchant, livemode=payin.livemode, type="payin.created",
                                    obj=payin_serialize(payin), previous_status=None,
                                    webhook_url=payin.webhook_url or None)
    inserts.insert(payin, event, *deliveries)
    deliveries_enqueue_on_commit(deliveries)
    return payin


def _pix_prepare(payin: Payin, *, expires_in: int, now: datetime) -> None:
    payin.pix_txid = pix.txid_generate()
    payin.pix_expires_at = now + timedelta(seconds=expires_in)
    # Fields 59 and 60 are never empty: a name or city with no ASCII letter or digit left after folding ("☕☕")
    # gives way to the platform's name and the PIX_MERCHANT_CITY setting.
    name = merchant_display_name(payin.merchant)
    if not pix.fold_ascii(name, pix.NAME_MAX_LENGTH):
        name = PIX_FALLBACK_NAME
    city = merchant_city(payin.merchant, settings.PIX_MERCHANT_CITY)
    if not pix.fold_ascii(city, pix.CITY_MAX_LENGTH):
        city = settings.PIX_MERCHANT_CITY
    payin.pix_payload = pix.build(pix_key=settings.PIX_KEY, amount_cents=payin.amount, merchant_name=name,
                                  merchant_city=city, txid=payin.pix_txid)


def _boleto_prepare(payin: Payin, *, due_date: date, instructions: str) -> None:
    payin.boleto_nosso_numero = _nosso_numero_next()
    payin.boleto_due_date = due_date
    payin.boleto_instructions = instructions
    payin.boleto_barcode = boleto.barcode(
        bank_code=settings.BOLETO_BANK_CODE, due_date=due_date, amount_cents=payin.amount,
        free_field=boleto.free_field(nosso_numero=payin.boleto_nosso_numero))
    payin.boleto_digitable_line = boleto.digitable_line_from_barcode(payin.boleto_barcode)


def _nosso_numero_next() -> int:
    """The next boleto number: a database sequence on PostgreSQL; on SQLite, whose writers are serialized, the
    largest number so far plus one."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT nextval('payments_boleto_nosso_numero')")
        else:
            cursor.execute("SELECT COALESCE(MAX(boleto_nosso_numero), 0) + 1 FROM payments_payin")
        return cursor.fetchone()[0]


def _card_fingerprint_key() -> bytes:
    return settings.SECRET_KEY.encode() + b"/card-fingerprint"


def _card_charge(payin: Payin, *, card: dict, rail: rails.Rail) -> Payin:
    """Runs inside the caller's transaction. The simulator answers in-process; a network rail would answer within
    its own timeout, and `RailTimeout` leaves the charge PENDING for the reconciliation job."""
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
    payin.save(force_insert=True)
    try:
        result = rail.card_authorize(key=str(payin.id), livemode=payin.livemode, amount=payin.amount,
                                     installments=card["installments"], card=card_data,
                                     rail_token=token.rail_token if token else None)
    except RailTimeout:
        logger.warning("payments.card_rail_timeout", extra={"payin_id": str(payin.id)})
        _event(payin, "payin.created", previous_status=None)
        return payin
    except RailError as exc:
        raise RailUnavailable() from exc  # the whole request rolls back: no charge is left behind
    if result.status == "PAID" and token is None and card_data is not None:
        token = CardToken.objects.create(
            token="card_" + secrets.token_urlsafe(18).replace("-", "x").replace("_", "y"), merchant=payin.merchant,
            livemode=payin.livemode, rail_token=result.rail_token, brand=payin.card["brand"],
            bin=payin.card["bin"], last4=payin.card["last4"], holder_name=card_data.holder_name,
            expiration_month=card_data.expiration_month, expiration_year=card_data.expiration_year,
            fingerprint=fingerprint(card_data.number, key=_card_fingerprint_key()))
        payin.card["token"] = token.token
    return _card_result_apply(payin, status=result.status, failure_code=result.failure_code,
                              authorization_code=result.authorization_code, previous_status=None,
                              card=payin.card)


def _card_result_apply(payin: Payin, *, status: str, failure_code: str, authorization_code: str,
                       previous_status: str | None, **changes) -> Payin:
    if status == "PAID":
        return _paid(payin, authorization_code=authorization_code, previous_status=previous_status, **changes)
    if status == "FAILED":
        code = failure_code or "processing_error"
        return _transition(payin, to=PayinStatus.FAILED, previous_status=previous_status, failure_code=code,
                           failure_message=FAILURE_MESSAGES.get(code, FAILURE_MESSAGES["processing_error"]),
                           **changes)
    return payin


# --- Transitions -----------------------------------------------------------------------------------------------------
def locked(payin_id, *, merchant: Merchant | None = None, livemode: bool | None = None) -> Payin:
    """The charge, locked for this transaction; another merchant's or mode's charge does not exist."""
    return row_locked(Payin, payin_id, merchant=merchant, livemode=livemode, missing="No such charge")


def row_locked(model: type[Model], pk, *, merchant: Merchant | None, livemode: bool | None, missing: str):
    """A charge or payout row, locked for this transaction (scoped to the merchant and mode when given, else 404).
    Only the row itself: `of=("self",)` keeps the joined merchant row unlocked, which inserts referencing the
    merchant (FOR KEY SHARE) would otherwise wait on, in a cycle with the ledger locks."""
    queryset = model.objects.select_for_update(of=("self",)).select_related("merchant")
    if merchant is not None:
        queryset = queryset.filter(merchant=merchant, livemode=livemode)
    row = queryset.filter(pk=pk).first()
    if row is None:
        raise NotFound(missing)
    return row


def _transition(payin: Payin, *, to: str, previous_status: str | None = "", now: datetime | None = None,
                **changes) -> Payin:
    """Move a locked charge with one conditional update and record its event; `previous_status=None` marks a charge
    created in this status (its event's previousStatus is null)."""
    now = now or timezone.now()
    source = payin.status
    updated = Payin.objects.filter(pk=payin.pk, status__in=TRANSITIONS[to]).update(status=to, updated_at=now,
                                                                                    **changes)
    if not updated:
        raise InvalidState(f"A {source} charge cannot become {to}")
    readcache.changed(readcache.key("payin", payin.pk))
    payin.status = to
    payin.updated_at = now
    for name, value in changes.items():
        setattr(payin, name, value)
    _event(payin, f"payin.{to.lower()}", previous_status=source if previous_status == "" else previous_status)
    return payin


def _event(payin: Payin, type: str, *, previous_status: str | None) -> None:
    event_record(merchant=payin.merchant, livemode=payin.livemode, type=type, obj=payin_serialize(payin),
                 previous_status=previous_status, webhook_url=payin.webhook_url or None)


def _paid(payin: Payin, *, authorization_code: str = "", previous_status: str | None = "", **changes) -> Payin:
    """Credit the money that arrived: the net to `available` (PIX, BOLETO, test-mode cards) or to `pending` until
    the card settlement date; the fee to the platform."""
    now = timezone.now()
    changes["paid_at"] = now
    target = AccountKind.AVAILABLE
    if payin.payment_method == PaymentMethod.CREDIT_CARD:
        changes["authorization_code"] = authorization_code
        days = fees.card_settlement_days(merchant=payin.merchant, livemode=payin.livemode)
        if days > 0:
            target = AccountKind.PENDING
            changes["settle_at"] = now + timedelta(days=days)
    payin = _transition(payin, to=PayinStatus.PAID, previous_status=previous_status, now=now, **changes)
    ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="payin", object_id=str(payin.id),
                reference_id=payin.reference_id, description=f"{payin.payment_method} charge", legs=[
                    Leg(AccountKind.RAIL_IN, -payin.amount, LineType.PAYIN),
                    Leg(target, payin.amount, LineType.PAYIN),
                    Leg(target, -payin.fee, LineType.PAYIN_FEE),
                    Leg(AccountKind.FEE_REVENUE, payin.fee, LineType.PAYIN_FEE),
                ])
    return payin


def payin_pay(*, payin_id, amount: int | None = None) -> Payin | None:
    """The rail confirmed a payment. A repeated confirmation is a no-op (None), never a second credit."""
    with transaction.atomic():
        payin = locked(payin_id)
        if payin.status not in TRANSITIONS[PayinStatus.PAID]:
            if payin.status in (PayinStatus.CANCELED, PayinStatus.FAILED):  # money for a charge that is closed
                logger.error("payments.payment_for_closed_charge",
                             extra={"payin_id": str(payin.id), "status": payin.status, "received": amount})
            return None
        if amount is not None and amount != payin.amount:
            # The payer paid another amount than the charge's: the money is real, so it must not vanish, but the
            # charge does not match. Left for staff (the notification keeps the raw body); never auto-credited.
            logger.error("payments.payment_amount_mismatch",
                         extra={"payin_id": str(payin.id), "expected": payin.amount, "received": amount})
            return None
        return _paid(payin)


def payin_cancel(*, merchant: Merchant, livemode: bool, payin_id) -> Payin:
    with transaction.atomic():
        payin = locked(payin_id, merchant=merchant, livemode=livemode)
        if payin.payment_method == PaymentMethod.CREDIT_CARD:
            raise InvalidState("Card charges cannot be canceled; refund them instead")
        return _transition(payin, to=PayinStatus.CANCELED)


def payin_expire(*, payin_id, merchant: Merchant | None = None, livemode: bool | None = None) -> Payin:
    with transaction.atomic():
        payin = locked(payin_id, merchant=merchant, livemode=livemode)
        if payin.payment_method == PaymentMethod.CREDIT_CARD:
            raise InvalidState("Card charges do not expire")
        return _transition(payin, to=PayinStatus.EXPIRED)


def payin_chargeback(*, payin_id, merchant: Merchant | None = None, livemode: bool | None = None) -> Payin:
    """The payer's bank took the money back (card chargeback, Pix MED return): the whole amount leaves the available
    balance, which may go negative. Fees are not returned."""
    with transaction.atomic():
        payin = locked(payin_id, merchant=merchant, livemode=livemode)
        if payin.payment_method == PaymentMethod.BOLETO:
            raise InvalidState("Boleto payments cannot be charged back")
        payin = _transition(payin, to=PayinStatus.CHARGEBACK)
        # The whole amount (SPEC §3.3). A refund still pending holds its own money in flight: if it fails, that
        # money returns to the balance; if it succeeds, the payer got both, as in the real world.
        amount = payin.amount
        ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="payin", object_id=str(payin.id),
                    reference_id=payin.reference_id, description="Chargeback", legs=[
                        Leg(AccountKind.AVAILABLE, -amount, LineType.CHARGEBACK),
                        Leg(AccountKind.RAIL_OUT, amount, LineType.CHARGEBACK),
                    ])
        return payin


# --- Refunds ---------------------------------------------------------------------------------------------------------
def refund_create(*, merchant: Merchant, livemode: bool, payin_id, amount: int | None, reason: str) -> Refund:
    """Refund part or the rest of a paid charge from the merchant's available balance. Card refunds succeed at once;
    Pix refunds hold the money in flight until the rail confirms."""
    with transaction.atomic():
        payin = locked(payin_id, merchant=merchant, livemode=livemode)
        if payin.payment_method == PaymentMethod.BOLETO:
            raise RefundNotSupported()
        if payin.status not in (PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED):
            raise InvalidState(f"A {payin.status} charge cannot be refunded")
        left = payin.amount - payin.refunded_amount
        if amount is None:
            amount = left
        if amount < 1 or amount > left:
            raise ValidationFailed(param="amount", details=[{
                "param": "amount", "code": "refund_exceeds_remaining",
                "message": f"At most {left} cents of this charge can still be refunded."}])
        accounts = ledger.lock(merchant=payin.merchant, livemode=livemode)
        if accounts[AccountKind.AVAILABLE].balance < amount:
            raise InsufficientBalance()
        now = timezone.now()
        refund = Refund.objects.create(payin=payin, merchant=payin.merchant, livemode=livemode, amount=amount,
                                       reason=reason, created_at=now, updated_at=now)
        Payin.objects.filter(pk=payin.pk).update(refunded_amount=F("refunded_amount") + amount, updated_at=now)
        readcache.changed(readcache.key("payin", payin.pk))
        payin.refunded_amount += amount
        payin.updated_at = now
        try:
            answer = rails.for_mode(livemode).refund_create(
                key=str(refund.id), livemode=livemode, payin_key=str(payin.id),
                payment_method=payin.payment_method, amount=amount)
        except RailTimeout:
            # The rail may have refunded under this refund's id: keep it PENDING, its money held in flight, and let
            # the reconciliation job ask. Rolling back would lose it, and a retry would refund twice.
            logger.warning("payments.refund_rail_timeout", extra={"refund_id": str(refund.id)})
            answer = OperationStatus(status="PENDING")
        except RailError as exc:
            raise RailUnavailable() from exc
        held = AccountKind.RAIL_OUT if answer.status == "SUCCEEDED" else AccountKind.PAYOUTS_IN_FLIGHT
        ledger.post(merchant=payin.merchant, livemode=livemode, object_type="refund", object_id=str(refund.id),
                    reference_id=payin.reference_id, description=f"Refund of charge {payin.id}", accounts=accounts,
                    legs=[Leg(AccountKind.AVAILABLE, -amount, LineType.REFUND), Leg(held, amount, LineType.REFUND)])
        if answer.status == "SUCCEEDED":
            _refund_succeeded(refund, payin, moved=True)
        elif answer.status == "FAILED":
            _refund_failed(refund, payin, failure_code=answer.failure_code)
        return refund


def refund_resolve(*, refund_id, status: str, failure_code: str = "") -> Refund | None:
    """The rail's answer about a PENDING refund; a repeated answer is a no-op (None)."""
    with transaction.atomic():
        refund = Refund.objects.filter(pk=refund_id).only("payin_id").first()
        if refund is None:
            return None
        payin = locked(refund.payin_id)
        refund = Refund.objects.select_for_update().get(pk=refund_id)
        if refund.status != RefundStatus.PENDING or status not in (RefundStatus.SUCCEEDED, RefundStatus.FAILED):
            return None
        if status == RefundStatus.SUCCEEDED:
            _refund_succeeded(refund, payin, moved=False)
        else:
            _refund_failed(refund, payin, failure_code=failure_code or "rail_error")
        return refund


def _refund_set(refund: Refund, status: str, **changes) -> None:
    now = timezone.now()
    Refund.objects.filter(pk=refund.pk, status=RefundStatus.PENDING).update(status=status, updated_at=now, **changes)
    refund.status = status
    refund.updated_at = now
    for name, value in changes.items():
        setattr(refund, name, value)


def _refund_succeeded(refund: Refund, payin: Payin, *, moved: bool) -> None:
    _refund_set(refund, RefundStatus.SUCCEEDED)
    if not moved:
        ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="refund", object_id=str(refund.id),
                    reference_id=payin.reference_id, description="Refund confirmed by the rail", legs=[
                        Leg(AccountKind.PAYOUTS_IN_FLIGHT, -refund.amount, LineType.REFUND),
                        Leg(AccountKind.RAIL_OUT, refund.amount, LineType.REFUND),
                    ])
    event_record(merchant=payin.merchant, livemode=payin.livemode, type="refund.succeeded",
                 obj=refund_serialize(refund), previous_status=RefundStatus.PENDING,
                 webhook_url=payin.webhook_url or None)
    refunded = Refund.objects.filter(payin=payin, status=RefundStatus.SUCCEEDED).aggregate(t=Sum("amount"))["t"]
    to = PayinStatus.REFUNDED if refunded == payin.amount else PayinStatus.PARTIALLY_REFUNDED
    if payin.status in TRANSITIONS[to]:  # a charge charged back meanwhile keeps that status
        _transition(payin, to=to)


def _refund_failed(refund: Refund, payin: Payin, *, failure_code: str) -> None:
    _refund_set(refund, RefundStatus.FAILED, failure_code=failure_code)
    now = timezone.now()
    Payin.objects.filter(pk=payin.pk).update(refunded_amount=F("refunded_amount") - refund.amount, updated_at=now)
    readcache.changed(readcache.key("payin", payin.pk))
    payin.refunded_amount -= refund.amount
    payin.updated_at = now
    ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="refund", object_id=str(refund.id),
                reference_id=payin.reference_id, description="Refund failed: money returned to the balance", legs=[
                    Leg(AccountKind.PAYOUTS_IN_FLIGHT, -refund.amount, LineType.REFUND),
                    Leg(AccountKind.AVAILABLE, refund.amount, LineType.REFUND),
                ])
    event_record(merchant=payin.merchant, livemode=payin.livemode, type="refund.failed",
                 obj=refund_serialize(refund), previous_status=RefundStatus.PENDING,
                 webhook_url=payin.webhook_url or None)


# --- Jobs ------------------------------------------------------------------------------------------------------------
BATCH = 500


def payins_expire(*, now: datetime | None = None) -> int:
    """Expire PENDING Pix charges past their expiration and boletos past their due date (America/Sao_Paulo)."""
    now = now or timezone.now()
    today = timezone.localtime(now, timezone=_sao_paulo()).date()
    due = list(Payin.objects.filter(status=PayinStatus.PENDING, payment_method=PaymentMethod.PIX,
                                    pix_expires_at__lte=now).values_list("pk", flat=True)[:BATCH])
    due += list(Payin.objects.filter(status=PayinStatus.PENDING, payment_method=PaymentMethod.BOLETO,
                                     boleto_due_date__lt=today).values_list("pk", flat=True)[:BATCH])
    expired = 0
    for payin_id in due:
        try:
            payin_expire(payin_id=payin_id)
            expired += 1
        except InvalidState:  # paid or canceled a moment ago: nothing to expire
            pass
    return expired


def card_settlements_release(*, now: datetime | None = None) -> int:
    """Move card money whose settlement date has come from `pending` to `available`."""
    now = now or timezone.now()
    released = 0
    for payin_id in Payin.objects.filter(settle_at__lte=now).values_list("pk", flat=True)[:BATCH]:
        with transaction.atomic():
            payin = locked(payin_id)
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
    for payin_id, livemode in (Payin.objects.filter(status=PayinStatus.PENDING,
                                                    payment_method=PaymentMethod.CREDIT_CARD, created_at__lte=cutoff)
                               .values_list("pk", "livemode")[:BATCH]):
        try:
            result = rails.for_mode(livemode).card_status(key=str(payin_id))
        except RailError:
            logger.warning("payments.card_reconcile_rail_error", extra={"payin_id": str(payin_id)})
            continue
        if result.status == "PENDING":
            continue
        with transaction.atomic():
            payin = locked(payin_id)
            if payin.status == PayinStatus.PENDING:
                _card_result_apply(payin, status=result.status, failure_code=result.failure_code,
                                   authorization_code=result.authorization_code, previous_status="")
                resolved += 1
    return resolved


def refunds_reconcile(*, older_than: timedelta = timedelta(seconds=0), refund_ids: list | None = None) -> int:
    """Ask the rail about PENDING refunds (outside any transaction) and record its answers."""
    queryset = Refund.objects.filter(status=RefundStatus.PENDING, created_at__lte=timezone.now() - older_than)
    if refund_ids is not None:
        queryset = queryset.filter(pk__in=refund_ids)
    resolved = 0
    for refund_id, livemode in queryset.values_list("pk", "livemode")[:BATCH]:
        try:
            answer = rails.for_mode(livemode).refund_status(key=str(refund_id))
        except RailError:
            logger.warning("payments.refund_reconcile_rail_error", extra={"refund_id": str(refund_id)})
            continue
        if refund_resolve(refund_id=refund_id, status=answer.status, failure_code=answer.failure_code):
            resolved += 1
    return resolved


def _sao_paulo():
    from zoneinfo import ZoneInfo

    return ZoneInfo("America/Sao_Paulo")


def sao_paulo_today() -> date:
    return timezone.localtime(timezone.now(), timezone=_sao_paulo()).date()


# --- Staff -----------------------------------------------------------------------------------------------------------
def adjustment_create(*, merchant: Merchant, livemode: bool, amount: int, reason: str, staff) -> BalanceAdjustment:
    """Credit (positive) or debit (negative) a merchant's available balance; it may go negative, as a chargeback's
    can. Shown in the statement as an `adjustment` line carrying the reason."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount == 0:
        raise ValueError("an adjustment is a non-zero integer of cents")
    if not reason.strip():
        raise ValueError("an adjustment needs a reason")
    with transaction.atomic():
        adjustment = BalanceAdjustment.objects.create(merchant=merchant, livemode=livemode, amount=amount,
                                                      reason=reason.strip(), created_by=staff)
        ledger.post(merchant=merchant, livemode=livemode, object_type="adjustment", object_id=str(adjustment.id),
                    description=adjustment.reason, legs=[
                        Leg(AccountKind.AVAILABLE, amount, LineType.ADJUSTMENT),
                        Leg(AccountKind.ADJUSTMENTS, -amount, LineType.ADJUSTMENT),
                    ])
    return adjustment
