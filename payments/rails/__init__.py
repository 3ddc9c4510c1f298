"""Rails: the connections to the payment networks. `for_mode` picks one; test mode always gets the simulator."""

from __future__ import annotations

import time
from functools import cache
from importlib import import_module
from typing import Any

from django.conf import settings

from payments.metrics import rail_call_record
from payments.rails.base import Rail, RailTimeout

RAILS = {"simulator": "payments.rails.simulator", "efi": "payments.rails.efi"}
# The calls that go out to the network, counted and timed; the rest (notification_parse, the simulator's sandbox
# controls) pass through untouched.
METERED_OPERATIONS = frozenset({"pix_charge_create", "pix_charge_cancel", "pix_charge_payments", "boleto_register",
                                "card_authorize", "card_status", "refund_create", "refund_status", "payout_send",
                                "payout_status", "payouts_send", "payouts_status", "notifications_confirm",
                                "payments_received", "disputes_list", "dispute_answer",
                                "card_charge_open", "card_charge_pay", "charge_get", "charge_history",
                                "charge_cancel", "card_refund", "installments"})


class MeteredRail:
    """A rail as the services see it: the same interface, with each network call counted by outcome (ok, timeout,
    error) and timed. The method is looked up on every call, so a test that patches the rail's class still works."""

    def __init__(self, rail: Rail):
        self.rail = rail
        self.name = rail.name
        self.payment_methods = rail.payment_methods
        self.dynamic_pix = rail.dynamic_pix
        self.static_pix_key = rail.static_pix_key
        self.payout_batch = rail.payout_batch
        self.payouts_together = rail.payouts_together
        self.card_tokens_only = rail.card_tokens_only
        self.boleto_registered = rail.boleto_registered

    def __getattr__(self, operation: str) -> Any:
        method = getattr(self.rail, operation)
        if operation not in METERED_OPERATIONS:
            return method

        def call(**kwargs: Any) -> Any:
            started = time.perf_counter()
            outcome = "error"
            try:
                answer = method(**kwargs)
                outcome = "ok"
                return answer
            except RailTimeout:
                outcome = "timeout"
                raise
            finally:
                rail_call_record(rail=self.name, operation=operation, outcome=outcome,
                                 seconds=time.perf_counter() - started)

        return call


@cache
def by_name(name: str) -> Rail:
    if name not in RAILS:
        raise LookupError(f"unknown rail {name!r}; known: {', '.join(sorted(RAILS))}")
    return MeteredRail(import_module(RAILS[name]).rail)  # type: ignore[return-value]


def for_mode(livemode: bool) -> Rail:
    return by_name(settings.PAYMENTS_RAIL if livemode else "simulator")


def is_real(livemode: bool) -> bool:
    """True when this mode's money moves through a real network (live mode on a rail other than the simulator)."""
    return livemode and settings.PAYMENTS_RAIL != "simulator"
