from django.conf import settings
from django.http import HttpRequest


def dashboard(request: HttpRequest) -> dict:
    """What every dashboard page shows: the merchant, the mode switch, and the simulator banner in live mode."""
    if not request.path.startswith("/dashboard/"):
        return {}
    return {
        "merchant": getattr(request, "merchant", None),
        "livemode": getattr(request, "livemode", False),
        "simulated_live": settings.PAYMENTS_RAIL == "simulator",
    }
