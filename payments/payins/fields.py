"""The fields of POST /payin's body that are its own (payments.fields holds those it shares with payouts), each with its
rule in its `to_internal_value`, and the rules saying when a field or object must or must not be sent (DRF's `required`
cannot depend on the rest of the body). No message repeats the value sent (a card number, a CVV)."""

from __future__ import annotations

import ipaddress
import re
import string
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext
from rest_framework import serializers
from rest_framework.fields import empty

from core.api import StrictCharField
from core.formats import contact
from core.schema import Const
from payments.fields import (
    EMAIL_PATTERN,
    PHONE_PATTERN,
    STATE_PATTERN,
    ZIP_CODE_PATTERN,
    ExactCharField,
    StrictChoiceField,
    problem,
    request_body,
)
from payments.formats import cards
from payments.models import PaymentMethod

BOLETO_DUE_DAYS_MAX = 365


BOLETO_DUE_DAYS_DEFAULT = 3


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


_CARD_NUMBER = re.compile(r"[0-9]{13,19}")


_CVV = re.compile(r"[0-9]{3,4}")


_MONTH = re.compile(r"0[1-9]|1[0-2]")


_TWO_DIGITS = re.compile(r"[0-9]{2}")


_YEAR = re.compile(r"[0-9]{2}|[0-9]{4}")


# An IPv4 address as ipaddress writes it: returned as is, without parsing (the usual case, and the cheap one).
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"


_IPV4 = re.compile(rf"(?:{_OCTET}\.){{3}}{_OCTET}")


_validate_email = contact.EmailValidator()


_ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)  # "ſp" must not become "SP"


METHODS = frozenset(PaymentMethod.values)


def payment_method(body: Mapping) -> str | None:
    """The body's paymentMethod when it is a valid one; with none, the rules that depend on it are not applied."""
    method = body.get("paymentMethod")
    return method if isinstance(method, str) and method in METHODS else None


def for_boleto_or_delivery(body: Mapping) -> bool:
    """Whether the body is a boleto or a physical product: both need the customer's address and phone."""
    return body.get("paymentMethod") == PaymentMethod.BOLETO or body.get("isPhysicalProduct") is True


# The two mixins below check a field's presence before DRF's own checks (run_validation), so that the problem is
# reported at the field's place among the others. payments.openapi reads `required_for` and `allowed_for` to document
# each variant of the body.
class RequiredForBoletoOrDelivery:
    """The customer's phone and address: required for boletos and physical products."""

    def required_for(self, body: Mapping) -> bool:
        return for_boleto_or_delivery(body)

    def run_validation(self, data: Any = empty) -> Any:
        if data is empty and self.required_for(request_body(self)):  # type: ignore[arg-type]
            raise problem(gettext("Required for BOLETO and for physical products."), "required")
        return super().run_validation(data)  # type: ignore[misc]


class OnlyWithItsMethod:
    """`card`, `pix` and `boleto`: refused with another payment method; `required_for_method` makes it required."""

    method: str = ""
    required_for_method = False

    def required_for(self, body: Mapping) -> bool:
        return self.required_for_method and payment_method(body) == self.method

    def allowed_for(self, body: Mapping) -> bool:
        """Allowed unless the body has another valid paymentMethod (an invalid one is reported on its own)."""
        return payment_method(body) in (None, self.method)

    def run_validation(self, data: Any = empty) -> Any:
        body = request_body(self)  # type: ignore[arg-type]
        if data is empty and self.required_for(body):
            raise problem(gettext("Required for %(method)s.") % {"method": self.method}, "required")
        if data is not empty and not self.allowed_for(body):
            raise problem(gettext("Allowed only when paymentMethod is %(method)s.") % {"method": self.method},
                          "not_allowed")
        return super().run_validation(data)  # type: ignore[misc]


class PaymentMethodField(StrictChoiceField):
    # The component that names each method's value in the request's variants.
    COMPONENTS = {PaymentMethod.PIX: "PixMethod", PaymentMethod.CREDIT_CARD: "CardMethod",
                  PaymentMethod.BOLETO: "BoletoMethod"}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=PaymentMethod.values, **kwargs)

    def documented(self, body: Mapping, required: bool) -> serializers.Field:
        method = payment_method(body)
        if method is None:
            return PaymentMethodField(required=required)
        return Const(method, component=self.COMPONENTS[method])


class IpAddressField(ExactCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "The payer's IPv4 or IPv6 address.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if _IPV4.fullmatch(value):
            return value
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            raise problem(gettext("Must be a valid IPv4 or IPv6 address."), "invalid_ip_address") from None


class EmailField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=254, **kwargs)

    def openapi_schema(self) -> dict:
        # No `format: email`: validators of that format refuse addresses Django's (the rule) accepts, e.g. an
        # A-label top-level domain, and the schema would then call a valid body invalid (tests/fuzz).
        return {"type": "string", "maxLength": 254, "pattern": EMAIL_PATTERN}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            _validate_email(value)
        except DjangoValidationError:
            raise problem(gettext("Must be a valid email address."), "invalid_email") from None
        return value


class PhoneField(RequiredForBoletoOrDelivery, StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "10 to 13 digits once + ( ) - and spaces are dropped.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": PHONE_PATTERN}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        phone = contact.normalize_phone(value)
        if phone is None:
            if not contact.phone_characters_valid(value):
                raise problem(gettext("Must have only digits, spaces and + ( ) -."), "invalid_phone")
            raise problem(gettext("Must have 10 to 13 digits (area code and number, the country code optional)."),
                          "invalid_phone")
        return phone


class ZipCodeField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "CEP: 8 digits; '-' and '.' are dropped.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": ZIP_CODE_PATTERN}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        zip_code = contact.normalize_zip_code(value)
        if zip_code is None:
            if not contact.zip_code_characters_valid(value):
                raise problem(gettext("Must have only digits, '-' and '.'."), "invalid_zip_code")
            raise problem(gettext("Must be 8 digits (a CEP, such as 01310-100)."), "invalid_zip_code")
        return zip_code


class StateField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "One of the 27 UF codes, in any case, e.g. SP.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": STATE_PATTERN}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        state = value.translate(_ASCII_UPPER)
        if state not in contact.UF_CODES:
            raise problem(gettext("Must be one of the 27 UF codes, such as SP or RJ."), "invalid_state")
        return state


class DueDateField(ExactCharField):
    HELP = (f"Today to today + {BOLETO_DUE_DAYS_MAX} days (America/Sao_Paulo); default today + "
            f"{BOLETO_DUE_DAYS_DEFAULT} days.")

    def documented(self, body: Mapping, required: bool) -> serializers.Field:
        return serializers.DateField(required=required, help_text=self.HELP)

    def to_internal_value(self, data: Any) -> date:
        value = super().to_internal_value(data)
        if not _ISO_DATE.fullmatch(value):
            raise problem(gettext("Must be a date written YYYY-MM-DD."), "invalid_date")
        try:
            due_date = date.fromisoformat(value)
        except ValueError:
            raise problem(gettext("Must be a day of the calendar (month 01 to 12, a day the month has)."),
                          "invalid_date") from None
        today: date = self.context["today"]
        if not today <= due_date <= today + timedelta(days=BOLETO_DUE_DAYS_MAX):
            raise problem(gettext("Must be from today to %(days)s days from today (America/Sao_Paulo).") % {
                "days": BOLETO_DUE_DAYS_MAX},
                          "invalid_due_date")
        return due_date


class CardTokenField(ExactCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "card.token of an earlier PAID charge of this account and mode.")
        super().__init__(**kwargs)


class CardNumberField(ExactCharField):
    """Documented for the brands other than American Express (see payments.payins.schema for its own)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "13 to 19 digits, Luhn-valid, of a known brand (test mode: the test cards "
                                       "only); never stored.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": "^([0-24-9][0-9]{12,18}|3[0-35689][0-9]{11,17})$"}

    def to_internal_value(self, data: Any) -> str:
        number = super().to_internal_value(data)
        if not _CARD_NUMBER.fullmatch(number):
            if not (number.isascii() and number.isdigit()):
                raise problem(gettext("Must be digits only, without spaces or other characters."),
                              "invalid_card_number")
            raise problem(gettext("Must be 13 to 19 digits."), "invalid_card_number")
        if not cards.luhn_valid(number):
            raise problem(gettext("The card number is not valid: its check digit is wrong."), "invalid_card_number")
        if cards.brand(number) is None:
            raise problem(gettext("The card brand is not supported."), "unsupported_card_brand")
        if not self.context["livemode"] and number not in cards.TEST_CARDS:
            raise problem(gettext("Test mode accepts only the test card numbers."), "live_card_in_test_mode")
        return number


class ExpirationMonthField(ExactCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "01 to 12.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": "^(0[1-9]|1[0-2])$"}

    def to_internal_value(self, data: Any) -> str:
        month = super().to_internal_value(data)
        if not _MONTH.fullmatch(month):
            if not _TWO_DIGITS.fullmatch(month):
                raise problem(gettext("Must be the month as two digits, such as 03."), "invalid_expiration_month")
            raise problem(gettext("Must be a month from 01 to 12."), "invalid_expiration_month")
        return month


class ExpirationYearField(ExactCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "YYYY or YY; the card must not have expired.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": "^([0-9]{2}|[0-9]{4})$"}

    def to_internal_value(self, data: Any) -> str:
        year = super().to_internal_value(data)
        if not _YEAR.fullmatch(year):
            raise problem(gettext("Must be the year as YYYY or YY."), "invalid_expiration_year")
        full_year = f"20{year}" if len(year) == 2 else year
        if int(full_year) < self.context["today"].year:
            raise problem(gettext("The card has expired."), "expired_card")
        return full_year


class CvvField(ExactCharField):
    """Documented for the brands other than American Express (see payments.payins.schema for its own)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "3 digits; never stored.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": "^[0-9]{3}$"}

    def to_internal_value(self, data: Any) -> str:
        cvv = super().to_internal_value(data)
        if not _CVV.fullmatch(cvv):
            if not (cvv.isascii() and cvv.isdigit()):
                raise problem(gettext("Must be digits only."), "invalid_cvv")
            raise problem(gettext("Must be 3 digits, or 4 for American Express."), "invalid_cvv")
        return cvv
