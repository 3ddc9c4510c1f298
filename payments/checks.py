"""Deployment checks of the rails (`manage.py check --deploy`), registered in PaymentsConfig.ready."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, register

from config.modes import live_mode_simulated


@register(Tags.security, deploy=True)
def simulated_live_mode_check(app_configs, **kwargs) -> list:
    """Live mode on the simulator moves no money: a deployment must say it means it (a demo, a staging)."""
    if settings.DEBUG or not live_mode_simulated() or settings.ALLOW_SIMULATED_LIVE_MODE:
        return []
    return [Error(
        f"Live mode runs on the simulator rail (PAYMENTS_RAIL={settings.PAYMENTS_RAIL}): live charges and payouts "
        "would move no money.",
        hint="Set PAYMENTS_RAIL to a real rail, or ALLOW_SIMULATED_LIVE_MODE=true for a demo or staging deployment "
             "(live API responses then carry `Pagamentos-Simulated: true` and the dashboard's live mode a banner).",
        id="payments.E001")]
