"""Live-mode API responses say when live mode runs on the simulator rail (see payments.checks)."""

from __future__ import annotations

from core.modes import live_mode_simulated

SIMULATED_HEADER = "Pagamentos-Simulated"


class SimulatedLiveModeMiddleware:
    """`Pagamentos-Simulated: true` on every response to a live key while live mode runs on the simulator: whatever
    object the response carries moved no money. DRF sets `request.auth` on the Django request as it authenticates."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(getattr(request, "auth", None), "livemode", False) and live_mode_simulated():
            response[SIMULATED_HEADER] = "true"
        return response
