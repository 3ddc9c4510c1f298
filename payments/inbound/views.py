"""The public routes on which a real rail tells us something happened. The route carries a secret (compared in
constant time): a request without it moves nothing. Even with it, the body is only a hint: each Pix it names is read
back from the rail before any money moves (`services.notifications_receive`)."""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.errors import DomainError, NotFound, PermissionRefused, ServiceUnavailable, error_body
from payments.inbound import services
from payments.rails.base import NOTIFICATION_MAX_ITEMS, InvalidNotification, NotificationTooLarge, RailError

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1_000_000


class InvalidRailNotification(DomainError):
    code = "invalid_notification"
    message = "The notification body is not one the rail sends"


class RailNotificationTooLarge(DomainError):
    status_code = 413
    code = "notification_too_large"
    message = f"A notification may name at most {NOTIFICATION_MAX_ITEMS} payments"


def _error(error: DomainError) -> JsonResponse:
    return JsonResponse(error_body(error), status=error.status_code)


def _secret_refused(secret: str, request: HttpRequest) -> JsonResponse | None:
    """The route's secret, compared in constant time: a request without it moves nothing."""
    if settings.PAYMENTS_RAIL != "efi":
        return _error(NotFound("No such route"))
    expected = settings.EFI_WEBHOOK_SECRET
    if not expected or not hmac.compare_digest(secret.encode(), expected.encode()):
        logger.warning("payments.rail_notification_refused", extra={"rail": "efi", "reason": "secret",
                                                                    "ip": request.META.get("REMOTE_ADDR", "")})
        return _error(PermissionRefused("This notification URL is not valid"))
    return None


@csrf_exempt
@require_POST
def efi_charges_notify(request: HttpRequest, secret: str) -> JsonResponse:
    """Efí's Charges API notifications: a form with one field, `notification`, a token. The token is all we take
    from the request: its history is read from Efí (`GET /notification/:token`) and every entry not applied yet is
    applied, oldest first. Efí counts the notification delivered when the token is read."""
    refused = _secret_refused(secret, request)
    if refused is not None:
        return refused
    if len(request.body) > MAX_BODY_BYTES:
        return _error(InvalidRailNotification("The notification is too large"))
    token = request.POST.get("notification", "")
    try:
        applied, entries = services.charge_notification_receive(rail_name="efi", token=token)
    except InvalidNotification:
        logger.warning("payments.rail_notification_invalid", extra={"rail": "efi", "kind": "charges"})
        return _error(InvalidRailNotification())
    except RailError:
        logger.warning("payments.rail_notification_unconfirmed", extra={"rail": "efi", "kind": "charges"})
        return _error(ServiceUnavailable("The payment network could not confirm the notification; send it again"))
    return JsonResponse({"entries": entries, "applied": applied})


@csrf_exempt
@require_POST
def efi_webhook(request: HttpRequest, secret: str) -> JsonResponse:
    """Efí's Pix notifications. Efí POSTs to the registered URL with `/pix` appended (`rail_setup` registers
    `…/rails/efi/webhook/<secret>?ignorar=`, so the appendix lands in the ignored query); both forms arrive here."""
    refused = _secret_refused(secret, request)
    if refused is not None:
        return refused
    if len(request.body) > MAX_BODY_BYTES:
        return _error(InvalidRailNotification("The notification is too large"))
    try:
        applied, confirmed = services.notifications_receive(rail_name="efi", body=request.body)
    except NotificationTooLarge:
        # Refused whole, before any call to the bank: reconciliation finds every payment it named within minutes.
        logger.warning("payments.rail_notification_too_large", extra={"rail": "efi"})
        return _error(RailNotificationTooLarge())
    except InvalidNotification:
        logger.warning("payments.rail_notification_invalid", extra={"rail": "efi"})
        return _error(InvalidRailNotification())
    except RailError:
        # Nothing could be confirmed: a 503 makes Efí send it again; reconciliation is the net either way.
        logger.warning("payments.rail_notification_unconfirmed", extra={"rail": "efi"})
        return _error(ServiceUnavailable("The payment network could not confirm the notification; send it again"))
    return JsonResponse({"confirmed": confirmed, "applied": applied})
