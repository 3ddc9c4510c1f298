"""Sandbox controls (SPEC §7): test mode only. They ask the simulator rail to play the outside world (a payer
paying, a bank charging back), and its notification goes through the same path as a real rail's."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext

from accounts.models import Merchant
from config.errors import InvalidState
from payments import rails
from payments.models import Payin, PayinStatus, PaymentMethod
from payments.payins import services as payins
from payments.payins import transitions
from payments.payins.notifications import notification_receive
from payments.payins.selectors import payin_get


def payin_simulate(*, merchant: Merchant, payin_id, action: str) -> Payin:
    """Runs with the charge locked, so the check, the simulator's books and our transition commit together: an action
    that loses a race with a refund or a cancel is refused (409), and the simulator never records money that our
    ledger did not take."""
    simulator = rails.by_name("simulator")
    if action == "expire":
        return payins.payin_expire(payin_id=payin_id, merchant=merchant, livemode=False)
    with transaction.atomic():
        payin = transitions.payin_locked(payin_id, merchant=merchant, livemode=False)
        if action == "pay":
            if payin.payment_method == PaymentMethod.CREDIT_CARD or payin.status not in transitions.TRANSITIONS[
                    PayinStatus.PAID]:
                raise InvalidState(gettext("A %(status)s %(method)s charge cannot be paid") % {
                    "status": payin.status, "method": payin.payment_method})
            body = simulator.simulate_payment(key=str(payin.pk), livemode=False, amount=payin.amount,
                                              txid=payin.pix_txid or "", nosso_numero=payin.boleto_nosso_numero)
        else:
            if payin.payment_method == PaymentMethod.BOLETO or payin.status not in transitions.TRANSITIONS[
                    PayinStatus.CHARGEBACK]:
                raise InvalidState(gettext("A %(status)s %(method)s charge cannot be charged back") % {
                    "status": payin.status, "method": payin.payment_method})
            body = simulator.simulate_chargeback(key=str(payin.pk), livemode=False,
                                                 amount=payin.amount)
        notification_receive(rail_name="simulator", body=body)
    return payin_get(merchant=merchant, livemode=False, payin_id=payin.pk)
