"""The webhooks app's metrics (core/metrics.py is the plumbing): delivery attempts by outcome, counted where they
are recorded (webhooks.delivery), and the queue read from the database at scrape time: PENDING deliveries and the
age of the oldest one (a stuck worker or a lost broker shows as an age that keeps growing)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from core.metrics import counter
from webhooks.models import Delivery

DELIVERY_ATTEMPTS = counter("pagamentos_webhook_deliveries_total", "Webhook delivery attempts by outcome: succeeded, "
                            "retry (failed, another attempt scheduled), failed (given up), superseded (lease lost)",
                            ("outcome",))


def delivery_outcome_record(*, outcome: str) -> None:
    DELIVERY_ATTEMPTS.labels(outcome).inc()


def webhooks_collect() -> Iterable[GaugeMetricFamily]:
    """Scrape time: one query on the PENDING rows (the delivery_due index). Registered by WebhooksConfig.ready()."""
    pending = Delivery.objects.filter(status=Delivery.Status.PENDING).aggregate(n=Count("id"), oldest=Min("created_at"))
    yield GaugeMetricFamily("pagamentos_webhook_deliveries_pending", "Webhook deliveries not yet succeeded or given up "
                            "(the queue depth)", value=pending["n"])
    age = (timezone.now() - pending["oldest"]).total_seconds() if pending["oldest"] else 0.0
    yield GaugeMetricFamily("pagamentos_webhook_oldest_pending_age_seconds", "Age of the oldest PENDING webhook "
                            "delivery (0 when none)", value=max(age, 0.0))
