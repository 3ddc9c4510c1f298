"""The dashboard's forms. They only translate text inputs (reais typed as "1.234,56", Sao Paulo calendar days) into
what the services already validate; the rules themselves stay in the services and validators."""

from __future__ import annotations

import re
from datetime import timedelta

from django import forms
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from core.dates import sao_paulo_midnight
from core.forms import day_field
from payments.dashboard import labels
from payments.templatetags.payments_format import brl

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

    default_error_messages = {"invalid": _("Enter an amount in reais, like 50,00 or 1.234,56."),
                              "too_small": _("Enter an amount of at least R$ 0,01.")}

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


class RangeForm(forms.Form):
    """A Sao Paulo calendar-day range, both ends inclusive."""

    created_from = day_field(_("From"))
    created_to = day_field(_("To"))

    def clean(self):
        data = super().clean()
        first, last = data.get("created_from"), data.get("created_to")
        if first and last and last < first:
            self.add_error("created_to", _("Must be on or after the first day."))
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


class ChargeFilterForm(RangeForm):
    q = forms.CharField(required=False, max_length=64, label=_("Charge id or referenceId"))
    status = forms.ChoiceField(required=False, label=_("Status"),
                               choices=[("", _("Any status")), *labels.CHARGE_STATUS.items()])
    method = forms.ChoiceField(required=False, label=_("Payment method"),
                               choices=[("", _("Any method")), *labels.PAYMENT_METHOD.items()])
    field_order = ["q", "status", "method", "created_from", "created_to"]


class PayoutFilterForm(RangeForm):
    q = forms.CharField(required=False, max_length=64, label=_("Payout id or referenceId"))
    status = forms.ChoiceField(required=False, label=_("Status"),
                               choices=[("", _("Any status")), *labels.PAYOUT_STATUS.items()])
    field_order = ["q", "status", "created_from", "created_to"]


class RefundForm(forms.Form):
    amount = ReaisField(required=False, label=_("Amount to refund (R$)"),
                        help_text=_("Leave blank to refund everything that is left."))
    reason = forms.CharField(required=False, max_length=255, label=_("Reason (optional)"))
    # One refund per rendered form: a double click or a resent POST finds its token taken.
    token = forms.CharField(widget=forms.HiddenInput, max_length=64)


# The key types of payments.models.PixKeyType, in words.
PIX_KEY_CHOICES = [("CPF", "CPF"), ("CNPJ", "CNPJ"), ("EMAIL", _("E-mail")), ("PHONE", _("Phone")),
                   ("EVP", _("EVP (random key)"))]


class PayoutForm(forms.Form):
    amount = ReaisField(label=_("Amount (R$)"), help_text=_("In reais, like 50,00."))
    pix_key_type = forms.ChoiceField(label=_("Pix key type"), choices=PIX_KEY_CHOICES)
    pix_key = forms.CharField(label=_("Pix key"), max_length=77,
                              help_text=_("CPF or CNPJ without punctuation, e-mail, +55 phone, or random key (EVP)."))
    beneficiary_name = forms.CharField(label=_("Beneficiary name (optional)"), required=False, max_length=120)
    beneficiary_document = forms.CharField(
        label=_("Beneficiary CPF or CNPJ (optional)"), required=False, max_length=20,
        help_text=_("For a CPF or CNPJ key it must be the key's own document."))
    description = forms.CharField(label=_("Description (optional)"), required=False, max_length=140)
    reference_id = forms.CharField(
        label=_("Reference id"), max_length=64,
        help_text=_("Your own id for this payout. It is unique: the same reference is never sent twice."))

    # The API's field names (payout_request_validate's `details[].param`) → this form's.
    FIELDS = {"amount": "amount", "pixKeyType": "pix_key_type", "pixKey": "pix_key",
              "beneficiaryName": "beneficiary_name", "beneficiaryDocument": "beneficiary_document",
              "description": "description", "referenceId": "reference_id"}

    def api_body(self) -> dict:
        """The cleaned form as a POST /payout body; optional fields left blank are left out, as an API client
        would leave them out."""
        body = {param: self.cleaned_data[name] for param, name in self.FIELDS.items()}
        return {param: value for param, value in body.items() if value not in ("", None)}
