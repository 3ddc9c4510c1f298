"""Dashboard pages of charges: list, detail with its refunds and event timeline, cancel, refund, sandbox actions."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib import messages
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts import roles
from accounts.access import merchant_required, permission_required, second_factor_required
from accounts.audit import audit_record
from accounts.models import AccountEvent
from accounts.views import refuse_if_suspended
from core.errors import DomainError, NotFound, ValidationFailed
from core.http import post_only
from payments.dashboard.forms import ChargeFilterForm, RefundForm, reais_text
from payments.dashboard.pages import keyset_page, refuse_write, sandbox_action, search, timeline
from payments.disputes.selectors import payin_disputes
from payments.disputes.services import DISPUTABLE, KIND_OF_METHOD
from payments.hosted.links import boleto_url, payment_url, qrcode_image_url
from payments.ledger.selectors import balance_get
from payments.ledger.services import InsufficientBalance
from payments.models import (
    Payin,
    PayinStatus,
    PaymentMethod,
    Refund,
    RefundStatus,
)
from payments.payins import refunds, transitions
from payments.payins import sandbox as payin_sandbox
from payments.payins import selectors as payin_selectors
from payments.payins import services as payins
from payments.templatetags.payments_format import brl

REFUND_TOKEN_SECONDS = 24 * 3600


PAYIN_SANDBOX = {"pay": _("Payment simulated: the charge is paid."), "expire": _("The charge expired."),
                 "chargeback": _("Chargeback simulated: a dispute is open and its amount is held."),
                 "med": _("MED simulated: a dispute is open and its amount is held.")}


# --- Charges ---------------------------------------------------------------------------------------------------------
def _payin_or_404(request: HttpRequest, payin_id) -> Payin:
    try:
        return payin_selectors.payin_get(merchant=request.merchant, livemode=request.livemode, payin_id=payin_id)
    except NotFound as exc:
        raise Http404("No such charge") from exc


@merchant_required
def charge_list(request: HttpRequest) -> HttpResponse:
    form = ChargeFilterForm(request.GET)
    form.is_valid()  # the valid filters apply; an invalid one is shown beside its input
    data = form.cleaned_data
    payins = payin_selectors.payin_list(merchant=request.merchant, livemode=request.livemode,
                                  status=data.get("status") or None, payment_method=data.get("method") or None)
    payins = form.apply(payins)
    if data.get("q"):
        payins = search(payins, data["q"])
    page = keyset_page(request, payins.defer("items", "metadata", "pix_payload"))
    return render(request, "payments/dashboard/charges.html", {
        "form": form, "filtered": any(data.get(name) for name in form.fields), **page,
        "public_base_url": settings.PUBLIC_BASE_URL})


def _charge_page(request: HttpRequest, payin: Payin, *, refund_form: RefundForm | None = None,
                 status: int = 200) -> HttpResponse:
    refunds = payin_selectors.refund_list(payin=payin)
    disputes = payin_disputes(payin=payin)
    left = payin.amount - payin.refunded_amount
    method, state = payin.payment_method, payin.status
    can_refund = (method != PaymentMethod.BOLETO and left > 0
                  and state in (PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED))
    if can_refund and refund_form is None:
        refund_form = RefundForm(initial={"amount": reais_text(left), "token": secrets.token_urlsafe(16)})
    sandbox_actions = []
    if not request.livemode:
        if method != PaymentMethod.CREDIT_CARD and state in transitions.TRANSITIONS[PayinStatus.PAID]:
            sandbox_actions.append(("pay", gettext("Simulate payment")))
        if method != PaymentMethod.CREDIT_CARD and state == PayinStatus.PENDING:
            sandbox_actions.append(("expire", gettext("Expire")))
        if state in DISPUTABLE and not disputes and method in KIND_OF_METHOD:
            if method == PaymentMethod.CREDIT_CARD:
                sandbox_actions.append(("chargeback", gettext("Simulate chargeback")))
            else:
                sandbox_actions.append(("med", gettext("Simulate MED")))
    items = [{**item, "total": item.get("quantity", 0) * item.get("unitPrice", 0)} for item in payin.items]
    return render(request, "payments/dashboard/charge_detail.html", {
        "payin": payin, "refunds": refunds, "disputes": disputes, "left": left, "items": items,
        "available": balance_get(merchant=request.merchant, livemode=request.livemode).available if can_refund else 0,
        "customer": payin.customer or {}, "address": (payin.customer or {}).get("address") or {},
        "events": timeline(request, [str(payin.pk), *(str(r.pk) for r in refunds)]), "object_id": str(payin.pk),
        "can_cancel": state == PayinStatus.PENDING and method != PaymentMethod.CREDIT_CARD,
        "refund_form": refund_form if can_refund else None, "sandbox_actions": sandbox_actions,
        "payment_url": payment_url(payin), "boleto_url": boleto_url(payin) if method == PaymentMethod.BOLETO else "",
        "qrcode_url": qrcode_image_url(payin) if method == PaymentMethod.PIX else "",
    }, status=status)


@merchant_required
def charge_detail(request: HttpRequest, payin_id) -> HttpResponse:
    return _charge_page(request, _payin_or_404(request, payin_id))


@post_only("dashboard:charge_detail", keep=["payin_id"])
@permission_required(roles.MONEY)
def charge_cancel(request: HttpRequest, payin_id) -> HttpResponse:
    if refusal := refuse_write(request):
        return refusal
    payin = _payin_or_404(request, payin_id)
    try:
        payins.payin_cancel(merchant=request.merchant, livemode=request.livemode, payin_id=payin.pk)
    except DomainError as error:
        messages.error(request, error.message)
    else:
        audit_record(request, merchant=request.merchant, action=AccountEvent.Action.CHARGE_CANCELED,
                     obj_type="payin", obj_id=str(payin.pk), before={"status": payin.status},
                     after={"status": "CANCELED"})
        messages.success(request, gettext("Charge canceled. The payer can no longer pay it."))
    return redirect("dashboard:charge_detail", payin_id=payin.pk)


@post_only("dashboard:charge_detail", keep=["payin_id"])
@permission_required(roles.MONEY)
@second_factor_required
def charge_refund(request: HttpRequest, payin_id) -> HttpResponse:
    if refusal := refuse_write(request):
        return refusal
    payin = _payin_or_404(request, payin_id)
    form = RefundForm(request.POST)
    if form.is_valid():
        token_key = f"dashboard:refund:{request.merchant.pk}:{form.cleaned_data['token']}"
        if not cache.add(token_key, 1, REFUND_TOKEN_SECONDS):
            messages.warning(request, gettext("This refund was already submitted; nothing more was refunded."))
            return redirect("dashboard:charge_detail", payin_id=payin.pk)
        try:
            refund = refunds.refund_create(merchant=request.merchant, livemode=request.livemode, payin_id=payin.pk,
                                            amount=form.cleaned_data["amount"], reason=form.cleaned_data["reason"])
        except InsufficientBalance:
            available = balance_get(merchant=request.merchant, livemode=request.livemode).available
            form.add_error("amount", gettext("Insufficient balance: refunds are paid from your available balance, "
                                             "which is %(available)s.") % {"available": brl(available)})
        except ValidationFailed:
            left = payin.amount - payin.refunded_amount
            form.add_error("amount", gettext("At most %(left)s of this charge can still be refunded.") % {
                "left": brl(left)})
        except DomainError as error:
            messages.error(request, error.message)
            return redirect("dashboard:charge_detail", payin_id=payin.pk)
        else:
            audit_record(request, merchant=request.merchant, action=AccountEvent.Action.REFUND_CREATED,
                         obj_type="refund", obj_id=str(refund.pk),
                         after={"payin": str(payin.pk), "amount": refund.amount, "status": refund.status})
            messages.success(request, _refund_message(refund))
            return redirect("dashboard:charge_detail", payin_id=payin.pk)
        cache.delete(token_key)  # nothing was refunded: the same form may be sent again, corrected
    return _charge_page(request, _payin_or_404(request, payin_id), refund_form=form, status=400)


def _refund_message(refund: Refund) -> str:
    if refund.status == RefundStatus.SUCCEEDED:
        return gettext("Refund of %(amount)s succeeded.") % {"amount": brl(refund.amount)}
    if refund.status == RefundStatus.FAILED:
        return gettext("The refund of %(amount)s failed; the money is back in your balance.") % {
            "amount": brl(refund.amount)}
    return gettext("Refund of %(amount)s requested. Pix refunds are confirmed by the bank, usually within seconds; "
                   "this page shows when.") % {"amount": brl(refund.amount)}


@post_only("dashboard:charge_detail", keep=["payin_id"])
@permission_required(roles.MONEY)
def charge_simulate(request: HttpRequest, payin_id) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    payin = _payin_or_404(request, payin_id)
    return sandbox_action(request, redirect("dashboard:charge_detail", payin_id=payin.pk), PAYIN_SANDBOX,
                           lambda action: payin_sandbox.payin_simulate(merchant=request.merchant, payin_id=payin.pk,
                                                                 action=action))
