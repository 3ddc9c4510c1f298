from django.conf import settings
from django.http import HttpRequest

from accounts import roles
from accounts.members import memberships_of


def dashboard(request: HttpRequest) -> dict:
    """What every dashboard page shows: the merchant, the mode switch, and the simulator banner in live mode."""
    if not request.path.startswith("/dashboard/"):
        return {}
    merchant = getattr(request, "merchant", None)
    return {
        "merchant": merchant,
        "role": getattr(request, "role", None),
        # What the pages offer follows the role (the views check it again on every POST).
        "can_audit": roles.role_allows(getattr(request, "role", None), roles.MEMBERS),
        "can_money": roles.role_allows(getattr(request, "role", None), roles.MONEY),
        "can_integrations": roles.role_allows(getattr(request, "role", None), roles.INTEGRATIONS),
        "memberships": memberships_of(user=request.user) if merchant is not None else [],
        "livemode": getattr(request, "livemode", False),
        "simulated_live": settings.PAYMENTS_RAIL == "simulator",
    }
