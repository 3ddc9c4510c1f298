"""A person's own security pages: the second step of signing in, two-factor enrolment (TOTP and recovery codes),
turning it off, and the list of their signed-in sessions. They need a signed-in user, not a merchant: staff enrol
here too, before the admin opens."""

from __future__ import annotations

import time

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache

from accounts import reauth, throttle, twofactor, usersessions
from accounts.access import SESSION_MERCHANT
from accounts.audit import audit_record_for_user
from accounts.forms import CodeForm, ProofForm
from accounts.members import membership_of
from accounts.models import AccountEvent, TotpDevice, User
from accounts.views import SECOND_STEP, sign_in_complete
from core.errors import DomainError
from core.http import post_only
from core.requests import client_ip

SECOND_STEP_SECONDS = 5 * 60  # a right password waits this long for its code


def _pending_user(request: HttpRequest) -> tuple[User | None, dict]:
    pending = request.session.get(SECOND_STEP) or {}
    if not pending or time.time() - pending.get("at", 0) > SECOND_STEP_SECONDS:
        return None, {}
    return User.objects.filter(pk=pending["user_id"], is_active=True).first(), pending


@never_cache
def login_verify(request: HttpRequest) -> HttpResponse:
    """The second step of signing in: a TOTP code or a recovery code, throttled per account and per IP."""
    user, pending = _pending_user(request)
    if user is None:
        request.session.pop(SECOND_STEP, None)
        messages.error(request, gettext("Log in again: the sign-in took too long or was not started."))
        return redirect("dashboard:login")
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        ip = client_ip(request)
        wait = throttle.second_factor_attempt(user_id=user.pk, ip=ip)
        method = None if wait else twofactor.second_factor_verify(request, user=user, code=form.cleaned_data["code"])
        if method:
            throttle.second_factor_succeeded(user_id=user.pk, ip=ip)
            request.session.pop(SECOND_STEP, None)
            login(request, user, backend=pending["backend"])
            sign_in_complete(request, user, method=method)
            if method == "recovery":
                messages.warning(request, gettext("You used a recovery code; %(left)s are left. Make new ones in "
                                                  "Security if you are running out.")
                                 % {"left": twofactor.recovery_codes_left(user=user)})
            target = pending.get("next") or "/dashboard/"
            if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
                target = "/dashboard/"
            return redirect(target)
        if wait:
            form.add_error(None, throttle.second_factor_refused_message(wait))
            status = 429
        else:
            audit_record_for_user(request, user=user, action=AccountEvent.Action.SIGN_IN_FAILED,
                                  reason="wrong second-factor code")
            form.add_error("code", str(twofactor.InvalidCode.message))
            status = 400
    response = render(request, "accounts/login_verify.html", {"form": form}, status=status)
    if status == 429:
        response["Retry-After"] = str(wait)
    return response


def _security_context(request: HttpRequest, **extra) -> dict:
    user = request.user
    device = TotpDevice.objects.filter(user=user).first()
    enabled = device is not None and device.confirmed_at is not None
    context = {
        "enabled": enabled, "form": CodeForm(),
        "sessions": usersessions.session_list(user=user, current_key=request.session.session_key),
        "recovery_left": twofactor.recovery_codes_left(user=user) if enabled else 0,
        "proof_fresh": reauth.reauth_fresh(request),
    }
    if enabled:
        context.update(recovery_form=_proof_form(request, "recovery"), disable_form=_proof_form(request, "disable"))
    # The base template shows the merchant's navigation when the user has one.
    membership = membership_of(user=user, merchant_id=request.session.get(SESSION_MERCHANT))
    if membership is not None:
        request.merchant, request.membership, request.role = membership.merchant, membership, membership.role
        request.livemode = request.session.get("livemode", False)
    return {**context, **extra}


def _proof_form(request: HttpRequest, name: str, data=None) -> ProofForm:
    """The proof form of one of the Security page's changes; ids of its own, as two of them share the page."""
    return ProofForm(data, request=request, auto_id=f"id_{name}_%s")


def _proof_refused(request: HttpRequest, name: str, form: ProofForm) -> HttpResponse:
    """The Security page again, the refused form showing why: 400, or 429 while the throttle holds."""
    status = 429 if form.retry_after else 400
    response = render(request, "accounts/security.html", _security_context(request, **{f"{name}_form": form}),
                      status=status)
    if form.retry_after:
        response["Retry-After"] = str(form.retry_after)
    return response


@never_cache
@login_required
def security(request: HttpRequest) -> HttpResponse:
    """Two-factor sign-in and sessions. Enrolling shows a new secret as a QR code until the first code confirms it."""
    context = _security_context(request)
    if not context["enabled"]:
        device = twofactor.totp_start(user=request.user)
        context.update(qr=twofactor.totp_qr_data_uri(device), secret=device.secret)
    return render(request, "accounts/security.html", context)


@never_cache
@post_only("dashboard:security")
@login_required
def two_factor_enable(request: HttpRequest) -> HttpResponse:
    form = CodeForm(request.POST)
    codes = None
    if form.is_valid():
        try:
            codes = twofactor.totp_confirm(request, user=request.user, code=form.cleaned_data["code"])
        except DomainError as error:
            form.add_error("code", error.message)
    if codes is None:
        device = TotpDevice.objects.filter(user=request.user, confirmed_at__isnull=True).first() or \
            twofactor.totp_start(user=request.user)
        context = _security_context(request, form=form, qr=twofactor.totp_qr_data_uri(device), secret=device.secret)
        return render(request, "accounts/security.html", context, status=400)
    # A session opened before enrolment never passed the second factor: it ends.
    usersessions.sessions_end_all(user=request.user, keep=request.session.session_key)
    messages.success(request, gettext("Two-factor sign-in is on. Keep these recovery codes somewhere safe: they are "
                                      "shown only now."))
    return render(request, "accounts/security.html", _security_context(request, recovery_codes=codes))


@never_cache
@post_only("dashboard:security")
@login_required
def two_factor_disable(request: HttpRequest) -> HttpResponse:
    """Turn two-factor sign-in off: it takes the password or a current code (accounts.reauth), throttled as the
    sign-in's second step is."""
    if not twofactor.user_has_second_factor(request.user):
        return redirect("dashboard:security")
    form = _proof_form(request, "disable", request.POST)
    if not form.is_valid():
        return _proof_refused(request, "disable", form)
    twofactor.totp_disable(request, user=request.user)
    messages.success(request, gettext("Two-factor sign-in is off."))
    return redirect("dashboard:security")


@never_cache
@post_only("dashboard:security")
@login_required
def recovery_codes_new(request: HttpRequest) -> HttpResponse:
    """New recovery codes: they take the password or a current code (accounts.reauth), as turning it off does."""
    if not twofactor.user_has_second_factor(request.user):
        return redirect("dashboard:security")
    form = _proof_form(request, "recovery", request.POST)
    if not form.is_valid():
        return _proof_refused(request, "recovery", form)
    codes = twofactor.recovery_codes_regenerate(request, user=request.user)
    messages.success(request, gettext("New recovery codes: the old ones no longer work."))
    return render(request, "accounts/security.html", _security_context(request, recovery_codes=codes))


@post_only("dashboard:security")
@login_required
def session_end(request: HttpRequest) -> HttpResponse:
    """End one session (`session`), or every other one (`all`)."""
    if request.POST.get("all"):
        ended = usersessions.sessions_end_all(user=request.user, keep=request.session.session_key)
    else:
        ended = int(usersessions.session_end(user=request.user, session_id=request.POST.get("session", "")))
    if ended:
        audit_record_for_user(request, user=request.user, action=AccountEvent.Action.SESSION_ENDED,
                              details={"sessions": ended})
    messages.success(request, gettext("Signed out of the chosen sessions."))
    return redirect("dashboard:security")
