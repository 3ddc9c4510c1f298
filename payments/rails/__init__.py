"""Rails: the connections to the payment networks. `for_mode` picks one; test mode always gets the simulator."""

from __future__ import annotations

from functools import cache
from importlib import import_module

from django.conf import settings

from payments.rails.base import Rail

RAILS = {"simulator": "payments.rails.simulator"}


@cache
def by_name(name: str) -> Rail:
    if name not in RAILS:
        raise LookupError(f"unknown rail {name!r}; known: {', '.join(sorted(RAILS))}")
    return import_module(RAILS[name]).rail


def for_mode(livemode: bool) -> Rail:
    return by_name(settings.PAYMENTS_RAIL if livemode else "simulator")
