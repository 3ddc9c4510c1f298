"""Live mode on the simulator rail (issue 16): an error of `check --deploy` unless ALLOW_SIMULATED_LIVE_MODE says it
is meant, and then every live API response says so."""

from __future__ import annotations

import pytest
from django.core.checks import Error, run_checks

from payments.checks import simulated_live_mode_check
from tests.factories import ApiKeyFactory

PROBLEM = Error(
    "Live mode runs on the simulator rail (PAYMENTS_RAIL=simulator): live charges and payouts would move no money.",
    hint="Set PAYMENTS_RAIL to a real rail, or ALLOW_SIMULATED_LIVE_MODE=true for a demo or staging deployment (live "
         "API responses then carry `Pagamentos-Simulated: true` and the dashboard's live mode a banner).",
    id="payments.E001")


@pytest.fixture
def production(settings):
    settings.DEBUG = False
    settings.PAYMENTS_RAIL = "simulator"
    settings.ALLOW_SIMULATED_LIVE_MODE = False
    return settings


def test_the_deploy_check_refuses_live_mode_on_the_simulator(production):
    assert simulated_live_mode_check(None) == [PROBLEM]
    assert [p for p in run_checks(include_deployment_checks=True) if p.id == "payments.E001"] == [PROBLEM]  # registered


def test_the_deploy_check_passes_when_it_is_meant_or_in_development(production):
    production.ALLOW_SIMULATED_LIVE_MODE = True
    assert simulated_live_mode_check(None) == []
    production.ALLOW_SIMULATED_LIVE_MODE = False
    production.DEBUG = True
    assert simulated_live_mode_check(None) == []


def test_live_api_responses_on_the_simulator_say_so(production, merchant, api_client_for):
    production.ALLOW_SIMULATED_LIVE_MODE = True
    live = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))
    test = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=False))

    live_response = live.get("/account")
    test_response = test.get("/account")

    assert live_response.status_code == 200
    assert live_response.json() == {"merchantId": str(merchant.id), "name": merchant.name, "livemode": True,
                                    "kycStatus": "APPROVED"}
    assert live_response["Pagamentos-Simulated"] == "true"
    assert test_response.status_code == 200
    assert "Pagamentos-Simulated" not in test_response
    missing = live.get("/payout/00000000-0000-0000-0000-000000000000")
    assert (missing.status_code, missing["Pagamentos-Simulated"]) == (404, "true")  # errors of live requests too


def test_live_api_responses_on_a_real_rail_carry_no_mark(production, merchant, api_client_for):
    production.PAYMENTS_RAIL = "efi"
    live = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))

    assert "Pagamentos-Simulated" not in live.get("/account")
