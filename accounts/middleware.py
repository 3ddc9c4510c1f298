"""The dashboard's and the admin's security plumbing: the Content-Security-Policy of both, the admin's sign-in
through the dashboard's (throttled, with the second factor) and its second-factor requirement for staff, the audit of
every staff POST in the admin, and the tracking of signed-in sessions for the sessions page."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext

from accounts import usersessions
from accounts.audit import audit_record
from accounts.models import AccountEvent, Merchant
from accounts.twofactor import user_has_second_factor

DASHBOARD, ADMIN = "/dashboard/", "/admin/"
TRACK_EVERY_SECONDS = 60
ADMIN_MERCHANT_PATH = "/admin/accounts/merchant/"


def content_security_policy() -> str:
    # Only our own scripts run; the QR images of charges come from PUBLIC_BASE_URL (perhaps another origin), the
    # authenticator's QR code is a data: image.
    base = urlsplit(settings.PUBLIC_BASE_URL)
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; "
        f"img-src 'self' data: {base.scheme}://{base.netloc}; connect-src 'self'; font-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
    )


# Django's admin templates carry a few inline style attributes; scripts stay our (Django's) own files.
ADMIN_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
             "base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'")


def _staff_merchant(path: str) -> Merchant | None:
    """The merchant a staff POST in the admin is about, when its URL names one (/admin/accounts/merchant/<id>/…)."""
    if path.startswith(ADMIN_MERCHANT_PATH):
        merchant_id = path[len(ADMIN_MERCHANT_PATH):].split("/", 1)[0]
        if len(merchant_id) == 36:
            return Merchant.objects.filter(pk=merchant_id).first()
    return None


class DashboardSecurityMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path
        in_admin = path.startswith(ADMIN)
        if in_admin and (refusal := self.admin_gate(request)):
            return refusal
        if path.startswith((DASHBOARD, ADMIN)):
            self.track(request)
        response = self.get_response(request)
        if in_admin:
            response.setdefault("Content-Security-Policy", ADMIN_CSP)
            if request.method == "POST" and request.user.is_authenticated and response.status_code < 400:
                # Every staff action: the specific services audit what they change; this line says who posted what.
                audit_record(request, merchant=_staff_merchant(path), action=AccountEvent.Action.STAFF_ACTION,
                             obj_type="admin", obj_id=path[:64], reason=request.POST.get("action", "")[:100],
                             details={"path": path})
        elif path.startswith(DASHBOARD):
            response.setdefault("Content-Security-Policy", content_security_policy())
        return response

    @staticmethod
    def admin_gate(request: HttpRequest) -> HttpResponse | None:
        """The admin signs in through the dashboard's form (throttled per account and IP, second factor), and a
        staff user without a second factor is sent to enrol before any admin page opens."""
        if request.path == f"{ADMIN}login/":
            target = request.GET.get("next") or ADMIN
            return redirect(f"{reverse('dashboard:login')}?{urlencode({'next': target})}")
        user = request.user
        if user.is_authenticated and user.is_staff and not user_has_second_factor(user):
            messages.warning(request, gettext("Staff need two-factor sign-in: turn it on here, then open the admin."))
            return redirect("dashboard:security")
        return None

    @staticmethod
    def track(request: HttpRequest) -> None:
        if not request.user.is_authenticated:
            return
        seen = request.session.get(usersessions.SEEN_AT, 0)
        if time.time() - seen >= TRACK_EVERY_SECONDS:
            usersessions.session_track(request)
            request.session[usersessions.SEEN_AT] = time.time()
