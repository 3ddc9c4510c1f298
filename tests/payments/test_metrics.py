"""The payments app's metrics: charges and payouts by status at scrape time, rail calls by outcome and latency."""

from __future__ import annotations

from datetime import date

import pytest

from payments import rails
from payments.models import Payout
from payments.rails.base import RailTimeout
from payments.rails.simulator import SimulatorRail
from tests.metrics_helpers import TOKEN, scrape, value
from tests.payments.payins.test_payin_api import payin_body


@pytest.fixture(autouse=True)
def token(settings):
    settings.METRICS_TOKEN = TOKEN


@pytest.mark.django_db
def test_a_new_charge_shows_in_charges_by_status_and_its_rail_call_is_counted(api, client):
    before = scrape(client)

    response = api.post("/payin", payin_body("PIX"), format="json")

    assert response.status_code == 201
    after = scrape(client)
    assert value(after, "pagamentos_charges", status="PENDING", livemode="false", payment_method="PIX") - value(
        before, "pagamentos_charges", status="PENDING", livemode="false", payment_method="PIX") == 1
    assert value(after, "pagamentos_http_requests_total", route="payins", method="POST", status="201") - value(
        before, "pagamentos_http_requests_total", route="payins", method="POST", status="201") == 1
    call = {"rail": "simulator", "operation": "pix_charge_create"}
    assert value(after, "pagamentos_rail_calls_total", outcome="ok", **call) - value(
        before, "pagamentos_rail_calls_total", outcome="ok", **call) == 1
    assert value(after, "pagamentos_rail_call_duration_seconds_count", **call) - value(
        before, "pagamentos_rail_call_duration_seconds_count", **call) == 1


@pytest.mark.django_db
@pytest.mark.ledger_unchecked  # rows written directly, without their ledger movements: the gauge only counts rows
def test_payouts_by_status_are_read_at_scrape_time(client, merchant):
    for number, status in enumerate(["PENDING", "COMPLETED", "COMPLETED"]):
        Payout.objects.create(merchant=merchant, livemode=True, status=status, amount=100, fee=0, pix_key="k",
                              pix_key_normalized="k", pix_key_type="EVP", reference_id=f"r{number}",
                              external_id=f"E{number}", local_date=date(2026, 1, 2))

    samples = scrape(client)

    assert value(samples, "pagamentos_payouts", status="PENDING", livemode="true") == 1
    assert value(samples, "pagamentos_payouts", status="COMPLETED", livemode="true") == 2


def test_rail_timeouts_and_errors_are_counted_and_raised(client, monkeypatch, db):
    def times_out(self, **kwargs):
        raise RailTimeout("slow")

    def breaks(self, **kwargs):
        raise ValueError("broken")

    monkeypatch.setattr(SimulatorRail, "refund_status", times_out)
    monkeypatch.setattr(SimulatorRail, "payout_status", breaks)
    before = scrape(client)

    with pytest.raises(RailTimeout):
        rails.for_mode(False).refund_status(key="r1")
    with pytest.raises(ValueError, match="broken"):
        rails.for_mode(False).payout_status(key="p1")

    after = scrape(client)
    for operation, outcome in (("refund_status", "timeout"), ("payout_status", "error")):
        labels = {"rail": "simulator", "operation": operation, "outcome": outcome}
        assert value(after, "pagamentos_rail_calls_total", **labels) - value(
            before, "pagamentos_rail_calls_total", **labels) == 1
