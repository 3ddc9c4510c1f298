"""The webhooks app's metrics: delivery attempts by outcome, the queue's depth and its oldest PENDING delivery's age."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.metrics_helpers import TOKEN, scrape, value
from tests.webhooks.test_delivery import local_targets, receiver, record  # noqa: F401  (fixtures)
from webhooks import delivery as engine
from webhooks.models import Delivery


@pytest.mark.django_db
def test_deliveries_are_counted_by_outcome_and_the_queue_is_measured(client, settings, receiver):  # noqa: F811
    settings.METRICS_TOKEN = TOKEN
    sent, waiting = record(receiver.url("/ok")), record(receiver.url("/ok"))
    Delivery.objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    before = scrape(client)

    engine.delivery_attempt(delivery_id=str(sent.id))

    after = scrape(client)
    assert value(after, "pagamentos_webhook_deliveries_total", outcome="succeeded") - value(
        before, "pagamentos_webhook_deliveries_total", outcome="succeeded") == 1
    assert value(before, "pagamentos_webhook_deliveries_pending") == 2
    assert value(after, "pagamentos_webhook_deliveries_pending") == 1
    assert 300 <= value(after, "pagamentos_webhook_oldest_pending_age_seconds") < 330
