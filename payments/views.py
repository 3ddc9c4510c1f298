"""Dashboard pages of payments (SPEC §9): charges, payouts and the statement.

Thin, as the API views are: a page reads through a selector, a form posts to one service call, and a `DomainError`
becomes a message or an error beside the field it is about. Every query is scoped to `request.merchant` and
`request.livemode` (set by `merchant_required`): another merchant's or the other mode's object is a 404. Lists are
keyset-paginated with the API's own cursor (`config.api.paginate`), never OFFSET.

The forms live here because they only translate the dashboard's text inputs (reais typed as "1.234,56", Sao Paulo
calendar days) into what the services already validate; the rules themselves stay in the services and validators.
"""

from __future__ import annotations

import csv
import re
import secrets
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.cache import cache
from django.db.models import Prefetch, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.models import KycStatus
from accounts.views import merchant_required, refuse_if_suspended
from config.api import paginate, timestamp
from config.errors import DomainError, NotFound, PayoutLimitExceeded, ValidationFailed
from payments import fees, payouts, sandbox, selectors, services
from payments.charts import sao_paulo_midnight
from payments.ledger import balance_get
from payments.models import (
    LineType,
    Payin,
    PayinStatus,
    PaymentMethod,
    Payout,
    PayoutStatus,
    PixKeyType,
    Refund,
    RefundStatus,
)
from payments.pages import boleto_url, payment_url, qrcode_image_url
from payments.payout_validation import payout_request_validate
from payments.payouts import DuplicateReferenceId
from payments.services import InsufficientBalance, sao_paulo_today
from payments.templatetags.payments_format import brl, sp_date
from webhooks.models import Delivery, Event

PAGE_SIZE = 25
TIMELINE_MAX = 200
CSV_CHUNK = 2000
REFUND_TOKEN_SECONDS = 24 * 3600

LINE_LABELS = {
    LineType.PAYIN: "Charge", LineType.PAYIN_FEE: "Charge fee", LineType.REFUND: "Refund",
    LineType.PAYOUT: "Payout", LineType.PAYOUT_FEE: "Payout fee", LineType.PAYOUT_REVERSAL: "Payout reversal",
    LineType.CHARGEBACK: "Chargeback", LineType.SETTLEMENT: "Card settlement", LineType.ADJUSTMENT: "Adjustment",
}
PAYIN_SANDBOX = {"pay": "Payment simulated: the charge is paid.", "expire": "The charge expired.",
                 "chargeback": "Chargeback simulated: the amount left the available balance."}
PAYOUT_SANDBOX = {"complete": "The payout completed.", "fail": "The payout failed; the money is back in the balance.",
                  "return": "The receiving bank returned the payout; the money is back in the balance."}


# --- Input -----------------------------------------------------------------------------------------------------------
_REAIS_BR = re.compile(r"(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d{1,2}))?", re.ASCII)  # 1.234,56 · 1234,56 · 1.234 · 12
_REAIS_DOT = re.compile(r"(\d+)\.(\d{1,2})", re.ASCII)  # 12.34 · 1234.5


def cents_parse(text: str) -> int | None:
    """Reais as people type them, to integer cents, without floats or Decimal: "12,34", "12.34", "1.234,56",
    "R$ 50" → 1234, 1234, 123456, 5000. A dot followed by three digits groups thousands ("1.234" is R$ 1.234,00);
    anything ambiguous or with more than two decimals ("1,234", "1.5.0", "12,345") is None."""
    text = text.strip().removeprefix("R$").replace(" ", "").replace("\u00a0", "")
    match = _REAIS_BR.fullmatch(text) or _REAIS_DOT.fullmatch(text)
    if match is None or len(match.group(1)) > 15:
        return None
    reais = int(match.group(1).replace(".", ""))
    centavos = int((match.group(2) or "0").ljust(2, "0"))
    return reais * 100 + centavos


class ReaisField(forms.CharField):
    """A text input of reais whose cleaned value is integer cents (None when left blank and not required)."""

    default_error_messages = {"invalid": "Enter an amount in reais, like 50,00 or 1.234,56.",
                              "too_small": "Enter an amount of at least R$ 0,01."}

    MAX_LENGTH = 24

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)  # no max_length: its validator would measure the cleaned cents
        self.widget.attrs.update({"inputmode": "decimal", "autocomplete": "off", "maxlength": str(self.MAX_LENGTH)})

    def to_python(self, value):
        text = super().to_python(value)
        if text in self.empty_values:
            return None
        cents = cents_parse(text) if len(text) <= self.MAX_LENGTH else None
        if cents is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        if cents < 1:
            raise forms.ValidationError(self.error_messages["too_small"], code="too_small")
        return cents


def reais_text(cents: int) -> str:
    """Cents as the text a ReaisField reads back: 123456 → "1.234,56"."""
    return brl(cents).removeprefix("R$ ")


class _DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self) -> None:
        super().__init__(format="%Y-%m-%d")


def _date_field(label: str) -> forms.DateField:
    return forms.DateField(required=False, label=label, widget=_DateInput(),
                           input_formats=["%Y-%m-%d", "%d/%m/%Y"],
                           error_messages={"invalid": "Enter a date like 31/12/2026."})


class _RangeForm(forms.Form):
    """A Sao Paulo calendar-day range, both ends inclusive."""

    created_from = _date_field("From")
    created_to = _date_field("To")

    def clean(self):
        data = super().clean()
        first, last = data.get("created_from"), data.get("created_to")
        if first and last and last < first:
            self.add_error("created_to", "Must be on or after the first day.")
        return data

    def apply(self, queryset: QuerySet) -> QuerySet:
        """The range's valid ends applied to `queryset` (an invalid end is shown beside its input, not applied)."""
        self.is_valid()
        data = self.cleaned_data
        if data.get("created_from"):
            queryset = queryset.filter(created_at__gte=sao_paulo_midnight(data["created_from"]))
        if data.get("created_to"):
            queryset = queryset.filter(created_at__lt=sao_paulo_midnight(data["created_to"] + timedelta(days=1)))
        return queryset


class ChargeFilterForm(_RangeForm):
    q = forms.CharField(required=False, max_length=64, label="Charge id or referenceId")
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *PayinStatus.choices])
    method = forms.ChoiceField(required=False, label="Payment method",
                               choices=[("", "Any method"), *PaymentMethod.choices])
    field_order = ["q", "status", "method", "created_from", "created_to"]


class PayoutFilterForm(_RangeForm):
    q = forms.CharField(required=False, max_length=64, label="Payout id or referenceId")
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *PayoutStatus.choices])
    field_order = ["q", "status", "created_from", "created_to"]


class RefundForm(forms.Form):
    amount = ReaisField(required=False, label="Amount to refund (R$)",
                        help_text="Leave blank to refund everything that is left.")
    reason = forms.CharField(required=False, max_length=255, label="Reason (optional)")
    # One refund per rendered form: a double click or a resent POST finds its token taken.
    token = forms.CharField(widget=forms.HiddenInput, max_length=64)


class PayoutForm(forms.Form):
    amount = ReaisField(label="Amount (R$)", help_text="In reais, like 50,00.")
    pix_key_type = forms.ChoiceField(label="Pix key type", choices=PixKeyType.choices)
    pix_key = forms.CharField(label="Pix key", max_length=77,
                              help_text="CPF or CNPJ without punctuation, e-mail, +55 phone, or random key (EVP).")
    beneficiary_name = forms.CharField(label="Beneficiary name (optional)", required=False, max_length=120)
    beneficiary_document = forms.CharField(
        label="Beneficiary CPF or CNPJ (optional)", required=False, max_length=20,
        help_text="For a CPF or CNPJ key it must be the key's own document.")
    description = forms.CharField(label="Description (optional)", required=False, max_length=140)
    reference_id = forms.CharField(
        label="Reference id", max_length=64,
        help_text="Your own id for this payout. It is unique: the same reference is never sent twice.")

    # The API's field names (payout_request_validate's `details[].param`) → this form's.
    FIELDS = {"amount": "amount", "pixKeyType": "pix_key_type", "pixKey": "pix_key",
              "beneficiaryName": "beneficiary_name", "beneficiaryDocument": "beneficiary_document",
              "description": "description", "referenceId": "reference_id"}

    def api_body(self) -> dict:
        """The cleaned form as a POST /payout body; optional fields left blank are left out, as an API client
        would leave them out."""
        body = {param: self.cleaned_data[name] for param, name in self.FIELDS.items()}
        return {param: value for param, value in body.items() if value not in ("", None)}


def _reference_id_new() -> str:
    return f"payout-{sao_paulo_today():%Y%m%d}-{secrets.token_hex(4)}"


# --- Shared ----------------------------------------------------------------------------------------------------------
def _itself(obj):
    return obj


def _keyset_page(request: HttpRequest, queryset: QuerySet) -> dict:
    """One page, newest first, and the links around it, keeping the page's filters in the links."""
    cursor = request.GET.get("cursor") or None
    params = {"limit": str(PAGE_SIZE), "cursor": cursor}
    try:
        page = paginate(queryset, params=params, serialize=_itself)
    except DomainError:  # an edited or very old link: start again from the newest
        cursor = None
        page = paginate(queryset, params={"limit": str(PAGE_SIZE)}, serialize=_itself)
    query = request.GET.copy()
    query.pop("cursor", None)
    first_url = f"?{query.urlencode()}" if cursor else None
    next_url = None
    if page.next_cursor:
        query["cursor"] = page.next_cursor
        next_url = f"?{query.urlencode()}"
    return {"rows": page.data, "next_url": next_url, "first_url": first_url, "paged": bool(cursor)}


def _search(queryset: QuerySet, text: str) -> QuerySet:
    """An exact id, or an exact referenceId (which may itself look like a UUID)."""
    try:
        return queryset.filter(Q(pk=uuid.UUID(text)) | Q(reference_id=text))
    except ValueError:
        return queryset.filter(reference_id=text)


def _timeline(request: HttpRequest, object_ids: list[str]) -> list[Event]:
    """The events of these objects, oldest first, each with its webhook deliveries."""
    deliveries = Prefetch("deliveries", queryset=Delivery.objects.order_by("created_at", "id"))
    return list(Event.objects.filter(merchant=request.merchant, livemode=request.livemode, object_id__in=object_ids)
                .only("id", "type", "object_id", "created_at").order_by("created_at", "id")
                .prefetch_related(deliveries)[:TIMELINE_MAX])


def _refuse_write(request: HttpRequest) -> HttpResponse | None:
    """A suspended account is read-only; live mode moves real money only once KYC is approved (the API's rule for
    live keys)."""
    if refusal := refuse_if_suspended(request):
        return refusal
    if request.livemode and request.merchant.kyc_status != KycStatus.APPROVED:
        messages.error(request, "Live mode works once your KYC is approved. Until then, use test mode.")
        return redirect("dashboard:kyc")
    return None


def _test_mode_only(request: HttpRequest, back: HttpResponse) -> HttpResponse | None:
    if request.livemode:
        messages.error(request, "Sandbox controls work in test mode only.")
        return back
    return None


# --- Charges ---------------------------------------------------------------------------------------------------------
def _payin_or_404(request: HttpRequest, payin_id) -> Payin:
    try:
        return selectors.payin_get(merchant=request.merchant, livemode=request.livemode, payin_id=payin_id)
    except NotFound as exc:
        raise Http404("No such charge") from exc


@merchant_required
def charge_list(request: HttpRequest) -> HttpResponse:
    form = ChargeFilterForm(request.GET)
    form.is_valid()  # the valid filters apply; an invalid one is shown beside its input
    data = form.cleaned_data
    payins = selectors.payin_list(merchant=request.merchant, livemode=request.livemode,
                                  status=data.get("status") or None, payment_method=data.get("method") or None)
    payins = form.apply(payins)
    if data.get("q"):
        payins = _search(payins, data["q"])
    page = _keyset_page(request, payins.defer("items", "metadata", "pix_payload"))
    return render(request, "payments/dashboard/charges.html", {
        "form": form, "filtered": any(data.get(name) for name in form.fields), **page,
        "public_base_url": settings.PUBLIC_BASE_URL})


def _charge_page(request: HttpRequest, payin: Payin, *, refund_form: RefundForm | None = None,
                 status: int = 200) -> HttpResponse:
    refunds = selectors.refund_list(payin=payin)
    left = payin.amount - payin.refunded_amount
    method, state = payin.payment_method, payin.status
    can_refund = (method != PaymentMethod.BOLETO and left > 0
                  and state in (PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED))
    if can_refund and refund_form is None:
        refund_form = RefundForm(initial={"amount": reais_text(left), "token": secrets.token_urlsafe(16)})
    sandbox_actions = []
    if not request.livemode:
        if method != PaymentMethod.CREDIT_CARD and state in services.TRANSITIONS[PayinStatus.PAID]:
            sandbox_actions.append(("pay", "Simulate payment"))
        if method != PaymentMethod.CREDIT_CARD and state == PayinStatus.PENDING:
            sandbox_actions.append(("expire", "Expire"))
        if method != PaymentMethod.BOLETO and state in services.TRANSITIONS[PayinStatus.CHARGEBACK]:
            sandbox_actions.append(("chargeback", "Simulate chargeback"))
    items = [{**item, "total": item.get("quantity", 0) * item.get("unitPrice", 0)} for item in payin.items]
    return render(request, "payments/dashboard/charge_detail.html", {
        "payin": payin, "refunds": refunds, "left": left, "items": items,
        "available": balance_get(merchant=request.merchant, livemode=request.livemode).available if can_refund else 0,
        "customer": payin.customer or {}, "address": (payin.customer or {}).get("address") or {},
        "events": _timeline(request, [str(payin.pk), *(str(r.pk) for r in refunds)]), "object_id": str(payin.pk),
        "can_cancel": state == PayinStatus.PENDING and method != PaymentMethod.CREDIT_CARD,
        "refund_form": refund_form if can_refund else None, "sandbox_actions": sandbox_actions,
        "payment_url": payment_url(payin), "boleto_url": boleto_url(payin) if method == PaymentMethod.BOLETO else "",
        "qrcode_url": qrcode_image_url(payin) if method == PaymentMethod.PIX else "",
    }, status=status)


@merchant_required
def charge_detail(request: HttpRequest, payin_id) -> HttpResponse:
    return _charge_page(request, _payin_or_404(request, payin_id))


@require_POST
@merchant_required
def charge_cancel(request: HttpRequest, payin_id) -> HttpResponse:
    if refusal := _refuse_write(request):
        return refusal
    payin = _payin_or_404(request, payin_id)
    try:
        services.payin_cancel(merchant=request.merchant, livemode=request.livemode, payin_id=payin.pk)
    except DomainError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "Charge canceled. The payer can no longer pay it.")
    return redirect("dashboard:charge_detail", payin_id=payin.pk)


@require_POST
@merchant_required
def charge_refund(request: HttpRequest, payin_id) -> HttpResponse:
    if refusal := _refuse_write(request):
        return refusal
    payin = _payin_or_404(request, payin_id)
    form = RefundForm(request.POST)
    if form.is_valid():
        token_key = f"dashboard:refund:{request.merchant.pk}:{form.cleaned_data['token']}"
        if not cache.add(token_key, 1, REFUND_TOKEN_SECONDS):
            messages.warning(request, "This refund was already submitted; nothing more was refunded.")
            return redirect("dashboard:charge_detail", payin_id=payin.pk)
        try:
            refund = services.refund_create(merchant=request.merchant, livemode=request.livemode, payin_id=payin.pk,
                                            amount=form.cleaned_data["amount"], reason=form.cleaned_data["reason"])
        except InsufficientBalance:
            available = balance_get(merchant=request.merchant, livemode=request.livemode).available
            form.add_error("amount", f"Insufficient balance: refunds are paid from your available balance, which is "
                                     f"{brl(available)}.")
        except ValidationFailed:
            left = payin.amount - payin.refunded_amount
            form.add_error("amount", f"At most {brl(left)} of this charge can still be refunded.")
        except DomainError as error:
            messages.error(request, error.message)
            return redirect("dashboard:charge_detail", payin_id=payin.pk)
        else:
            messages.success(request, _refund_message(refund))
            return redirect("dashboard:charge_detail", payin_id=payin.pk)
        cache.delete(token_key)  # nothing was refunded: the same form may be sent again, corrected
    return _charge_page(request, _payin_or_404(request, payin_id), refund_form=form, status=400)


def _refund_message(refund: Refund) -> str:
    if refund.status == RefundStatus.SUCCEEDED:
        return f"Refund of {brl(refund.amount)} succeeded."
    if refund.status == RefundStatus.FAILED:
        return f"The refund of {brl(refund.amount)} failed; the money is back in your balance."
    return (f"Refund of {brl(refund.amount)} requested. Pix refunds are confirmed by the bank, usually within "
            "seconds; this page shows when.")


@require_POST
@merchant_required
def charge_simulate(request: HttpRequest, payin_id) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    payin = _payin_or_404(request, payin_id)
    return _sandbox_action(request, redirect("dashboard:charge_detail", payin_id=payin.pk), PAYIN_SANDBOX,
                           lambda action: sandbox.payin_simulate(merchant=request.merchant, payin_id=payin.pk,
                                                                 action=action))


def _sandbox_action(request: HttpRequest, back: HttpResponse, actions: dict[str, str],
                    simulate: Callable[[str], object]) -> HttpResponse:
    """A sandbox button: test mode only, one of `actions` (action → success message), refusals as messages."""
    if refusal := _test_mode_only(request, back):
        return refusal
    action = request.POST.get("action", "")
    if action not in actions:
        messages.error(request, "Unknown sandbox action.")
        return back
    try:
        simulate(action)
    except DomainError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, actions[action])
    return back


# --- Payouts ---------------------------------------------------------------------------------------------------------
def _payout_or_404(request: HttpRequest, payout_id) -> Payout:
    try:
        return selectors.payout_get(merchant=request.merchant, livemode=request.livemode, payout_id=payout_id)
    except NotFound as exc:
        raise Http404("No such payout") from exc


@merchant_required
def payout_list(request: HttpRequest) -> HttpResponse:
    form = PayoutFilterForm(request.GET)
    form.is_valid()
    data = form.cleaned_data
    rows = form.apply(selectors.payout_list(merchant=request.merchant, livemode=request.livemode,
                                            status=data.get("status") or None))
    if data.get("q"):
        rows = _search(rows, data["q"])
    page = _keyset_page(request, rows.defer("metadata"))
    return render(request, "payments/dashboard/payouts.html", {
        "form": form, "filtered": any(data.get(name) for name in form.fields), **page,
        "balance": balance_get(merchant=request.merchant, livemode=request.livemode)})


@merchant_required
def payout_detail(request: HttpRequest, payout_id) -> HttpResponse:
    payout = _payout_or_404(request, payout_id)
    sandbox_actions = []
    if not request.livemode:
        if payout.status in payouts.TRANSITIONS[PayoutStatus.FAILED]:
            sandbox_actions += [("complete", "Simulate completion"), ("fail", "Simulate failure")]
        if payout.status == PayoutStatus.COMPLETED:
            sandbox_actions.append(("return", "Simulate return"))
    return render(request, "payments/dashboard/payout_detail.html", {
        "payout": payout, "events": _timeline(request, [str(payout.pk)]), "object_id": str(payout.pk),
        "sandbox_actions": sandbox_actions,
        "can_cancel": payout.status == PayoutStatus.PENDING})


@require_POST
@merchant_required
def payout_cancel(request: HttpRequest, payout_id) -> HttpResponse:
    if refusal := _refuse_write(request):
        return refusal
    payout = _payout_or_404(request, payout_id)
    try:
        payouts.payout_cancel(merchant=request.merchant, livemode=request.livemode, payout_id=payout.pk)
    except DomainError:
        status = _payout_or_404(request, payout_id).get_status_display().lower()
        messages.error(request, f"This payout can no longer be canceled: it is {status}.")
    else:
        messages.success(request, f"Payout canceled; {brl(payout.amount + payout.fee)} is back in your balance.")
    return redirect("dashboard:payout_detail", payout_id=payout.pk)


@require_POST
@merchant_required
def payout_simulate(request: HttpRequest, payout_id) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    payout = _payout_or_404(request, payout_id)
    return _sandbox_action(request, redirect("dashboard:payout_detail", payout_id=payout.pk), PAYOUT_SANDBOX,
                           lambda action: payouts.payout_simulate(merchant=request.merchant, payout_id=payout.pk,
                                                                  action=action))


def _payout_validate(request: HttpRequest, form: PayoutForm) -> dict | None:
    """The form through the API's own validator; its problems land beside the fields they name."""
    if not form.is_valid():
        return None
    try:
        return payout_request_validate(form.api_body(), merchant=request.merchant)
    except DomainError as error:
        maximum = request.merchant.payout_max_amount or settings.PAYOUT_MAX_AMOUNT
        for problem in error.details or [{"param": error.param, "code": error.code, "message": error.message}]:
            field = PayoutForm.FIELDS.get(problem.get("param") or "")
            message = problem["message"]
            if problem["code"] == "payout_limit_exceeded":
                message = f"At most {brl(maximum)} per payout."
            elif problem["code"] == "amount_too_small":
                message = ReaisField.default_error_messages["too_small"]
            form.add_error(field, message.replace("pixKeyType", "key type").replace("pixKey", "the Pix key"))
        return None


def _payout_refusal(request: HttpRequest, form: PayoutForm, error: DomainError) -> None:
    """Why the service refused: beside the amount for money and limits, else above the form."""
    if isinstance(error, InsufficientBalance):
        available = balance_get(merchant=request.merchant, livemode=request.livemode).available
        form.add_error("amount", f"Insufficient balance: your available balance is {brl(available)}, and a payout "
                                 "takes its amount plus the fee from it.")
    elif isinstance(error, PayoutLimitExceeded):
        merchant = request.merchant
        daily = settings.PAYOUT_DAILY_MAX if merchant.payout_daily_max is None else merchant.payout_daily_max
        form.add_error("amount", f"Today's payouts would exceed your daily limit of {brl(daily)}.")
    else:
        form.add_error(None, error.message)


@merchant_required
def payout_new(request: HttpRequest) -> HttpResponse:
    """A form, then a confirmation page carrying the checked values in hidden fields, then the payout. Sending twice
    (a double click, a reload, the back button) is safe: the referenceId, fixed when the form is first shown, is
    unique, so a second confirmation finds the first payout instead of sending another."""
    if request.method != "POST":
        form = PayoutForm(initial={"reference_id": _reference_id_new(), "pix_key_type": PixKeyType.EVP})
        return _payout_form(request, form)
    if refusal := _refuse_write(request):
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
        messages.warning(request, "This payout was already sent (same reference id); nothing more was sent.")
        return redirect("dashboard:payout_detail", payout_id=existing)
    except DomainError as error:
        _payout_refusal(request, form, error)
        return _payout_form(request, form, status=400)
    messages.success(request, f"Payout of {brl(payout.amount)} sent to {payout.pix_key_type} key {payout.pix_key}.")
    return redirect("dashboard:payout_detail", payout_id=payout.pk)


def _payout_form(request: HttpRequest, form: PayoutForm, *, status: int = 200) -> HttpResponse:
    return render(request, "payments/dashboard/payout_new.html", {
        "form": form, "balance": balance_get(merchant=request.merchant, livemode=request.livemode)}, status=status)


def _payout_review(request: HttpRequest, form: PayoutForm, data: dict) -> HttpResponse:
    """The confirmation step; it writes nothing. What would refuse the payout now is said now, beside the field."""
    existing = selectors.payout_list(merchant=request.merchant, livemode=request.livemode,
                                     reference_id=data["reference_id"]).first()
    if existing is not None:
        form.add_error("reference_id", f"Already used by a payout of {brl(existing.amount)} created "
                                       f"{sp_date(existing.created_at)}. Choose another reference id.")
        return _payout_form(request, form, status=400)
    fee = fees.payout_fee(merchant=request.merchant, amount=data["amount"])
    available = balance_get(merchant=request.merchant, livemode=request.livemode).available
    if available < data["amount"] + fee:
        _payout_refusal(request, form, InsufficientBalance())
        return _payout_form(request, form, status=400)
    return render(request, "payments/dashboard/payout_confirm.html", {
        "form": form, "data": data, "fee": fee, "total": data["amount"] + fee, "available": available,
        "available_after": available - data["amount"] - fee})


# --- Statement -------------------------------------------------------------------------------------------------------
def _statement_rows(request: HttpRequest, form: _RangeForm) -> QuerySet:
    return form.apply(selectors.statement_lines(merchant=request.merchant, livemode=request.livemode))


@merchant_required
def statement(request: HttpRequest) -> HttpResponse:
    form = _RangeForm(request.GET)
    page = _keyset_page(request, _statement_rows(request, form))
    refunds = [line.transaction.object_id for line in page["rows"] if line.transaction.object_type == "refund"]
    charge_of_refund = {str(pk): payin_id for pk, payin_id in Refund.objects.filter(
        merchant=request.merchant, livemode=request.livemode, pk__in=refunds).values_list("pk", "payin_id")}
    lines = [{"entry": line, "label": LINE_LABELS.get(line.line_type, line.line_type),
              "payin_id": _statement_payin(line, charge_of_refund)} for line in page["rows"]]
    export = request.GET.copy()
    export.pop("cursor", None)
    return render(request, "payments/dashboard/statement.html", {
        **page, "lines": lines, "form": form, "export_query": export.urlencode(),
        "filtered": form.is_valid() and any(form.cleaned_data.values()),
        "balance": balance_get(merchant=request.merchant, livemode=request.livemode)})


def _statement_payin(line, charge_of_refund: dict):
    movement = line.transaction
    if movement.object_type == "payin":
        return movement.object_id
    if movement.object_type == "refund":
        return charge_of_refund.get(movement.object_id)
    return None


CSV_HEADER = ["id", "created_at", "type", "balance", "amount_cents", "balance_after_cents", "object_type",
              "object_id", "reference_id", "description"]
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(text: str) -> str:
    """A text cell a spreadsheet will not run as a formula (CSV injection): a leading = + - @ (or tab, CR) gets a
    single quote before it. Numbers are written as numbers and need no guard."""
    return f"'{text}" if text.startswith(_FORMULA_START) else text


class _Echo:
    """csv.writer writes each row here and gets the row's text back, to yield it."""

    def write(self, value: str) -> str:
        return value


@merchant_required
def statement_csv(request: HttpRequest) -> HttpResponse:
    """Every line of the statement (optionally of a day range), oldest first, streamed in chunks: 100,000 lines never
    sit in memory together."""
    form = _RangeForm(request.GET)
    rows = (_statement_rows(request, form).order_by("created_at", "id")
            .values_list("id", "created_at", "line_type", "account__kind", "amount", "balance_after",
                         "transaction__object_type", "transaction__object_id", "transaction__reference_id",
                         "transaction__description"))
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(CSV_HEADER)
        for (pk, created_at, line_type, kind, amount, balance_after, object_type, object_id, reference_id,
             description) in rows.iterator(chunk_size=CSV_CHUNK):
            yield writer.writerow([pk, timestamp(created_at), csv_safe(line_type), csv_safe(kind), amount,
                                   balance_after, csv_safe(object_type), csv_safe(object_id),
                                   csv_safe(reference_id), csv_safe(description)])

    mode = "live" if request.livemode else "test"
    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="statement-{mode}-{sao_paulo_today():%Y-%m-%d}.csv"'
    response["Cache-Control"] = "private, no-store"
    return response
