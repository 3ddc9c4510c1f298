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
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import Merchant
from accounts.selectors import merchant_city, merchant_display_name
from accounts.signals import MEMO_ATTRIBUTE
from core.dates import sao_paulo_date
from core.errors import DomainError, InvalidState
from integrations.idempotency import effect_statement
from payments import policy, rails
from payments.formats import boleto, pix
from payments.models import (
    Payin,
    PayinStatus,
    PaymentMethod,
    UnmatchedKind,
)
from payments.payins.cards import card_charge
from payments.payins.charge_insert import charge_insert
from payments.payins.errors import RailUnavailable
from payments.payins.rail_charges import live_card_create, notification_url, rail_charge_reconcile
from payments.payins.serializers import payin_serialize
from payments.payins.transitions import BATCH, TRANSITIONS, payin_locked, payin_mark_paid, payin_transition
from payments.rails.base import RailError, RailRefused
from payments.unmatched.services import unmatched_record
from webhooks.services import deliveries_enqueue_on_commit, event_build

logger = logging.getLogger(__name__)


PIX_FALLBACK_NAME = "PAGAMENTOS"
_PIX_NAMES = "payins.pix_names"  # its key in a cached merchant's memo (MEMO_ATTRIBUTE)


class PaymentMethodUnavailable(DomainError):
    status_code = 400
    type = "invalid_request_error"
    code = "payment_method_unavailable"
    message = "This payment method is not available in live mode yet"

    def __init__(self, method: str):
        super().__init__(f"{method} is not available in live mode yet: the payment network for it is not connected",
                         param="paymentMethod")


# --- Creation --------------------------------------------------------------------------------------------------------
def payin_create(*, merchant: Merchant, livemode: bool, data: dict) -> Payin:
    """Create a charge from `payments.payins.validation.payin_request_validate` output. PIX and BOLETO charges start
    PENDING; a card is authorized and captured by the rail within the request: PAID, FAILED, or PENDING when the
    rail did not answer (the reconciliation job settles it)."""
    return payin_create_answered(merchant=merchant, livemode=livemode, data=data)[0]


def payin_create_answered(*, merchant: Merchant, livemode: bool, data: dict) -> tuple[Payin, dict]:
    """`payin_create`, and the charge as the API answers it (`payin_serialize`): for a PIX charge or a boleto, the
    object its payin.created event carries, serialized once for both; for a card, as the rail left it."""
    method = data["payment_method"]
    rail = rails.for_mode(livemode)
    if method not in rail.payment_methods:  # never a simulated success in place of a rail that does not exist
        raise PaymentMethodUnavailable(method)
    now = timezone.now()
    payin = Payin(
        merchant=merchant, livemode=livemode, payment_method=method, amount=data["amount"],
        fee=policy.payin_fee(merchant=merchant, payment_method=method, amount=data["amount"]),
        reference_id=data["reference_id"], description=data["description"], metadata=data["metadata"],
        customer=data["customer"], items=data["items"], payer_ip=data["payer_ip"],
        is_physical_product=data["is_physical_product"], webhook_url=data["webhook_url"],
        public_token=secrets.token_urlsafe(32), created_at=now, updated_at=now,
    )
    if method == PaymentMethod.CREDIT_CARD and rail.card_tokens_only:  # the rail's own charge, paid by its token
        payin = live_card_create(payin, card=data["card"], rail=rail)
        return payin, payin_serialize(payin)
    if method == PaymentMethod.CREDIT_CARD:  # outside any transaction: card_charge commits before it calls the rail
        payin = card_charge(payin, card=data["card"], rail=rail)
        return payin, payin_serialize(payin)
    return payin, _pending_charge_create(payin, data=data, rail=rail, now=now)


def _pending_charge_create(payin: Payin, *, data: dict, rail: rails.Rail, now: datetime) -> dict:
    """A PIX charge or a boleto, registered with the rail, then written with its payin.created event; the charge
    serialized, as the event carries it."""
    if payin.payment_method == PaymentMethod.PIX:
        _pix_prepare(payin, expires_in=data["pix_expires_in"], now=now, dynamic=rail.dynamic_pix,
                     static_pix_key=rail.static_pix_key)
    elif rail.boleto_registered:  # the bank numbers and draws it: nothing of ours to prepare
        payin.boleto_due_date = data["boleto_due_date"]
        payin.boleto_instructions = data["boleto_instructions"]
    else:
        _boleto_prepare(payin, due_date=data["boleto_due_date"], instructions=data["boleto_instructions"])
    # Registered before the charge is written: a registration that fails or times out is given up with the request
    # and leaves nothing here; one whose charge then fails to be written names a charge no payer was ever shown.
    try:
        if payin.payment_method == PaymentMethod.PIX:
            payload = rail.pix_charge_create(
                key=str(payin.id), livemode=payin.livemode, txid=payin.pix_txid, amount=payin.amount,
                expires_at=payin.pix_expires_at, payer_document=payin.customer.get("document") or "",
                payer_name=payin.customer.get("name") or "", description=payin.description)
            if payload:  # the rail's own dynamic code
                payin.pix_payload = payload
        elif rail.boleto_registered:
            registration = rail.boleto_register(
                key=str(payin.id), livemode=payin.livemode, nosso_numero=None, amount=payin.amount,
                due_date=payin.boleto_due_date, items=payin.items, description=payin.description,
                customer=payin.customer, instructions=payin.boleto_instructions,
                fine_bps=policy.boleto_fine_bps(payin.merchant),
                interest_bps_month=policy.boleto_interest_bps(payin.merchant),
                days_to_write_off=settings.BOLETO_DAYS_TO_WRITE_OFF, notification_url=notification_url(rail))
            # One charge payable by barcode or by Pix: the bank's line, barcode, PDF and Pix code.
            payin.rail_charge_id = int(registration.charge_ref)
            payin.boleto_barcode = registration.barcode
            payin.boleto_digitable_line = registration.digitable_line
            payin.pix_payload = registration.pix_qrcode
            payin.boleto_pdf_url = registration.pdf_url[:500]
        else:
            rail.boleto_register(key=str(payin.id), livemode=payin.livemode, nosso_numero=payin.boleto_nosso_numero,
                                 amount=payin.amount, due_date=payin.boleto_due_date)
    except RailError as exc:
        # A registration whose answer was lost may exist at the bank: a boleto no payer was ever shown, which
        # expires there (its notifications name no charge of ours and move nothing).
        raise RailUnavailable() from exc
    # The charge, its payin.created event and the event's deliveries: one statement, all or nothing.
    body = payin_serialize(payin)
    event, deliveries = event_build(merchant=payin.merchant, livemode=payin.livemode, type="payin.created", obj=body,
                                    previous_status=None, webhook_url=payin.webhook_url or None)
    with effect_statement():
        charge_insert(payin, event=event, deliveries=deliveries)
    deliveries_enqueue_on_commit(deliveries)
    return body


def _pix_prepare(payin: Payin, *, expires_in: int, now: datetime, dynamic: bool, static_pix_key: str) -> None:
    payin.pix_expires_at = now + timedelta(seconds=expires_in)
    if dynamic:  # the rail registers the charge under its id (26-35 letters and digits) and makes the code
        payin.pix_txid = payin.id.hex
        return
    payin.pix_txid = pix.txid_generate()
    name, city = _pix_names(payin.merchant)
    payin.pix_payload = pix.build(pix_key=static_pix_key, amount_cents=payin.amount, merchant_name=name,
                                  merchant_city=city, txid=payin.pix_txid)


def _pix_names(merchant: Merchant) -> tuple[str, str]:
    """The merchant's name and city for fields 59 and 60, never empty: a name or city with no ASCII letter or digit
    left after folding ("☕☕") gives way to the platform's name and the PIX_MERCHANT_CITY setting. Kept with a
    merchant held by the API's key cache (`accounts.signals.MEMO_ATTRIBUTE`: a change to its name or KYC drops it):
    the KYC read raised and caught twice a charge when there is none: 33,000 instructions of the 89,000 here."""
    memo = merchant.__dict__.get(MEMO_ATTRIBUTE)
    if memo is not None and _PIX_NAMES in memo:
        return memo[_PIX_NAMES]
    name = merchant_display_name(merchant)
    if not pix.fold_ascii(name, pix.NAME_MAX_LENGTH):
        name = PIX_FALLBACK_NAME
    city = merchant_city(merchant, settings.PIX_MERCHANT_CITY)
    if not pix.fold_ascii(city, pix.CITY_MAX_LENGTH):
        city = settings.PIX_MERCHANT_CITY
    if memo is not None:
        memo[_PIX_NAMES] = name, city
    return name, city


def _boleto_prepare(payin: Payin, *, due_date: date, instructions: str) -> None:
    payin.boleto_nosso_numero = _nosso_numero_next()
    payin.boleto_due_date = due_date
    payin.boleto_instructions = instructions
    payin.boleto_barcode = boleto.barcode(
        bank_code=settings.BOLETO_BANK_CODE, due_date=due_date, amount_cents=payin.amount,
        free_field=boleto.free_field(nosso_numero=payin.boleto_nosso_numero))
    payin.boleto_digitable_line = boleto.digitable_line_from_barcode(payin.boleto_barcode)


def _nosso_numero_next() -> int:
    """The next boleto number, from its database sequence (migration 0001 creates it)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval('payments_boleto_nosso_numero')")
        return cursor.fetchone()[0]


def payin_pay(*, payin_id, amount: int | None = None, end_to_end_id: str = "", payer_name: str = "",
              payer_document: str = "", registered: bool = False) -> Payin | None:
    """The rail confirmed a payment naming this charge. A PENDING (or EXPIRED) charge paid its exact amount becomes
    PAID; any other money becomes an unmatched payment (another amount, a second payment, a payment after a cancel),
    never lost and never credited as the charge. The payment that paid the charge, told again, is a no-op (None).
    `registered`: a boleto the bank registered, which takes the amount it charges (with a late payment's fine and
    interest): its first payment pays it whatever the amount, recorded as `paidAmount`."""
    with transaction.atomic():
        payin = payin_locked(payin_id)
        received = payin.amount if amount is None else amount
        if end_to_end_id and end_to_end_id == payin.pix_end_to_end_id:
            return None  # the payment that paid it, seen again (a repeated notice, reconciliation)
        if payin.status in TRANSITIONS[PayinStatus.PAID]:
            if registered and received >= payin.amount:
                return payin_mark_paid(payin, pix_end_to_end_id=end_to_end_id, received=received)
            if received == payin.amount:
                if end_to_end_id:
                    return payin_mark_paid(payin, pix_end_to_end_id=end_to_end_id)
                return payin_mark_paid(payin)
            kind = UnmatchedKind.AMOUNT_MISMATCH
        elif payin.status in (PayinStatus.CANCELED, PayinStatus.FAILED):
            kind = UnmatchedKind.AFTER_CANCEL
        else:  # PAID, PARTIALLY_REFUNDED, REFUNDED, CHARGEBACK: it was paid already
            kind = UnmatchedKind.DUPLICATE
        if not end_to_end_id:  # a rail that names no payment: nothing could tell a repeat from a new one
            logger.error("payments.unmatched_without_payment_id", extra={"payin_id": str(payin.id), "kind": kind})
            return None
        unmatched_record(merchant=payin.merchant, livemode=payin.livemode, kind=kind, amount=received,
                         end_to_end_id=end_to_end_id, payin=payin, payer_name=payer_name,
                         payer_document=payer_document)
        return None


def payin_cancel(*, merchant: Merchant, livemode: bool, payin_id) -> Payin:
    """Cancel a PENDING PIX or BOLETO charge. A charge the rail registered is removed there first, with no
    transaction open: if the bank says it was paid meanwhile, the payment is recorded and the cancel refused."""
    rail = rails.for_mode(livemode)
    if rail.dynamic_pix or rail.boleto_registered:
        payin = Payin.objects.filter(pk=payin_id, merchant=merchant, livemode=livemode).only(
            "status", "payment_method", "pix_txid", "rail_charge_id", "rail_notification_token").first()
        pending = payin is not None and payin.status == PayinStatus.PENDING
        if pending and payin.payment_method == PaymentMethod.PIX and rail.dynamic_pix:
            _pix_charge_remove(rail, payin)
        elif pending and payin.payment_method == PaymentMethod.BOLETO and payin.rail_charge_id is not None:
            _rail_charge_cancel(rail, payin)
    with transaction.atomic():
        payin = payin_locked(payin_id, merchant=merchant, livemode=livemode)
        if payin.payment_method == PaymentMethod.CREDIT_CARD:
            raise InvalidState("Card charges cannot be canceled; refund them instead")
        return payin_transition(payin, to=PayinStatus.CANCELED)


def _pix_charge_remove(rail: rails.Rail, payin: Payin) -> None:
    try:
        rail.pix_charge_cancel(key=str(payin.id), txid=payin.pix_txid)
    except RailRefused as exc:
        # No longer removable at the bank: it was paid. Record what the bank holds, then refuse the cancel.
        logger.info("payments.cancel_refused_by_rail", extra={"payin_id": str(payin.id)})
        payin_payments_apply(rail, payin)
        raise InvalidState(gettext("The payer has already paid this charge")) from exc
    except RailError as exc:
        raise RailUnavailable("The payment network is unavailable; the charge was not canceled. Try again.") from exc


def _rail_charge_cancel(rail: rails.Rail, payin: Payin) -> None:
    """Cancel a registered boleto at the bank first. Refused there: the bank says why; paid, the payment is recorded
    and the cancel refused (the payment wins); already ended at the bank, the cancel goes on here."""
    try:
        rail.charge_cancel(charge_ref=str(payin.rail_charge_id))
        return
    except RailRefused:
        pass
    except RailError as exc:
        raise RailUnavailable("The payment network is unavailable; the charge was not canceled. Try again.") from exc
    try:
        state = rail.charge_get(charge_ref=str(payin.rail_charge_id))
        if state is not None and state.status == "PAID":
            rail_charge_reconcile(rail, payin)
    except RailError as exc:
        raise RailUnavailable("The payment network is unavailable; the charge was not canceled. Try again.") from exc
    if state is None or state.status not in ("CANCELED", "EXPIRED"):
        logger.info("payments.cancel_refused_by_rail", extra={"payin_id": str(payin.id)})
        raise InvalidState(gettext("The payer has already paid this charge"))


def payin_payments_apply(rail: rails.Rail, payin: Payin) -> int:
    """Ask the rail for the payments of one registered Pix charge (outside any transaction) and record them."""
    applied = 0
    for notification in rail.pix_charge_payments(txid=payin.pix_txid):
        if notification.kind == "payin.paid" and notification.txid == payin.pix_txid:
            applied += payin_pay(payin_id=payin.pk, amount=notification.amount,
                                 end_to_end_id=notification.end_to_end_id, payer_name=notification.payer_name,
                                 payer_document=notification.payer_document) is not None
    return applied


def payin_expire(*, payin_id, merchant: Merchant | None = None, livemode: bool | None = None) -> Payin:
    with transaction.atomic():
        payin = payin_locked(payin_id, merchant=merchant, livemode=livemode)
        if payin.payment_method == PaymentMethod.CREDIT_CARD:
            raise InvalidState("Card charges do not expire")
        return payin_transition(payin, to=PayinStatus.EXPIRED)


def payins_expire(*, now: datetime | None = None) -> int:
    """Expire PENDING Pix charges past their expiration and boletos past their due date (America/Sao_Paulo)."""
    now = now or timezone.now()
    today = sao_paulo_date(now)
    due = list(Payin.objects.filter(status=PayinStatus.PENDING, payment_method=PaymentMethod.PIX,
                                    pix_expires_at__lte=now).values_list("pk", flat=True)[:BATCH])
    # A boleto the bank registered is the bank's to expire (its `expired` status, after the days it still takes
    # payment past the due date): a payment after the due date still pays it.
    due += list(Payin.objects.filter(status=PayinStatus.PENDING, payment_method=PaymentMethod.BOLETO,
                                     boleto_due_date__lt=today, rail_charge_id__isnull=True)
                .values_list("pk", flat=True)[:BATCH])
    expired = 0
    for payin_id in due:
        try:
            payin_expire(payin_id=payin_id)
            expired += 1
        except InvalidState:  # paid or canceled a moment ago: nothing to expire
            pass
    return expired
