"""Which mode runs on what: read by the apps that must tell a live object that moved no money."""

from django.conf import settings


def live_mode_simulated() -> bool:
    """Live mode runs on the simulator rail: no money moves (allowed in production only with
    ALLOW_SIMULATED_LIVE_MODE). Live API responses and live webhook deliveries then carry Pagamentos-Simulated."""
    return settings.PAYMENTS_RAIL == "simulator"
