"""Dashboard pages of payouts: list, detail, the new-payout form with its review step, cancel, sandbox actions."""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _

from accounts import roles
from accounts.access import merchant_required, permission_required, second_factor_required
from accounts.audit import audit_record
from accounts.models import AccountEvent
from accounts.views import refuse_if_suspended
from core.dates import sao_paulo_today
from core.errors import DomainError, NotFound
from core.http import post_only
from payments import policy, rails
from payments.dashboard.forms import PayoutFilterForm, PayoutForm, ReaisField
from payments.dashboard.pages import keyset_page, refuse_write, sandbox_action, search, timeline
from payments.ledger.selectors import balance_get
from payments.ledger.services import InsufficientBalance
from payments.models import (
    Payout,
    PayoutStatus,
    PixKeyType,
)
from payments.payouts import selectors as payout_selectors
from payments.payouts import services as payouts
from payments.payouts.services import DuplicateReferenceId, PayoutLimitExceeded
from payments.payouts.validation import payout_request_validate
from payments.templatetags.payments_format import brl, sp_date

PAYOUT_SANDBOX = {"complete": _("The payout completed."),
                  "fail": _("The payout failed; the money is back in the balance."),
                  "return": _("The receiving bank returned the payout; the money is back in the balance.")}


def _reference_id_new() -> str:
    return f"payout-{sao_paulo_today():%Y%m%d}-{secrets.token_hex(4)}"


# --- Payouts ---------------------------------------------------------------------------------------------------------
def _payout_or_404(request: HttpRequest, payout_id) -> Payout:
    try:
        return payout_selectors.payout_get(merchant=request.merchant, livemode=request.livemode, payout_id=payout_id)
    except NotFound as exc:
        raise Http404("No such payout") from exc


@merchant_required
def payout_list(request: HttpRequest) -> HttpResponse:
    form = PayoutFilterForm(request.GET)
    form.is_valid()
    data = form.cleaned_data
    rows = form.apply(payout_selectors.payout_list(merchant=request.merchant, livemode=request.livemode,
                                            status=data.get("status") or None))
    if data.get("q"):
        rows = search(rows, data["q"])
    page = keyset_page(request, rows.defer("metadata"))
    return render(request, "payments/dashboard/payouts.html", {
        "form": form, "filtered": any(data.get(name) for name in form.fields), **page,
        "balance": balance_get(merchant=request.merchant, livemode=request.livemode)})


@merchant_required
def payout_detail(request: HttpRequest, payout_id) -> HttpResponse:
    payout = _payout_or_404(request, payout_id)
    sandbox_actions = []
    if not request.livemode:
        if payout.status in payouts.TRANSITIONS[PayoutStatus.FAILED]:
            sandbox_actions += [("complete", gettext("Simulate completion")), ("fail", gettext("Simulate failure"))]
        if payout.status == PayoutStatus.COMPLETED:
            sandbox_actions.append(("return", gettext("Simulate return")))
    return render(request, "payments/dashboard/payout_detail.html", {
        "payout": payout, "events": timeline(request, [str(payout.pk)]), "object_id": str(payout.pk),
        "sandbox_actions": sandbox_actions, "can_cancel": payout.status == PayoutStatus.PENDING,
        # The id a real rail keys the send on (the payout's UUID as 32 hex digits), for support calls with the bank.
        "rail_send_id": payout.id.hex if rails.is_real(payout.livemode) else ""})


@post_only("dashboard:payout_detail", keep=["payout_id"])
@permission_required(roles.MONEY)
def payout_cancel(request: HttpRequest, payout_id) -> HttpResponse:
    if refusal := refuse_write(request):
        return refusal
    payout = _payout_or_404(request, payout_id)
    try:
        payouts.payout_cancel(merchant=request.merchant, livemode=request.livemode, payout_id=payout.pk)
    except DomainError:
        status = pgettext("payout status", _payout_or_404(request, payout_id).get_status_display()).lower()
        messages.error(request, gettext("This payout can no longer be canceled: it is %(status)s.") % {
            "status": status})
    else:
        audit_record(request, merchant=request.merchant, action=AccountEvent.Action.PAYOUT_CANCELED,
                     obj_type="payout", obj_id=str(payout.pk), before={"status": payout.status},
                     after={"status": "CANCELED"})
        messages.success(request, gettext("Payout canceled; %(total)s is back in your balance.") % {
            "total": brl(payout.amount + payout.fee)})
    return redirect("dashboard:payout_detail", payout_id=payout.pk)


@post_only("dashboard:payout_detail", keep=["payout_id"])
@permission_required(roles.MONEY)
def payout_simulate(request: HttpRequest, payout_id) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    payout = _payout_or_404(request, payout_id)
    return sandbox_action(request, redirect("dashboard:payout_detail", payout_id=payout.pk), PAYOUT_SANDBOX,
                           lambda action: payouts.payout_simulate(merchant=request.merchant, payout_id=payout.pk,
                                                                  action=action))


def _payout_validate(request: HttpRequest, form: PayoutForm) -> dict | None:
    """The form through the API's own validator; its problems land beside the fields they name."""
    if not form.is_valid():
        return None
    try:
        return payout_request_validate(form.api_body(), merchant=request.merchant)
    except DomainError as error:
        maximum = policy.payout_max_amount(request.merchant)
        for problem in error.details or [{"param": error.param, "code": error.code, "message": error.message}]:
            field = PayoutForm.FIELDS.get(problem.get("param") or "")
            message = problem["message"]
            if problem["code"] == "payout_limit_exceeded":
                message = gettext("At most %(maximum)s per payout.") % {"maximum": brl(maximum)}
            elif problem["code"] == "amount_too_small":
                message = str(ReaisField.default_error_messages["too_small"])
            form.add_error(field, message.replace("pixKeyType", "key type").replace("pixKey", "the Pix key"))
        return None


def _payout_refusal(request: HttpRequest, form: PayoutForm, error: DomainError) -> None:
    """Why the service refused: beside the amount for money and limits, else above the form."""
    if isinstance(error, InsufficientBalance):
        available = balance_get(merchant=request.merchant, livemode=request.livemode).available
        form.add_error("amount", gettext("Insufficient balance: your available balance is %(available)s, and a payout "
                                         "takes its amount plus the fee from it.") % {"available": brl(available)})
    elif isinstance(error, PayoutLimitExceeded):
        daily = policy.payout_daily_max(request.merchant)
        form.add_error("amount", gettext("Today's payouts would exceed your daily limit of %(daily)s.") % {
            "daily": brl(daily)})
    else:
        form.add_error(None, error.message)


@permission_required(roles.MONEY, read_permission=roles.MONEY)
@second_factor_required
def payout_new(request: HttpRequest) -> HttpResponse:
    """A form, then a confirmation page carrying the checked values in hidden fields, then the payout. Sending twice
    (a double click, a reload, the back button) is safe: the referenceId, fixed when the form is first shown, is
    unique, so a second confirmation finds the first payout instead of sending another."""
    if request.method != "POST":
        form = PayoutForm(initial={"reference_id": _reference_id_new(), "pix_key_type": PixKeyType.EVP})
        return _payout_form(request, form)
    if refusal := refuse_write(request):
        return refusal
    form = PayoutForm(request.POST)
    action = request.POST.get("action", "review")
    if action == "edit":
        return _payout_form(request, form)
    data = _payout_validate(request, form)
    if data is None:
        return _payout_form(request, form, status=400)
    if action != "confirm":
        return _payout_review(request, form, data)
    try:
        payout = payouts.payout_create(merchant=request.merchant, livemode=request.livemode, data=data)
    except DuplicateReferenceId as error:
        existing = error.details[0]["existingId"]
        messages.warning(request, gettext("This payout was already sent (same reference id); nothing more was sent."))
        return redirect("dashboard:payout_detail", payout_id=existing)
    except DomainError as error:
        _payout_refusal(request, form, error)
        return _payout_form(request, form, status=400)
    audit_record(request, merchant=request.merchant, action=AccountEvent.Action.PAYOUT_CREATED, obj_type="payout",
                 obj_id=str(payout.pk), after={"amount": payout.amount, "fee": payout.fee, "pix_key_type":
                                               payout.pix_key_type, "reference_id": payout.reference_id})
    messages.success(request, gettext("Payout of %(amount)s sent to %(type)s key %(key)s.") % {
        "amount": brl(payout.amount), "type": pgettext("pix key type", payout.pix_key_type), "key": payout.pix_key})
    return redirect("dashboard:payout_detail", payout_id=payout.pk)


def _payout_form(request: HttpRequest, form: PayoutForm, *, status: int = 200) -> HttpResponse:
    return render(request, "payments/dashboard/payout_new.html", {
        "form": form, "balance": balance_get(merchant=request.merchant, livemode=request.livemode)}, status=status)


def _payout_review(request: HttpRequest, form: PayoutForm, data: dict) -> HttpResponse:
    """The confirmation step; it writes nothing. What would refuse the payout now is said now, beside the field."""
    existing = payout_selectors.payout_list(merchant=request.merchant, livemode=request.livemode,
                                     reference_id=data["reference_id"]).first()
    if existing is not None:
        form.add_error("reference_id", gettext("Already used by a payout of %(amount)s created %(day)s. Choose another "
                                               "reference id.") % {"amount": brl(existing.amount),
                                                                   "day": sp_date(existing.created_at)})
        return _payout_form(request, form, status=400)
    fee = policy.payout_fee(merchant=request.merchant, amount=data["amount"])
    available = balance_get(merchant=request.merchant, livemode=request.livemode).available
    if available < data["amount"] + fee:
        _payout_refusal(request, form, InsufficientBalance())
        return _payout_form(request, form, status=400)
    return render(request, "payments/dashboard/payout_confirm.html", {
        "form": form, "data": data, "fee": fee, "total": data["amount"] + fee, "available": available,
        "available_after": available - data["amount"] - fee})
