"""Dashboard pages for the account: sign-up, log in (throttled, then the second factor), password reset (throttled),
mode switch, KYC, settings. The overview is the payments app's (payments/dashboard/overview.py); members and the
audit log are in team_views.py, two-factor sign-in and sessions in security_views.py."""

from __future__ import annotations

import time

from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, Resolver404, resolve, reverse, reverse_lazy
from django.utils.translation import gettext

from accounts import roles, services, throttle
from accounts.access import SESSION_MERCHANT, permission_required
from accounts.audit import audit_record, audit_record_for_user
from accounts.forms import KycForm, LoginForm, PasswordChangeProofForm, SignupForm
from accounts.models import AccountEvent, KycStatus, User
from accounts.selectors import kyc_history
from accounts.twofactor import user_has_second_factor
from accounts.usersessions import sessions_end_all
from core.errors import DomainError
from core.http import post_only
from core.requests import client_ip


def refuse_if_suspended(request: HttpRequest) -> HttpResponse | None:
    """A suspended account's dashboard is read-only: every form post is refused with a message."""
    if request.merchant.is_suspended:
        messages.error(request, gettext("Your account is suspended, so the dashboard is read-only. Contact support."))
        return redirect("dashboard:overview")
    return None


def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("dashboard:overview")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            merchant = services.merchant_signup(email=data["email"], password=data["password"], name=data["name"])
        except services.EmailTaken:
            form.add_error("email", gettext("An account with this email already exists. Log in instead?"))
        else:
            login(request, merchant.owner, backend="django.contrib.auth.backends.ModelBackend")
            request.session["livemode"] = False
            request.session[SESSION_MERCHANT] = str(merchant.pk)
            messages.success(request, gettext("Welcome! You are in test mode: create a test key and try the API now, "
                                              "and submit your KYC to go live."))
            return redirect("dashboard:overview")
    return render(request, "accounts/signup.html", {"form": form})


class LoginView(auth_views.LoginView):
    template_name = "accounts/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def form_valid(self, form):
        user = form.get_user()
        if user_has_second_factor(user):
            # The password was right; the session is signed in only once the second factor is too.
            self.request.session[SECOND_STEP] = {"user_id": user.pk, "backend": user.backend,
                                                 "next": self.get_success_url(), "at": time.time()}
            return redirect("dashboard:login_verify")
        response = super().form_valid(form)
        sign_in_complete(self.request, user, method="password")
        return response

    def form_invalid(self, form):
        email = form.cleaned_data.get("username") or ""
        if email and not form.retry_after and form.cleaned_data.get("password"):
            user = User.objects.filter(email=email.lower()).first()
            if user is not None:
                audit_record_for_user(self.request, user=user, action=AccountEvent.Action.SIGN_IN_FAILED,
                                      reason="wrong password")
            else:
                audit_record(self.request, merchant=None, action=AccountEvent.Action.SIGN_IN_FAILED,
                             reason="unknown email", details={"email": email[:254]})
        response = super().form_invalid(form)
        if form.retry_after:
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response


SECOND_STEP = "sign_in_second_step"  # the session of a sign-in whose password was right, waiting for its code


def sign_in_complete(request: HttpRequest, user: User, *, method: str) -> None:
    """What every completed sign-in does: a new session starts in test mode, and it is audited."""
    request.session["livemode"] = False
    audit_record_for_user(request, user=user, action=AccountEvent.Action.SIGNED_IN, details={"method": method})


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset form, limited per IP and per email: each request sends an email."""

    template_name = "accounts/password_reset.html"
    email_template_name = "accounts/password_reset_email.txt"
    success_url = reverse_lazy("dashboard:password_reset_done")

    def form_valid(self, form):
        wait = throttle.password_reset_attempt(email=form.cleaned_data["email"], ip=client_ip(self.request))
        if wait:
            form.add_error(None, throttle.password_reset_refused_message(wait))
            response = self.form_invalid(form)
            response.status_code = 429
            response["Retry-After"] = str(wait)
            return response
        return super().form_valid(form)


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "accounts/password_reset_confirm.html"
    success_url = reverse_lazy("dashboard:password_reset_complete")

    def form_valid(self, form):
        user = form.user
        services.password_change(user=user, password=form.cleaned_data["new_password1"], actor=user,
                                 how="with a reset link sent by email")
        throttle.login_unlock(email=user.email)  # the lock's message offers the reset as the way out
        del self.request.session[auth_views.INTERNAL_RESET_SESSION_TOKEN]
        return redirect(self.get_success_url())


@post_only("dashboard:overview")
@permission_required(roles.PERSONAL)
def mode_switch(request: HttpRequest) -> HttpResponse:
    request.session["livemode"] = request.POST.get("mode") == "live"
    return redirect(page_in_either_mode(request.POST.get("next", "")))


def page_in_either_mode(path: str) -> str:
    """Where a mode switch lands: the page it was asked from when that page reads the same in both modes (a list,
    Settings), else the nearest dashboard page above it: an object's page shows an object of one mode (the charge's
    list then), and a form's URL has no page of its own (the page the form is on, the view's `back_to`)."""
    if not path.startswith("/dashboard/"):
        return reverse("dashboard:overview")
    segments = path.strip("/").split("/")
    while len(segments) > 1:
        candidate = "/" + "/".join(segments) + "/"
        segments.pop()
        try:
            match = resolve(candidate)
        except Resolver404:
            continue
        if match.kwargs:
            continue
        back_to = getattr(match.func, "back_to", None)
        if back_to is None:
            return candidate
        try:
            return reverse(back_to)
        except NoReverseMatch:
            continue
    return reverse("dashboard:overview")


@permission_required(roles.SETTINGS)
def kyc(request: HttpRequest) -> HttpResponse:
    merchant = request.merchant
    can_submit = merchant.kyc_status in (KycStatus.NOT_SUBMITTED, KycStatus.REJECTED)
    form = KycForm(request.POST or None, request.FILES or None) if can_submit else None
    if request.method == "POST":
        if refusal := refuse_if_suspended(request):
            return refusal
        if form is not None and form.is_valid():
            try:
                services.kyc_submit(merchant=merchant, data=form.kyc_data(), actor=request.user)
            except DomainError as error:
                messages.error(request, error.message)
            else:
                messages.success(request, gettext("KYC submitted. We review most submissions within one business day."))
            return redirect("dashboard:kyc")
    return render(request, "accounts/kyc.html", {
        "form": form, "submission": getattr(merchant, "kyc", None), "history": kyc_history(merchant=merchant),
    })


@permission_required(roles.PERSONAL)
def account_settings(request: HttpRequest) -> HttpResponse:
    """The account's email and merchant, and the password change, which takes the current password or a current code
    (accounts.reauth): a session alone may not change it. Allowed while suspended: a suspension may follow a
    compromised account, whose owner must still be able to lock the intruder out."""
    form = PasswordChangeProofForm(request.user, request.POST or None, request=request)
    if request.method == "POST":
        if form.is_valid():
            services.password_change(user=request.user, password=form.cleaned_data["new_password1"],
                                     actor=request.user, how="on the settings page")
            update_session_auth_hash(request, request.user)  # this session stays; the user's other sessions end
            sessions_end_all(user=request.user, keep=request.session.session_key)
            messages.success(request, gettext("Password changed. Other devices where you were logged in are logged "
                                              "out."))
            return redirect("dashboard:settings")
        response = render(request, "accounts/settings.html", {"form": form}, status=429 if form.retry_after else 400)
        if form.retry_after:
            response["Retry-After"] = str(form.retry_after)
        return response
    return render(request, "accounts/settings.html", {"form": form})
