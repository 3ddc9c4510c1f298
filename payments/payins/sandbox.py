"""Sandbox controls (SPEC §7): test mode only. They ask the simulator rail to play the outside world (a payer
paying, a bank opening a chargeback or a MED), and its notification goes through the same path as a real rail's."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext

from accounts.models import Merchant
from core.errors import InvalidState
from payments import rails
from payments.disputes.services import dispute_open_check
from payments.models import DisputeKind, Payin, PaymentMethod, UnmatchedPayment
from payments.payins import services as payins
from payments.payins import transitions
from payments.payins.notifications import notification_receive
from payments.payins.selectors import payin_get


@dataclass(frozen=True)
class PayinSimulation:
    payin: Payin
    unmatched: UnmatchedPayment | None = None  # the payment a `pay` made when it did not settle the charge


def payin_simulate(*, merchant: Merchant, payin_id, action: str, amount: int | None = None) -> PayinSimulation:
    """Runs with the charge locked, so the check, the simulator's books and our transition commit together: an action
    that loses a race with a refund or a cancel is refused (409), and the simulator never records money that our
    ledger did not take. A `pay` that did not settle the charge (another amount, a second payment, a payment after a
    cancel) names the unmatched payment it made (issue 37, item 14)."""
    simulator = rails.by_name("simulator")
    if action == "expire":
        return PayinSimulation(payins.payin_expire(payin_id=payin_id, merchant=merchant, livemode=False))
    unmatched = None
    with transaction.atomic():
        payin = transitions.payin_locked(payin_id, merchant=merchant, livemode=False)
        if action == "pay":
            # Any PIX or boleto can be paid, as a payer can pay any code or slip they hold: paying one that is not
            # PENDING (or EXPIRED), or with another `amount`, plays an unmatched payment (issue 14).
            if payin.payment_method == PaymentMethod.CREDIT_CARD:
                raise InvalidState(gettext("A %(status)s %(method)s charge cannot be paid") % {
                    "status": payin.status, "method": payin.payment_method})
            customer = payin.customer or {}
            body = simulator.simulate_payment(key=str(payin.pk), livemode=False,
                                              amount=payin.amount if amount is None else amount,
                                              txid=payin.pix_txid or "", nosso_numero=payin.boleto_nosso_numero,
                                              payer_name=customer.get("name") or "",
                                              payer_document=customer.get("document") or "")
        else:
            # chargeback (a card) or med (a Pix): the network opens a dispute, decided later
            # (POST /sandbox/disputes/{id}/simulate); refused here when the rail would open none.
            kind = DisputeKind.CHARGEBACK if action == "chargeback" else DisputeKind.MED
            dispute_open_check(payin, kind)
            body = simulator.simulate_chargeback(key=str(payin.pk), livemode=False,
                                                 amount=payin.amount - payin.refunded_amount)
        row = notification_receive(rail_name="simulator", body=body)
        if action == "pay":
            end_to_end_id = simulator.notification_parse(row.body.encode()).end_to_end_id
            unmatched = UnmatchedPayment.objects.filter(end_to_end_id=end_to_end_id, merchant=merchant,
                                                        livemode=False).first()
    return PayinSimulation(payin_get(merchant=merchant, livemode=False, payin_id=payin.pk), unmatched)
