"""Dashboard pages for the account: sign-up, log in (throttled), password reset (throttled), overview, mode switch,
KYC, settings."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_POST

from accounts import services, throttle
from accounts.forms import KycForm, LoginForm, SignupForm
from accounts.models import KycStatus
from accounts.selectors import kyc_history, merchant_of
from config.errors import DomainError
from integrations.authentication import client_ip


def merchant_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Log-in required, and the user must own a merchant; `request.merchant` and `request.livemode` (the session's
    mode, test unless switched) are set for the view and templates."""

    @login_required
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        request.merchant = merchant_of(request.user)
        request.livemode = request.session.get("livemode", False)
        if request.merchant is None:
            return render(request, "accounts/no_merchant.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


def refuse_if_suspended(request: HttpRequest) -> HttpResponse | None:
    """A suspended account's dashboard is read-only: every form post is refused with a message."""
    if request.merchant.is_suspended:
        messages.error(request, "Your account is suspended, so the dashboard is read-only. Contact support.")
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
            form.add_error("email", "An account with this email already exists. Log in instead?")
        else:
            login(request, merchant.owner, backend="django.contrib.auth.backends.ModelBackend")
            request.session["livemode"] = False
            messages.success(request, "Welcome! You are in test mode: create a test key and try the API now, "
                                      "and submit your KYC to go live.")
            return redirect("dashboard:overview")
    return render(request, "accounts/signup.html", {"form": form})


class LoginView(auth_views.LoginView):
    template_name = "accounts/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def form_valid(self, form):
        response = super().form_valid(form)
        self.request.session["livemode"] = False  # a new session starts in test mode
        return response

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.retry_after:
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response


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


@merchant_required
def overview(request: HttpRequest) -> HttpResponse:
    """Balances, today's and the month's paid volume, 30 days of it as a chart, the latest charges and payouts, and
    what to do next while there is nothing yet (a key, a first charge, KYC)."""
    # Imported here: payments' views import this module for `merchant_required`.
    from datetime import timedelta

    from django.conf import settings
    from django.urls import reverse

    from payments.charts import daily_volume, volume_chart_svg
    from payments.ledger import balance_get
    from payments.selectors import payin_list, payout_list
    from payments.services import sao_paulo_today

    merchant, livemode = request.merchant, request.livemode
    today = sao_paulo_today()
    month_start = today.replace(day=1)
    days = daily_volume(merchant=merchant, livemode=livemode, first=min(month_start, today - timedelta(days=29)),
                        last=today)
    chart_days = days[-30:]
    month = [day for day in days if day.day >= month_start]
    charges = list(payin_list(merchant=merchant, livemode=livemode).order_by("-created_at", "-id")
                   .defer("items", "metadata", "pix_payload")[:10])
    sent = list(payout_list(merchant=merchant, livemode=livemode).order_by("-created_at", "-id")[:10])
    activity = [{"kind": "Charge", "url": reverse("dashboard:charge_detail", args=[p.pk]), "obj": p,
                 "what": p.get_payment_method_display(), "status": p.status, "label": p.get_status_display(),
                 "sign": ""} for p in charges]
    activity += [{"kind": "Payout", "url": reverse("dashboard:payout_detail", args=[p.pk]), "obj": p,
                  "what": f"Pix to {p.pix_key_type} key", "status": p.status, "label": p.get_status_display(),
                  "sign": "-"} for p in sent]
    activity.sort(key=lambda row: (row["obj"].created_at, str(row["obj"].pk)), reverse=True)
    return render(request, "accounts/overview.html", {
        "api_keys": merchant.api_keys.filter(revoked_at__isnull=True, livemode=livemode).count(),
        "balance": balance_get(merchant=merchant, livemode=livemode),
        "today": days[-1], "month_amount": sum(day.amount for day in month),
        "month_count": sum(day.count for day in month), "chart_days": chart_days,
        "chart": volume_chart_svg(chart_days, title="Paid volume per day, last 30 days"),
        "activity": activity[:10], "has_charges": bool(charges), "public_base_url": settings.PUBLIC_BASE_URL,
    })


@require_POST
@merchant_required
def mode_switch(request: HttpRequest) -> HttpResponse:
    request.session["livemode"] = request.POST.get("mode") == "live"
    next_url = request.POST.get("next", "")
    return redirect(next_url if next_url.startswith("/dashboard/") else "dashboard:overview")


@merchant_required
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
                messages.success(request, "KYC submitted. We review most submissions within one business day.")
            return redirect("dashboard:kyc")
    return render(request, "accounts/kyc.html", {
        "form": form, "submission": getattr(merchant, "kyc", None), "history": kyc_history(merchant=merchant),
    })


@merchant_required
def account_settings(request: HttpRequest) -> HttpResponse:
    """The account's email and merchant, and the password change. Allowed while suspended: a suspension may follow
    a compromised account, whose owner must still be able to lock the intruder out."""
    form = PasswordChangeForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.password_change(user=request.user, password=form.cleaned_data["new_password1"], actor=request.user,
                                 how="on the settings page")
        update_session_auth_hash(request, request.user)  # this session stays; the user's other sessions end
        messages.success(request, "Password changed. Other devices where you were logged in are logged out.")
        return redirect("dashboard:settings")
    return render(request, "accounts/settings.html", {"form": form})
