"""The payments app's metrics (core/metrics.py is the plumbing): charges and payouts by status, read from the
database at scrape time, and the rail calls' outcomes and latency, counted where they happen (payments.rails)."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily

from core.metrics import counter, histogram
from payments.models import Payin, Payout

RAIL_CALLS = counter("pagamentos_rail_calls_total", "Calls to a payment rail, by rail, operation and outcome "
                     "(ok, timeout, error)", ("rail", "operation", "outcome"))
RAIL_CALL_SECONDS = histogram("pagamentos_rail_call_duration_seconds", "Time a rail took to answer, by rail and "
                              "operation", ("rail", "operation"))


def rail_call_record(*, rail: str, operation: str, outcome: str, seconds: float) -> None:
    calls, durations = _rail_call_series(rail, operation, outcome)
    calls.inc()
    durations.observe(seconds)


@functools.cache
def _rail_call_series(rail: str, operation: str, outcome: str) -> tuple:
    """The labelled series of one kind of call, looked up once (the client's lookup takes a lock and builds the
    key on every call); there are a few dozen of them."""
    return RAIL_CALLS.labels(rail, operation, outcome), RAIL_CALL_SECONDS.labels(rail, operation)


def _by_status(model: type[Payin | Payout], name: str, documentation: str,
               extra: tuple[str, ...]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=["status", "livemode", *extra])
    rows = model.objects.values("status", "livemode", *extra).annotate(n=Count("id")).order_by()
    for row in rows:
        family.add_metric([row["status"], str(row["livemode"]).lower(), *(row[k] for k in extra)], row["n"])
    return family


def payments_collect() -> Iterable[GaugeMetricFamily]:
    """Scrape time: two GROUP BY queries. Registered by PaymentsConfig.ready()."""
    yield _by_status(Payin, "pagamentos_charges", "Charges by status, mode and payment method", ("payment_method",))
    yield _by_status(Payout, "pagamentos_payouts", "Payouts by status and mode", ())
