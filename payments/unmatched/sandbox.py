"""Sandbox plays of money that matches nothing (test mode only): the simulator's notification goes through the same
path as a real rail's."""

from __future__ import annotations

from accounts.models import Merchant
from payments import rails
from payments.models import UnmatchedPayment
from payments.payins.notifications import notification_receive


def pix_receive(*, merchant: Merchant, amount: int, txid: str = "") -> UnmatchedPayment:
    """A payer sends a Pix to our key that names no charge of this merchant (no txid, or one that is not ours)."""
    body = rails.by_name("simulator").simulate_payment(key="", livemode=False, amount=amount, txid=txid,
                                                       payer_name="Pagador Sandbox", payer_document="52998224725",
                                                       merchant_id=str(merchant.pk))
    row = notification_receive(rail_name="simulator", body=body)
    end_to_end_id = rails.by_name("simulator").notification_parse(row.body.encode()).end_to_end_id
    return UnmatchedPayment.objects.get(end_to_end_id=end_to_end_id, merchant=merchant)
