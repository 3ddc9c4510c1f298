"""Sandbox control of disputes (test mode only): the network's decision on a case, WON or LOST."""

from __future__ import annotations

from accounts.models import Merchant
from payments.disputes.services import dispute_decide
from payments.models import Dispute

ACTIONS = ("win", "lose")


def dispute_simulate(*, merchant: Merchant, dispute_id, action: str) -> Dispute:
    if action not in ACTIONS:
        raise ValueError(f"unknown dispute action {action}")
    return dispute_decide(dispute_id=dispute_id, won=action == "win", merchant=merchant, livemode=False)
