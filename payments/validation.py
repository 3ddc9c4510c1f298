"""The body of POST /payin, checked and normalized (SPEC §3.1, §3.7).

Every problem is reported at once, each with its dotted path. Rules that span fields (the amount's minimum, the
address for boletos and physical goods, `card`/`pix`/`boleto` only with their method) read the raw body, so they are
checked even when the fields they depend on have problems of their own. No message ever repeats a card number or a
CVV; no message repeats any other value either.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import EmailValidator
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.fields import empty
from rest_framework.settings import api_settings

from accounts.models import Merchant
from config.api import StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer
from config.errors import DomainError, as_domain_error
from payments.formats import cards, contact, documents
from payments.models import CardToken, PaymentMethod
from webhooks.ssrf import webhook_url_validate

MIN_AMOUNT = {PaymentMethod.PIX: 100, PaymentMethod.CREDIT_CARD: 100, PaymentMethod.BOLETO: 500}
PIX_EXPIRES_IN_DEFAULT = 3600
BOLETO_DUE_DAYS_DEFAULT = 3
BOLETO_DUE_DAYS_MAX = 365
METADATA_MAX_KEYS = 20
METADATA_KEY_MAX_LENGTH = 40
METADATA_VALUE_MAX_LENGTH = 500

_REFERENCE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_CARD_NUMBER = re.compile(r"[0-9]{13,19}")
_CVV = re.compile(r"[0-9]{3,4}")
_MONTH = re.compile(r"0[1-9]|1[0-2]")
_YEAR = re.compile(r"[0-9]{2}|[0-9]{4}")
_validate_email = EmailValidator()
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _problem(message: str, code: str) -> ValidationError:
    return ValidationError(message, code=code)


def _request_body(field: serializers.Field) -> Mapping:
    """The raw body being validated, for the rules that depend on another field."""
    body = getattr(field.root, "initial_data", None)
    return body if isinstance(body, Mapping) else {}


def _payment_method(field: serializers.Field) -> str | None:
    """The body's paymentMethod when it is a valid one; with none, the rules that depend on it are not applied."""
    method = _request_body(field).get("paymentMethod")
    return method if isinstance(method, str) and method in PaymentMethod.values else None


def _for_boleto_or_delivery(field: serializers.Field) -> bool:
    """Whether the body is a boleto or a physical product: both need the customer's address and phone."""
    body = _request_body(field)
    return body.get("paymentMethod") == PaymentMethod.BOLETO or body.get("isPhysicalProduct") is True


def _refuse_unless_method(field: serializers.Field, data: Any, method: str) -> None:
    current = _payment_method(field)
    if data is not empty and current is not None and current != method:
        raise _problem(f"Allowed only when paymentMethod is {method}.", "not_allowed")


# --- Fields ----------------------------------------------------------------------------------------------------------
class _ExactCharField(StrictCharField):
    """A string taken as sent: identifiers, card data and URLs are not silently trimmed into something else."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)


class _PaymentMethodField(serializers.ChoiceField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=PaymentMethod.values, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in PaymentMethod.values:
            raise _problem(f"Must be one of {', '.join(PaymentMethod.values)}.", "invalid_choice")
        return data


class _AmountField(StrictIntegerField):
    def to_internal_value(self, data: Any) -> int:
        amount = super().to_internal_value(data)
        method = _payment_method(self)
        minimum = MIN_AMOUNT[method] if method else min(MIN_AMOUNT.values())
        if amount < minimum:
            raise _problem(f"Must be at least {minimum} cents" + (f" for {method}." if method else "."),
                           "amount_too_small")
        merchant: Merchant = self.context["merchant"]
        maximum = settings.CHARGE_MAX_AMOUNT if merchant.charge_max_amount is None else merchant.charge_max_amount
        if amount > maximum:
            raise _problem(f"Must be at most {maximum} cents, this account's maximum per charge.", "amount_too_large")
        return amount


class _ReferenceIdField(_ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not _REFERENCE_ID.fullmatch(value):
            raise _problem("Must be 1 to 64 characters of letters, digits, '.', '_', ':' and '-'.",
                           "invalid_reference_id")
        return value


class _IpAddressField(_ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            raise _problem("Must be a valid IPv4 or IPv6 address.", "invalid_ip_address") from None


class _WebhookUrlField(_ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        url = super().to_internal_value(data)
        try:
            return webhook_url_validate(url, param=self.field_name)
        except DomainError as exc:
            # Turned into a field error so that it is reported with the body's other problems.
            raise ValidationError([ErrorDetail(d["message"], code=d["code"]) for d in exc.details]
                                  or [ErrorDetail(exc.message, code=exc.code)]) from None


class _MetadataField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, dict):
            raise _problem("Must be a JSON object.", "invalid_metadata")
        problems = []
        if len(data) > METADATA_MAX_KEYS:
            problems.append(f"Must have at most {METADATA_MAX_KEYS} keys.")
        if not all(isinstance(key, str) and 1 <= len(key) <= METADATA_KEY_MAX_LENGTH for key in data):
            problems.append(f"Keys must be 1 to {METADATA_KEY_MAX_LENGTH} characters.")
        if not all(isinstance(value, str) for value in data.values()):
            problems.append("Values must be strings.")
        elif any(len(value) > METADATA_VALUE_MAX_LENGTH for value in data.values()):
            problems.append(f"Values must be at most {METADATA_VALUE_MAX_LENGTH} characters.")
        # As for every other string of the API (DRF's CharField): PostgreSQL cannot store them (they were a 500).
        if any(_UNSTORABLE.search(text) for item in data.items() for text in item if isinstance(text, str)):
            problems.append("Keys and values must not contain NUL or surrogate characters.")
        if problems:
            raise ValidationError([ErrorDetail(message, code="invalid_metadata") for message in problems])
        return dict(data)


class _DocumentField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        document = documents.normalize(super().to_internal_value(data))
        if documents.document_type(document) is None:
            raise _problem("Must be a valid CPF (11 digits) or CNPJ (14 characters), check digits included.",
                           "invalid_document")
        return document


class _EmailField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=254, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        email = super().to_internal_value(data)
        try:
            _validate_email(email)
        except DjangoValidationError:
            raise _problem("Must be a valid email address.", "invalid_email") from None
        return email


class _PhoneField(StrictCharField):
    def run_validation(self, data: Any = empty) -> Any:
        if data is empty and _for_boleto_or_delivery(self):
            raise _problem("Required for BOLETO and for physical products.", "required")
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        phone = contact.normalize_phone(super().to_internal_value(data))
        if phone is None:
            raise _problem("Must have 10 to 13 digits (area code and number, the country code optional).",
                           "invalid_phone")
        return phone


class _ZipCodeField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        zip_code = contact.normalize_zip_code(super().to_internal_value(data))
        if zip_code is None:
            raise _problem("Must be a CEP of 8 digits, such as 01310-100.", "invalid_zip_code")
        return zip_code


class _StateField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        state = super().to_internal_value(data).upper()
        if state not in contact.UF_CODES:
            raise _problem("Must be one of the 27 UF codes, such as SP or RJ.", "invalid_state")
        return state


class _DueDateField(_ExactCharField):
    def to_internal_value(self, data: Any) -> date:
        value = super().to_internal_value(data)
        try:
            due_date = date.fromisoformat(value) if _ISO_DATE.fullmatch(value) else None
        except ValueError:
            due_date = None
        if due_date is None:
            raise _problem("Must be a date written YYYY-MM-DD.", "invalid_date")
        today: date = self.context["today"]
        if not today <= due_date <= today + timedelta(days=BOLETO_DUE_DAYS_MAX):
            raise _problem(f"Must be from today to {BOLETO_DUE_DAYS_MAX} days from today (America/Sao_Paulo).",
                           "invalid_due_date")
        return due_date


class _CardNumberField(_ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        number = super().to_internal_value(data)
        if not _CARD_NUMBER.fullmatch(number):
            raise _problem("Must be 13 to 19 digits, without spaces or other characters.", "invalid_card_number")
        if not cards.luhn_valid(number):
            raise _problem("The card number is not valid: its check digit is wrong.", "invalid_card_number")
        if cards.brand(number) is None:
            raise _problem("The card brand is not supported.", "unsupported_card_brand")
        if not self.context["livemode"] and number not in cards.TEST_CARDS:
            raise _problem("Test mode accepts only the test card numbers.", "live_card_in_test_mode")
        return number


class _ExpirationMonthField(_ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        month = super().to_internal_value(data)
        if not _MONTH.fullmatch(month):
            raise _problem("Must be the month as two digits, 01 to 12.", "invalid_expiration_month")
        return month


class _ExpirationYearField(_ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        year = super().to_internal_value(data)
        if not _YEAR.fullmatch(year):
            raise _problem("Must be the year as YYYY or YY.", "invalid_expiration_year")
        full_year = f"20{year}" if len(year) == 2 else year
        if int(full_year) < self.context["today"].year:
            raise _problem("The card has expired.", "expired_card")
        return full_year


class _CvvField(_ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        cvv = super().to_internal_value(data)
        if not _CVV.fullmatch(cvv):
            raise _problem("Must be 3 digits, or 4 for American Express.", "invalid_cvv")
        return cvv


# --- Objects ---------------------------------------------------------------------------------------------------------
class _AddressSerializer(StrictSerializer):
    street = StrictCharField(max_length=150)
    number = StrictCharField(max_length=20)
    complement = StrictCharField(max_length=100, required=False, allow_blank=True)
    zipCode = _ZipCodeField()
    city = StrictCharField(max_length=80)
    state = _StateField()

    def run_validation(self, data: Any = empty) -> Any:
        if data is empty and _for_boleto_or_delivery(self):
            raise _problem("Required for BOLETO and for physical products.", "required")
        return super().run_validation(data)

    def validate(self, attrs: dict) -> dict:
        return {"street": attrs["street"], "number": attrs["number"], "complement": attrs.get("complement", ""),
                "zipCode": attrs["zipCode"], "city": attrs["city"], "state": attrs["state"]}


class _CustomerSerializer(StrictSerializer):
    name = StrictCharField(min_length=2, max_length=100)
    document = _DocumentField()
    email = _EmailField()
    phone = _PhoneField(required=False)
    address = _AddressSerializer(required=False)

    def validate(self, attrs: dict) -> dict:
        return {"name": attrs["name"], "document": attrs["document"], "email": attrs["email"],
                "phone": attrs.get("phone"), "address": attrs.get("address")}


class _ItemListSerializer(serializers.ListSerializer):
    default_error_messages = {
        "not_a_list": "Must be a JSON array of items.",
        "min_length": "Must have at least {min_length} item.",
        "max_length": "Must have at most {max_length} items.",
    }


class _ItemSerializer(StrictSerializer):
    title = StrictCharField(max_length=256)
    quantity = StrictIntegerField(min_value=1)
    unitPrice = StrictIntegerField(min_value=0)
    description = StrictCharField(max_length=500, required=False, allow_blank=True)

    class Meta:
        list_serializer_class = _ItemListSerializer

    def validate(self, attrs: dict) -> dict:
        return dict(attrs)


class _CardSerializer(StrictSerializer):
    """Either a token from an earlier charge or the card data; `installments` with both."""

    CARD_DATA = ("holderName", "number", "expirationMonth", "expirationYear", "cvv")

    token = _ExactCharField(required=False)
    holderName = StrictCharField(min_length=2, max_length=100, required=False)
    number = _CardNumberField(required=False)
    expirationMonth = _ExpirationMonthField(required=False)
    expirationYear = _ExpirationYearField(required=False)
    cvv = _CvvField(required=False)
    installments = StrictIntegerField(min_value=1, max_value=12, required=False)

    def run_validation(self, data: Any = empty) -> Any:
        if data is empty and _payment_method(self) == PaymentMethod.CREDIT_CARD:
            raise _problem("Required for CREDIT_CARD.", "required")
        _refuse_unless_method(self, data, PaymentMethod.CREDIT_CARD)
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, Mapping):
            return super().to_internal_value(data)  # refused as not an object
        try:
            fields = super().to_internal_value(data)
            errors: dict = {}
        except ValidationError as exc:
            fields, errors = {}, dict(exc.detail)
        # The fields that passed their own checks hold the same value in `data` (none of them is trimmed).
        valid = {name for name in self.fields if name in data and name not in errors}
        installments = data["installments"] if "installments" in valid else 1
        card_token = None
        if "token" in data:
            if any(name in data for name in self.CARD_DATA):
                errors[api_settings.NON_FIELD_ERRORS_KEY] = [ErrorDetail(
                    "Send either a token or the card data (holderName, number, expirationMonth, expirationYear, "
                    "cvv), not both.", code="token_with_card_data")]
            elif "token" in valid:
                card_token = CardToken.objects.filter(token=data["token"], merchant=self.context["merchant"],
                                                      livemode=self.context["livemode"]).first()
                if card_token is None:  # another merchant's or mode's token looks exactly like a made-up one
                    errors["token"] = [ErrorDetail("No card token of this account and mode has this value.",
                                                   code="invalid_token")]
        else:
            for name in self.CARD_DATA:
                if name not in data:
                    errors[name] = [ErrorDetail("This field is required unless a token is sent.", code="required")]
            if {"number", "cvv"} <= valid and not cards.cvv_valid(data["cvv"], brand := cards.brand(data["number"])):
                message = "Must be 4 digits for American Express." if brand == "amex" else "Must be 3 digits."
                errors["cvv"] = [ErrorDetail(message, code="invalid_cvv")]
            if {"expirationMonth", "expirationYear"} <= valid and not cards.expiry_valid(
                    data["expirationMonth"], data["expirationYear"], today=self.context["today"]):
                errors["expirationMonth"] = [ErrorDetail("The card has expired.", code="expired_card")]
        if errors:
            raise ValidationError(_in_field_order(errors, self.fields))
        if card_token is not None:
            return {"token": card_token, "installments": installments}
        return {"holderName": fields["holderName"], "number": fields["number"],
                "expirationMonth": fields["expirationMonth"], "expirationYear": fields["expirationYear"],
                "cvv": fields["cvv"], "brand": cards.brand(fields["number"]), "installments": installments}


def _in_field_order(errors: dict, fields: Mapping) -> dict:
    """The object's own problems first, then its fields' in declaration order, then its unknown fields."""
    order = [api_settings.NON_FIELD_ERRORS_KEY, *fields]
    return dict(sorted(errors.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)))


class _PixSerializer(StrictSerializer):
    expiresIn = StrictIntegerField(min_value=60, max_value=604_800, required=False)

    def run_validation(self, data: Any = empty) -> Any:
        _refuse_unless_method(self, data, PaymentMethod.PIX)
        return super().run_validation(data)


class _BoletoSerializer(StrictSerializer):
    dueDate = _DueDateField(required=False)
    instructions = StrictCharField(max_length=255, required=False, allow_blank=True)

    def run_validation(self, data: Any = empty) -> Any:
        _refuse_unless_method(self, data, PaymentMethod.BOLETO)
        return super().run_validation(data)


class PayinRequestSerializer(StrictSerializer):
    """Context: `merchant`, `livemode` and `today` (the America/Sao_Paulo date)."""

    paymentMethod = _PaymentMethodField()
    amount = _AmountField()
    referenceId = _ReferenceIdField()
    payerIp = _IpAddressField()
    isPhysicalProduct = StrictBooleanField()
    webhookUrl = _WebhookUrlField(required=False)
    card = _CardSerializer(required=False)
    customer = _CustomerSerializer()
    items = _ItemSerializer(many=True, min_length=1, max_length=100)
    pix = _PixSerializer(required=False)
    boleto = _BoletoSerializer(required=False)
    description = StrictCharField(max_length=140, required=False, allow_blank=True)
    metadata = _MetadataField(required=False)


def payin_request_validate(data: Any, *, merchant: Merchant, livemode: bool, today: date) -> dict:
    """Validated, normalized input of POST /payin, or raise a DomainError carrying every problem at once in details.

    `customer` and `items` keep the body's camelCase keys (they are echoed back as sent, normalized); `card` is None,
    `{"token": CardToken, "installments"}` or the card data with its `brand`; `pix_expires_in` is set for PIX only
    and `boleto_due_date` for BOLETO only.
    """
    try:
        body = PayinRequestSerializer.validated(data, merchant=merchant, livemode=livemode, today=today)
    except ValidationError as exc:
        raise as_domain_error(exc) from exc
    method = body["paymentMethod"]
    pix = body.get("pix", {})
    boleto = body.get("boleto", {})
    return {
        "payment_method": method,
        "amount": body["amount"],
        "reference_id": body["referenceId"],
        "payer_ip": body["payerIp"],
        "is_physical_product": body["isPhysicalProduct"],
        "webhook_url": body.get("webhookUrl", ""),
        "description": body.get("description", ""),
        "metadata": body.get("metadata", {}),
        "customer": body["customer"],
        "items": body["items"],
        "card": body.get("card"),
        "pix_expires_in": pix.get("expiresIn", PIX_EXPIRES_IN_DEFAULT) if method == PaymentMethod.PIX else None,
        "boleto_due_date": (boleto.get("dueDate", today + timedelta(days=BOLETO_DUE_DAYS_DEFAULT))
                            if method == PaymentMethod.BOLETO else None),
        "boleto_instructions": boleto.get("instructions", ""),
    }
