"""Disputes (issue 14): a card chargeback or a Pix MED, opened by the rail (or the sandbox) against a paid charge,
answered by the merchant with evidence or accepted, and decided WON or LOST by the network (or by its deadline).

Opening moves what is left of the charge after its refunds (succeeded or pending: never the same money twice) from
`available` (which may go negative) into `held`; WON gives it back to `available`; LOST or ACCEPTED sends it to the
payer through the rail, and the charge becomes CHARGEBACK (card) or REFUNDED / PARTIALLY_REFUNDED (MED).

Every change locks the charge, then the dispute, then the merchant's ledger accounts (`ledger.post`), moves the
dispute with one conditional update, and writes its ledger movement and its event in the same transaction.

A case the live rail opened (an Efí MED infraction, `rail_reference`) is read from the rail by reconciliation
(`dispute_rail_apply`), and the rail decides it: it has no local deadline. The merchant's answer to it is committed
first (`rail_answer` PENDING), then sent to the rail by the worker under the case's id, with no transaction open
(`dispute_answer_send`); reconciliation sends what the worker could not."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import Merchant
from core.errors import InvalidState, NotFound
from core.tasks import task_enqueue
from integrations.idempotency import effect_record
from payments import rails
from payments.disputes.serializers import dispute_serialize
from payments.ledger import services as ledger
from payments.ledger.services import Leg
from payments.models import (
    AccountKind,
    Dispute,
    DisputeKind,
    DisputeRailAnswer,
    DisputeStatus,
    LineType,
    Payin,
    PayinStatus,
    PaymentMethod,
)
from payments.payins.transitions import BATCH, payin_locked, payin_transition
from payments.rails.base import RailDispute, RailError, RailRefused
from webhooks.services import event_record

logger = logging.getLogger(__name__)

# Which statuses each status may be reached from. Evidence is sent once, and only an unanswered case can be accepted
# (as the card networks have it): so evidence and accept racing on one case move it once.
TRANSITIONS = {
    DisputeStatus.UNDER_REVIEW: {DisputeStatus.OPEN},
    DisputeStatus.ACCEPTED: {DisputeStatus.OPEN},
    DisputeStatus.WON: {DisputeStatus.OPEN, DisputeStatus.UNDER_REVIEW},
    DisputeStatus.LOST: {DisputeStatus.OPEN, DisputeStatus.UNDER_REVIEW},
}
CLOSED = (DisputeStatus.WON, DisputeStatus.LOST, DisputeStatus.ACCEPTED)
OPEN = (DisputeStatus.OPEN, DisputeStatus.UNDER_REVIEW)
KIND_OF_METHOD = {PaymentMethod.CREDIT_CARD: DisputeKind.CHARGEBACK, PaymentMethod.PIX: DisputeKind.MED}
DEFAULT_REASON = {DisputeKind.CHARGEBACK: "fraudulent", DisputeKind.MED: "fraud"}
DISPUTABLE = (PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED)
# A rail's cases are listed by when they were opened there, and stay open for days (the analysis deadline, then the
# bank's own decision): reconciliation lists this far back (and further while an older case is still open here), so a
# case we know was opened at most this long before we first saw it.
RAIL_CASE_WINDOW = timedelta(days=30)
# The answer that accepts a rail's case (the bank's analysts read Portuguese).
ACCEPT_TEXT = "O recebedor aceita a infração e a devolução do valor."


def evidence_days(kind: str) -> int:
    if kind == DisputeKind.MED:
        return settings.DISPUTE_MED_EVIDENCE_DAYS
    return settings.DISPUTE_CHARGEBACK_EVIDENCE_DAYS


def dispute_kind_for(payin: Payin) -> str:
    """Cards are charged back; Pix payments are returned through MED; a boleto payment is final."""
    kind = KIND_OF_METHOD.get(payin.payment_method)
    if kind is None:
        raise InvalidState(gettext("%(method)s payments cannot be disputed") % {"method": payin.payment_method})
    return kind


def dispute_open_check(payin: Payin, kind: str) -> None:
    """Why a (locked) charge cannot be disputed now, as InvalidState; nothing when it can."""
    if dispute_kind_for(payin) != kind:
        raise InvalidState(gettext("A %(method)s charge cannot have a %(kind)s dispute") % {
            "method": payin.payment_method, "kind": kind})
    if payin.status not in DISPUTABLE:
        raise InvalidState(gettext("A %(status)s charge cannot be disputed") % {"status": payin.status})
    if Dispute.objects.filter(payin=payin, kind=kind).exists():
        raise InvalidState(gettext("This charge was already disputed"))
    if payin.amount - payin.refunded_amount <= 0:
        raise InvalidState(gettext("Nothing is left of this charge to dispute: it was refunded"))


def dispute_open(*, payin_id, kind: str | None = None, reason: str = "", rail_reference: str = "",
                 amount: int | None = None, evidence_due_by: datetime | None = None,
                 now: datetime | None = None) -> tuple[Dispute, bool]:
    """Open a dispute on a paid charge (kind by default from its method); `(dispute, created)`. A case is opened once
    per charge and kind: a repeated notice of it returns the existing dispute, unchanged. The rail may name the amount
    disputed (never more than what is left of the charge) and the deadline of the answer."""
    now = now or timezone.now()
    with transaction.atomic():
        payin = payin_locked(payin_id)
        kind = kind or dispute_kind_for(payin)
        existing = Dispute.objects.filter(payin=payin, kind=kind).order_by("created_at").first()
        if existing is not None:
            return existing, False
        dispute_open_check(payin, kind)
        left = payin.amount - payin.refunded_amount
        amount = left if amount is None else min(amount, left)
        dispute = Dispute.objects.create(
            merchant=payin.merchant, livemode=payin.livemode, payin=payin, kind=kind,
            reason=(reason or DEFAULT_REASON[kind])[:100], amount=amount, status=DisputeStatus.OPEN,
            evidence_due_by=evidence_due_by or now + timedelta(days=evidence_days(kind)),
            rail_reference=rail_reference, created_at=now, updated_at=now)
        ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="dispute",
                    object_id=str(dispute.id), reference_id=payin.reference_id,
                    description=f"Dispute opened ({kind})", legs=[
                        Leg(AccountKind.AVAILABLE, -amount, LineType.DISPUTE),
                        Leg(AccountKind.HELD, amount, LineType.DISPUTE),
                    ])
        _event_record(dispute, payin, "dispute.created", previous_status=None)
    logger.info("payments.dispute_opened", extra={"dispute_id": str(dispute.id), "payin_id": str(payin.id)})
    return dispute, True


def dispute_evidence_submit(*, merchant: Merchant, livemode: bool, dispute_id, text: str) -> Dispute:
    """The merchant's defence, before the deadline: OPEN → UNDER_REVIEW; the network decides later."""
    now = timezone.now()

    def check(dispute: Dispute) -> None:
        if dispute.rail_answer_accept:
            raise InvalidState(gettext("This dispute was accepted: the bank is closing it"))
        if dispute.status == DisputeStatus.OPEN and dispute.evidence_due_by <= now:
            raise InvalidState(gettext("The deadline for evidence has passed"))

    return _dispute_move(dispute_id, to=DisputeStatus.UNDER_REVIEW, merchant=merchant, livemode=livemode, now=now,
                         check=check, answer=True, evidence_text=text, evidence_submitted_at=now)


def dispute_accept(*, merchant: Merchant, livemode: bool, dispute_id) -> Dispute:
    """The merchant gives the case up: the held money goes to the payer. A live rail's case is the rail's to close:
    the acceptance is sent to it as the answer and the case stays OPEN, its money held, until the rail closes it
    (`dispute_rail_apply`: ACCEPTED, or WON if the rail left the money with the merchant after all)."""
    found = (Dispute.objects.filter(pk=dispute_id, merchant=merchant, livemode=livemode)
             .values_list("rail_reference", "kind").first())
    if found is None:
        raise NotFound("No such dispute")
    # Only a MED case is answered through the rail's API; a card chargeback the rail opened (Efí's `contested`) is
    # answered at the rail's own dashboard, and decided by the rail either way.
    if not rail_answers(*found):
        return _dispute_move(dispute_id, to=DisputeStatus.ACCEPTED, merchant=merchant, livemode=livemode)
    with transaction.atomic():
        dispute = Dispute.objects.select_for_update().get(pk=dispute_id)
        if dispute.rail_answer_accept:
            return dispute  # accepted already: the answer is on its way, or sent
        if dispute.status != DisputeStatus.OPEN:
            raise InvalidState(gettext("A dispute in status %(source)s cannot become %(to)s") % {
                "source": dispute.status, "to": DisputeStatus.ACCEPTED})
        now = timezone.now()
        Dispute.objects.filter(pk=dispute.pk, status=DisputeStatus.OPEN).update(
            rail_answer=DisputeRailAnswer.PENDING, rail_answer_accept=True, updated_at=now)
        dispute.rail_answer, dispute.rail_answer_accept, dispute.updated_at = DisputeRailAnswer.PENDING, True, now
        effect_record()
        _answer_queue(dispute.pk)
    logger.info("payments.dispute_accept_sent_to_rail", extra={"dispute_id": str(dispute.pk)})
    return dispute


def dispute_decide(*, dispute_id, won: bool, merchant: Merchant | None = None, livemode: bool | None = None) -> Dispute:
    """The network's decision (the rail, or the sandbox playing it)."""
    return _dispute_move(dispute_id, to=DisputeStatus.WON if won else DisputeStatus.LOST, merchant=merchant,
                         livemode=livemode)


def disputes_expire(*, now: datetime | None = None) -> int:
    """LOST: OPEN disputes past their deadline without evidence (a rail's case is decided by the rail). Idempotent: a
    case answered, accepted or expired by another worker meanwhile is left as it is (the conditional update moves it
    once)."""
    now = now or timezone.now()
    due = list(Dispute.objects.filter(status=DisputeStatus.OPEN, evidence_due_by__lte=now, rail_reference="")
               .values_list("pk", flat=True)[:BATCH])
    expired = 0
    for dispute_id in due:
        try:
            _dispute_move(dispute_id, to=DisputeStatus.LOST, sources={DisputeStatus.OPEN}, now=now)
        except InvalidState:
            continue
        expired += 1
    return expired


def _dispute_move(dispute_id, *, to: str, merchant: Merchant | None = None, livemode: bool | None = None,
                  sources: set[str] | None = None, now: datetime | None = None, check=None, answer: bool = False,
                  **changes) -> Dispute:
    """Move a dispute; `answer`: the move is the merchant's answer, which a rail's case must also be told."""
    now = now or timezone.now()
    with transaction.atomic():
        scope = Dispute.objects.filter(pk=dispute_id)
        if merchant is not None:
            scope = scope.filter(merchant=merchant, livemode=livemode)
        payin_id = scope.values_list("payin_id", flat=True).first()
        if payin_id is None:
            raise NotFound("No such dispute")
        payin = payin_locked(payin_id)
        dispute = Dispute.objects.select_for_update(of=("self",)).get(pk=dispute_id)
        source = dispute.status
        if check is not None:
            check(dispute)
        if to in CLOSED:
            changes["closed_at"] = now
        if answer and rail_answers(dispute.rail_reference, dispute.kind):
            changes["rail_answer"] = DisputeRailAnswer.PENDING
            _answer_queue(dispute_id)
        updated = Dispute.objects.filter(pk=dispute.pk, status__in=sources or TRANSITIONS[to]).update(
            status=to, updated_at=now, **changes)
        if not updated:
            raise InvalidState(gettext("A dispute in status %(source)s cannot become %(to)s") % {
                "source": source, "to": to})
        dispute.status, dispute.updated_at = to, now
        for name, value in changes.items():
            setattr(dispute, name, value)
        if to == DisputeStatus.WON:
            _money_back(dispute, payin)
        elif to in CLOSED:
            _money_to_payer(dispute, payin, now=now)
        _event_record(dispute, payin, "dispute.closed" if to in CLOSED else "dispute.updated",
                      previous_status=source)
    logger.info("payments.dispute_moved", extra={"dispute_id": str(dispute.id), "status": to})
    return dispute


def rail_answers(rail_reference: str, kind: str) -> bool:
    """Whether the merchant's answer to a case goes to the rail through its API: a MED case the rail opened."""
    return bool(rail_reference) and kind == DisputeKind.MED


# --- Cases the rail opened -------------------------------------------------------------------------------------------
def dispute_rail_apply(case: RailDispute) -> Dispute | None:
    """A case as the live rail holds it: opened here the first time it is seen (against the live charge its Pix paid),
    then moved to where the rail says it stands. Idempotent, and safe beside the merchant's own answers: every move is
    conditional. None when the case names no charge of ours (logged for staff)."""
    dispute = Dispute.objects.filter(livemode=True, rail_reference=case.reference).first()
    if dispute is None:
        payin_id = (Payin.objects.filter(livemode=True, pix_end_to_end_id=case.end_to_end_id)
                    .values_list("pk", flat=True).first() if case.end_to_end_id else None)
        if payin_id is None:
            logger.warning("payments.rail_dispute_unmatched",
                           extra={"rail_reference": case.reference, "end_to_end_id": case.end_to_end_id})
            return None
        try:
            dispute, _ = dispute_open(payin_id=payin_id, kind=DisputeKind.MED, reason=case.reason,
                                      rail_reference=case.reference, amount=case.amount,
                                      evidence_due_by=case.due_by)
        except InvalidState as refusal:
            logger.warning("payments.rail_dispute_not_opened",
                           extra={"rail_reference": case.reference, "payin_id": str(payin_id), "why": str(refusal)})
            return None
        if dispute.rail_reference != case.reference:  # one dispute per charge and kind: staff must look
            logger.error("payments.rail_dispute_second_case",
                         extra={"rail_reference": case.reference, "dispute_id": str(dispute.pk)})
            return None
    if dispute.status in CLOSED or case.status == dispute.status or case.status == DisputeStatus.OPEN:
        return dispute
    try:
        if case.status == DisputeStatus.UNDER_REVIEW:  # answered at the bank itself
            return _dispute_move(dispute.pk, to=DisputeStatus.UNDER_REVIEW)
        if case.status == DisputeStatus.LOST and dispute.rail_answer_accept:
            return _dispute_move(dispute.pk, to=DisputeStatus.ACCEPTED, sources={DisputeStatus.OPEN})
        return dispute_decide(dispute_id=dispute.pk, won=case.status == DisputeStatus.WON)
    except InvalidState:  # the merchant (or another reconciliation) moved it meanwhile
        return Dispute.objects.get(pk=dispute.pk)


def dispute_answer_send(*, dispute_id) -> Dispute:
    """Tell the rail the merchant's answer (outside any transaction; the case's id is the key: a repeat is refused by
    the rail, and then the case's own status says whether the first one reached it)."""
    dispute = Dispute.objects.get(pk=dispute_id)
    if dispute.rail_answer != DisputeRailAnswer.PENDING:
        return dispute
    accept = dispute.rail_answer_accept
    text = ACCEPT_TEXT if accept else dispute.evidence_text
    rail = rails.for_mode(dispute.livemode)
    try:
        rail.dispute_answer(reference=dispute.rail_reference, accept=accept, text=text)
        outcome = DisputeRailAnswer.SENT
    except RailRefused:
        outcome = _answer_outcome_after_refusal(rail, dispute, text)
    except RailError:
        outcome = None
    if outcome is None:
        logger.warning("payments.dispute_answer_rail_no_answer", extra={"dispute_id": str(dispute.pk)})
        return dispute
    Dispute.objects.filter(pk=dispute.pk, rail_answer=DisputeRailAnswer.PENDING).update(rail_answer=outcome)
    dispute.rail_answer = outcome
    log = logger.info if outcome == DisputeRailAnswer.SENT else logger.warning
    log("payments.dispute_answer_sent", extra={"dispute_id": str(dispute.pk), "outcome": outcome})
    return dispute


def _answer_outcome_after_refusal(rail: rails.Rail, dispute: Dispute, text: str) -> str | None:
    """SENT when the rail holds this very answer (an earlier attempt reached it), REFUSED when it holds none or
    another (a defence filed at the bank itself); None (ask again later) when the rail cannot be asked now."""
    try:
        cases = rail.disputes_list(start=dispute.created_at - RAIL_CASE_WINDOW, end=timezone.now())
    except RailError:
        return None
    case = next((case for case in cases if case.reference == dispute.rail_reference), None)
    return DisputeRailAnswer.SENT if case is not None and case.answer == text else DisputeRailAnswer.REFUSED


def dispute_answers_pending(*, older_than: timedelta) -> list:
    """Answers the worker has not sent yet (the broker was down, or the rail did not answer)."""
    return list(Dispute.objects.filter(rail_answer=DisputeRailAnswer.PENDING,
                                       updated_at__lte=timezone.now() - older_than)
                .values_list("pk", flat=True)[:BATCH])


def _answer_queue(dispute_id) -> None:
    """Send the answer once the caller's transaction commits (with the broker down, reconciliation sends it)."""
    transaction.on_commit(lambda: task_enqueue("payments.disputes.tasks.dispute_answer_send",
                                               dispute_id=str(dispute_id)), robust=True)


def _money_back(dispute: Dispute, payin: Payin) -> None:
    ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="dispute", object_id=str(dispute.id),
                reference_id=payin.reference_id, description="Dispute won: the held amount is available again",
                legs=[Leg(AccountKind.HELD, -dispute.amount, LineType.DISPUTE),
                      Leg(AccountKind.AVAILABLE, dispute.amount, LineType.DISPUTE)])


def _money_to_payer(dispute: Dispute, payin: Payin, *, now: datetime) -> None:
    ledger.post(merchant=payin.merchant, livemode=payin.livemode, object_type="dispute", object_id=str(dispute.id),
                reference_id=payin.reference_id, description=f"Dispute {dispute.status.lower()}: returned to the payer",
                legs=[Leg(AccountKind.HELD, -dispute.amount, LineType.DISPUTE),
                      Leg(AccountKind.RAIL_OUT, dispute.amount, LineType.DISPUTE)])
    if dispute.kind == DisputeKind.CHARGEBACK:
        payin_transition(payin, to=PayinStatus.CHARGEBACK, now=now)
        return
    # A MED return is a refund the payer's bank made: it counts in refundedAmount (ledger_check holds it so).
    refunded = payin.refunded_amount + dispute.amount
    to = PayinStatus.REFUNDED if refunded >= payin.amount else PayinStatus.PARTIALLY_REFUNDED
    payin_transition(payin, to=to, now=now, refunded_amount=refunded)


def _event_record(dispute: Dispute, payin: Payin, type: str, *, previous_status: str | None) -> None:
    """The dispute's event, in the caller's transaction, which is the request's effect (`effect_record`)."""
    effect_record()
    event_record(merchant=payin.merchant, livemode=payin.livemode, type=type, obj=dispute_serialize(dispute),
                 previous_status=previous_status, webhook_url=payin.webhook_url or None)
