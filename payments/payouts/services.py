"""Pix payouts (SPEC §4): never overdraw, never pay twice.

- **Never overdraw.** A payout is accepted in one transaction whose last statement, the PL/pgSQL function
  `payments_payout_reserve` (`payments.payouts.reserve`), locks the merchant's ledger accounts (in id order, as every
  movement does), checks the day's limit and `available ≥ amount + fee` under that lock, and moves amount + fee to
  "in flight" before the transaction commits. Refunds take the same locks, so no two movements can spend the same
  cents.
- **Never pay twice.** The worker moves the payout PENDING → PROCESSING (conditional update) before it calls the rail,
  and the call carries the payout id as its idempotency key. A worker killed between the send and the record leaves
  a PROCESSING payout; the reconciliation job asks the rail for its status by that key and records the answer. It
  sends only a payout the rail says it never received, and again under the same key, so even a race between two
  reconcilers cannot make the rail pay twice.
- Rail calls happen outside database transactions; each answer is recorded in a transaction of its own.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Callable
from datetime import UTC

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from accounts.models import AccountEvent, Merchant
from core.codes import random_code
from core.dates import sao_paulo_today
from core.errors import DomainError, InvalidState, NotFound
from integrations.idempotency import effect_record
from payments import policy, rails
from payments.ledger import services as ledger
from payments.ledger.services import InsufficientBalance, Leg
from payments.models import AccountKind, LineType, Payout, PayoutDailyTotal, PayoutStatus
from payments.payouts import reserve
from payments.payouts.dispatch import dispatch_soon
from payments.payouts.serializers import payout_serialize
from payments.payouts.worker import payouts_moved
from payments.rails.base import OperationStatus
from payments.rows import row_locked
from webhooks.services import event_record, events_record

logger = logging.getLogger(__name__)

TRANSITIONS = {
    PayoutStatus.PROCESSING: {PayoutStatus.PENDING},
    PayoutStatus.COMPLETED: {PayoutStatus.PROCESSING},
    PayoutStatus.FAILED: {PayoutStatus.PENDING, PayoutStatus.PROCESSING},
    PayoutStatus.CANCELED: {PayoutStatus.PENDING},
    PayoutStatus.RETURNED: {PayoutStatus.COMPLETED},
}
FAILURE_MESSAGES = {
    "pix_key_not_found": "The Pix key does not exist.",
    "rejected_by_bank": "The receiving bank rejected the payout.",
    "beneficiary_mismatch": "The Pix key belongs to someone else than the beneficiary given.",
    "rail_error": "The payment network could not process the payout.",
}
_E2E_ALPHABET = string.ascii_letters + string.digits


class DuplicateReferenceId(DomainError):
    status_code = 409
    type = "conflict"
    code = "duplicate_reference_id"
    message = gettext_lazy("A payout with this referenceId already exists")


class PayoutLimitExceeded(DomainError):
    code = "payout_limit_exceeded"
    message = gettext_lazy("The payout exceeds the merchant's limit")
    validation_kind = True


class BeneficiaryMismatch(DomainError):  # reported by payouts.validation, by code
    code = "beneficiary_mismatch"
    message = gettext_lazy("The beneficiary document is not the document of the Pix key")
    validation_kind = True


def end_to_end_id(now=None) -> str:
    """The Pix end-to-end id: E + the ISPB + yyyyMMddHHmm (UTC) + 11 random alphanumerics, 32 characters."""
    now = (now or timezone.now()).astimezone(UTC)
    suffix = random_code(11, _E2E_ALPHABET)
    return f"E{settings.PIX_ISPB}{now:%Y%m%d%H%M}{suffix}"


# --- Creation --------------------------------------------------------------------------------------------------------
def payout_create(*, merchant: Merchant, livemode: bool, data: dict,
                  audit: Callable[[Payout], AccountEvent] | None = None) -> Payout:
    """Accept a payout from `payments.payouts.validation.payout_request_validate` output, or refuse it with nothing
    written (duplicate referenceId, the day's limit, the balance). `audit` builds the caller's audit entry for the
    payout, saved in the payout's transaction (so there is none if the payout is refused)."""
    return payout_create_answered(merchant=merchant, livemode=livemode, data=data, audit=audit)[0]


def payout_create_answered(*, merchant: Merchant, livemode: bool, data: dict,
                           audit: Callable[[Payout], AccountEvent] | None = None) -> tuple[Payout, dict]:
    """`payout_create`, and the payout as the API answers it (`payout_serialize`): the object its payout.created
    event carries, serialized once for both."""
    amount = data["amount"]
    fee = policy.payout_fee(merchant=merchant, amount=amount)
    now = timezone.now()
    payout = Payout(
        merchant=merchant, livemode=livemode, amount=amount, fee=fee, pix_key=data["pix_key_as_sent"],
        pix_key_normalized=data["pix_key"], pix_key_type=data["pix_key_type"],
        reference_id=data["reference_id"], external_id=end_to_end_id(now),
        beneficiary_name=data["beneficiary_name"], beneficiary_document=data["beneficiary_document"],
        description=data["description"], metadata=data["metadata"], webhook_url=data["webhook_url"],
        local_date=sao_paulo_today(), created_at=now, updated_at=now)
    daily_max = policy.payout_daily_max(merchant)
    body = payout_serialize(payout)
    try:
        with transaction.atomic():
            # The payout and its event first, before any lock: a referenceId already taken fails here (the unique
            # constraint), and the ledger lock is held only for the decision's one statement and the COMMIT.
            payout.save(force_insert=True)
            if audit is not None:
                audit(payout).save()
            event_record(merchant=merchant, livemode=livemode, type="payout.created", obj=body,
                         webhook_url=payout.webhook_url or None)
            effect_record()
            _reserve(payout, daily_max=daily_max)
        transaction.on_commit(dispatch_soon)
    except IntegrityError:
        existing = (Payout.objects.filter(merchant=merchant, livemode=livemode, reference_id=data["reference_id"])
                    .values_list("pk", flat=True).first())
        if existing is None:
            raise
        raise DuplicateReferenceId(param="referenceId", details=[{
            "param": "referenceId", "code": "duplicate_reference_id",
            "message": gettext("A payout with this referenceId already exists."),
            "existingId": str(existing)}]) from None
    return payout, body


def _reserve(payout: Payout, *, daily_max: int) -> None:
    """The payout's balance decision, in the caller's transaction and as its last statement: the PL/pgSQL function
    `payments_payout_reserve` (`payments.payouts.reserve`) locks the merchant's ledger accounts, adds the payout to
    the day's total, and refuses it past the daily limit or beyond the available balance (amount + fee), else moves
    amount + fee from available to in flight. A refusal raises here, and the caller's transaction rolls back the
    total with the payout."""
    decision = reserve.payout_reserve(payout=payout, daily_max=daily_max, created_at=timezone.now(),
                                      description=f"Pix payout to {payout.pix_key_type} key")
    if decision.outcome == reserve.LIMIT:
        raise PayoutLimitExceeded(
            gettext("The day's payouts would reach %(used)s cents; the daily limit is %(daily_max)s") % {
                "used": decision.day_total, "daily_max": daily_max}, param="amount")
    if decision.outcome == reserve.BALANCE:
        raise InsufficientBalance()
    if decision.outcome != reserve.OK:
        raise RuntimeError(f"payments_payout_reserve answered {decision.outcome!r}")


def _daily_total_take_off(payout: Payout) -> None:
    """Take a payout that will never leave off its day's total: the row `payments_payout_reserve` added it to (the
    merchant, the mode, the payout's São Paulo day). Called under the merchant's ledger lock, which orders every
    change of the row."""
    scope = {"merchant_id": payout.merchant_id, "livemode": payout.livemode, "day": payout.local_date}
    total = PayoutDailyTotal.objects.filter(**scope).first()
    if total is None:
        PayoutDailyTotal.objects.create(**scope, amount=-payout.amount)
    else:
        total.amount -= payout.amount
        total.save(update_fields=["amount"])


def _event_fields(payout: Payout, type: str, *, previous_status: str | None) -> dict:
    """`event_record`'s arguments for a payout's event."""
    endpoints = getattr(payout, "enabled_endpoints", None)  # read with the row by payouts.worker.payouts_moved
    return {"merchant": payout.merchant, "livemode": payout.livemode, "type": type, "obj": payout_serialize(payout),
            "previous_status": previous_status, "webhook_url": payout.webhook_url or None,
            "endpoints": None if endpoints is None else [e for e in endpoints if e.wants(type)]}


def _event(payout: Payout, type: str, *, previous_status: str | None) -> None:
    """The payout's event, in the caller's transaction, which is the request's effect (`effect_record`)."""
    event_record(**_event_fields(payout, type, previous_status=previous_status))
    effect_record()


# --- Transitions -----------------------------------------------------------------------------------------------------
def _locked(payout_id, *, merchant: Merchant | None = None, livemode: bool | None = None) -> Payout:
    return row_locked(Payout, payout_id, merchant=merchant, livemode=livemode, missing="No such payout")


def _transition(payout: Payout, *, to: str, now=None, **changes) -> Payout:
    now = now or timezone.now()
    source = payout.status
    if not Payout.objects.filter(pk=payout.pk, status__in=TRANSITIONS[to]).update(status=to, updated_at=now,
                                                                                  **changes):
        raise InvalidState(gettext("A payout in status %(source)s cannot become %(to)s") % {"source": source, "to": to})
    payout.status = to
    payout.updated_at = now
    for name, value in changes.items():
        setattr(payout, name, value)
    _event(payout, f"payout.{to.lower()}", previous_status=source)
    return payout


def _money_back(payout: Payout, amount: int, description: str) -> None:
    """A payout that will never leave (canceled, failed): amount + fee back to `available`, and its amount off the
    day's total."""
    ledger.post(merchant=payout.merchant, livemode=payout.livemode, object_type="payout", object_id=str(payout.id),
                reference_id=payout.reference_id, description=description, legs=[
                    Leg(AccountKind.PAYOUTS_IN_FLIGHT, -amount, LineType.PAYOUT_REVERSAL),
                    Leg(AccountKind.AVAILABLE, amount, LineType.PAYOUT_REVERSAL),
                ])
    _daily_total_take_off(payout)


def payout_cancel(*, merchant: Merchant, livemode: bool, payout_id) -> Payout:
    """Cancel a payout the worker has not started; amount + fee go back to `available`."""
    with transaction.atomic():
        payout = _transition(_locked(payout_id, merchant=merchant, livemode=livemode), to=PayoutStatus.CANCELED)
        _money_back(payout, payout.amount + payout.fee, "Payout canceled")
        return payout


def payout_start(*, payout_id) -> Payout | None:
    """PENDING → PROCESSING: the one moment a payout may be sent. None when it is not PENDING any more."""
    started = payouts_start(payout_ids=[payout_id])
    return started[0] if started else _exists(payout_id)


def payouts_start(*, payout_ids: list) -> list[Payout]:
    """`payout_start` for several payouts in one transaction: the ones that were PENDING, now PROCESSING, with
    their events; the others (another status, or none) left out."""
    with transaction.atomic():  # one conditional UPDATE takes the rows, checks and moves them (payouts.worker)
        payouts = payouts_moved(payout_ids, to=PayoutStatus.PROCESSING, sources=(PayoutStatus.PENDING,))
        events_record([_event_fields(payout, "payout.processing", previous_status=PayoutStatus.PENDING)
                       for payout in payouts])
        if payouts:
            effect_record()  # the sandbox's `complete` starts a payout within its request
        return payouts


def _exists(payout_id) -> None:
    """After a conditional UPDATE that moved nothing: None for a payout in another status, NotFound for none."""
    if not Payout.objects.filter(pk=payout_id).exists():
        raise NotFound("No such payout")


def _complete(payout_ids: list) -> list[Payout]:
    """PROCESSING → COMPLETED for those of the payouts, all of one merchant and mode, that are PROCESSING (the
    others left out), their events, then their movements: the ledger lock last, once."""
    now = timezone.now()
    payouts = payouts_moved(payout_ids, to=PayoutStatus.COMPLETED, sources=(PayoutStatus.PROCESSING,), now=now,
                            completed_at=now)
    if not payouts:
        return []
    events_record([_event_fields(payout, "payout.completed", previous_status=PayoutStatus.PROCESSING)
                   for payout in payouts])
    effect_record()
    merchant, livemode = payouts[0].merchant, payouts[0].livemode
    if any(payout.merchant_id != merchant.pk or payout.livemode != livemode for payout in payouts):
        raise ValueError("payouts of one merchant and mode only")  # the caller groups them (payouts_complete)
    ledger.post_many(merchant=merchant, livemode=livemode, movements=[
        ledger.Movement(object_type="payout", object_id=str(payout.id), reference_id=payout.reference_id,
                        description="Payout completed",
                        legs=[Leg(AccountKind.PAYOUTS_IN_FLIGHT, -(payout.amount + payout.fee), LineType.PAYOUT),
                              Leg(AccountKind.RAIL_OUT, payout.amount, LineType.PAYOUT),
                              Leg(AccountKind.FEE_REVENUE, payout.fee, LineType.PAYOUT_FEE)])
        for payout in sorted(payouts, key=lambda payout: payout.pk)])
    return payouts


def payouts_complete(payouts: list[Payout]) -> None:
    """Record the rail's confirmation of these payouts: a transaction for each merchant and mode among them (so a
    batch never holds one merchant's ledger lock while it writes another's movements)."""
    groups: dict[tuple, list] = {}
    for payout in payouts:
        groups.setdefault((payout.merchant_id, payout.livemode), []).append(payout.pk)
    for ids in groups.values():
        try:  # one merchant's failure (a lock timeout) leaves the others' completions, and its own to reconciliation
            with transaction.atomic():
                _complete(ids)
        except Exception:
            logger.exception("payments.payouts_complete_failed", extra={"payout_ids": [str(pk) for pk in ids]})


def payout_resolve(*, payout_id, answer: OperationStatus) -> Payout | None:
    """Record the rail's answer about a payout; a repeated or stale answer is a no-op (None)."""
    with transaction.atomic():
        if answer.status == "SUCCEEDED":  # the usual answer: no read before the conditional UPDATE
            completed = _complete([payout_id])
            return completed[0] if completed else _exists(payout_id)
        payout = _locked(payout_id)
        if answer.status == "RETURNED" and payout.status == PayoutStatus.PROCESSING:
            # Sent, credited and sent back before we recorded the send (a worker died): it completed, then returned.
            payout = _complete([payout.pk])[0]
        if answer.status == "FAILED" and payout.status in TRANSITIONS[PayoutStatus.FAILED]:
            code = answer.failure_code if answer.failure_code in FAILURE_MESSAGES else "rail_error"
            payout = _transition(payout, to=PayoutStatus.FAILED, failure_code=code,
                                 failure_message=FAILURE_MESSAGES[code])
            _money_back(payout, payout.amount + payout.fee, "Payout failed: returned to the balance")
            return payout
        if answer.status == "RETURNED" and payout.status == PayoutStatus.COMPLETED:
            payout = _transition(payout, to=PayoutStatus.RETURNED)
            ledger.post(merchant=payout.merchant, livemode=payout.livemode, object_type="payout",
                        object_id=str(payout.id), reference_id=payout.reference_id,
                        description="Payout returned by the receiving bank",
                        legs=[Leg(AccountKind.RAIL_OUT, -payout.amount, LineType.PAYOUT_REVERSAL),
                              Leg(AccountKind.AVAILABLE, payout.amount, LineType.PAYOUT_REVERSAL)])
            return payout
        return None


# --- Sandbox ---------------------------------------------------------------------------------------------------------
def payout_simulate(*, merchant: Merchant, payout_id, action: str) -> Payout:
    """Test mode: the receiving bank completes, refuses or returns a payout (SPEC §7)."""
    payout = Payout.objects.filter(pk=payout_id, merchant=merchant, livemode=False).first()
    if payout is None:
        raise NotFound("No such payout")
    allowed = {"complete": {PayoutStatus.PENDING, PayoutStatus.PROCESSING},
               "fail": {PayoutStatus.PENDING, PayoutStatus.PROCESSING},
               "return": {PayoutStatus.COMPLETED}}[action]
    if payout.status not in allowed:
        raise InvalidState(gettext("A %(status)s payout cannot be simulated to %(action)s") % {
            "status": payout.status, "action": action})
    if action == "complete" and payout.status == PayoutStatus.PENDING:
        payout_start(payout_id=payout.pk)
    rails.by_name("simulator").simulate_payout(key=str(payout.pk), livemode=False, amount=payout.amount,
                                               end_to_end_id=payout.external_id, action=action)
    status = {"complete": "SUCCEEDED", "fail": "FAILED", "return": "RETURNED"}[action]
    payout_resolve(payout_id=payout.pk, answer=OperationStatus(status=status, failure_code="rejected_by_bank"))
    payout = Payout.objects.get(pk=payout.pk)
    payout.merchant = merchant
    return payout
