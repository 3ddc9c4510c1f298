"""The body of POST /payin, checked and normalized (SPEC §3.1, §3.7).

Every problem is reported at once, each with its dotted path. Rules that span fields (the amount's minimum, the
address for boletos and physical goods, `card`/`pix`/`boleto` only with their method) read the raw body, so they are
checked even when the fields they depend on have problems of their own. No message ever repeats a card number or a
CVV; no message repeats any other value either.
"""

from __future__ import annotations

import ipaddress
import re
import string
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
from config.errors import as_domain_error
from payments.fields import (
    REFERENCE_ID,
    UNSTORABLE,
    DocumentField,
    ExactCharField,
    MetadataField,
    ReferenceIdField,
    WebhookUrlField,
    fast_metadata,
    fast_text,
    problem,
    request_body,
)
from payments.formats import cards, contact, documents
from payments.models import CardToken, PaymentMethod

MIN_AMOUNT = {PaymentMethod.PIX: 100, PaymentMethod.CREDIT_CARD: 100, PaymentMethod.BOLETO: 500}


PIX_EXPIRES_IN_DEFAULT = 3600


BOLETO_DUE_DAYS_DEFAULT = 3


BOLETO_DUE_DAYS_MAX = 365


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


_CARD_NUMBER = re.compile(r"[0-9]{13,19}")


_CVV = re.compile(r"[0-9]{3,4}")


_MONTH = re.compile(r"0[1-9]|1[0-2]")


_YEAR = re.compile(r"[0-9]{2}|[0-9]{4}")


_validate_email = EmailValidator()


_ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)  # "ſp" must not become "SP"


def _payment_method(field: serializers.Field) -> str | None:
    """The body's paymentMethod when it is a valid one; with none, the rules that depend on it are not applied."""
    method = request_body(field).get("paymentMethod")
    return method if isinstance(method, str) and method in _FAST_METHODS else None


def _for_boleto_or_delivery(field: serializers.Field) -> bool:
    """Whether the body is a boleto or a physical product: both need the customer's address and phone."""
    body = request_body(field)
    return body.get("paymentMethod") == PaymentMethod.BOLETO or body.get("isPhysicalProduct") is True


def _refuse_unless_method(field: serializers.Field, data: Any, method: str) -> None:
    current = _payment_method(field)
    if data is not empty and current is not None and current != method:
        raise problem(f"Allowed only when paymentMethod is {method}.", "not_allowed")


class _PaymentMethodField(serializers.ChoiceField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=PaymentMethod.values, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in _FAST_METHODS:
            raise problem(f"Must be one of {', '.join(PaymentMethod.values)}.", "invalid_choice")
        return data


class _AmountField(StrictIntegerField):
    def to_internal_value(self, data: Any) -> int:
        amount = super().to_internal_value(data)
        method = _payment_method(self)
        minimum = MIN_AMOUNT[method] if method else min(MIN_AMOUNT.values())
        if amount < minimum:
            raise problem(f"Must be at least {minimum} cents" + (f" for {method}." if method else "."),
                           "amount_too_small")
        maximum = _charge_max_amount(self.context["merchant"])
        if amount > maximum:
            raise problem(f"Must be at most {maximum} cents, this account's maximum per charge.", "amount_too_large")
        return amount


def _charge_max_amount(merchant: Merchant) -> int:
    return settings.CHARGE_MAX_AMOUNT if merchant.charge_max_amount is None else merchant.charge_max_amount


class _IpAddressField(ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            raise problem("Must be a valid IPv4 or IPv6 address.", "invalid_ip_address") from None


class _EmailField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=254, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        email = super().to_internal_value(data)
        try:
            _validate_email(email)
        except DjangoValidationError:
            raise problem("Must be a valid email address.", "invalid_email") from None
        return email


class _PhoneField(StrictCharField):
    def run_validation(self, data: Any = empty) -> Any:
        if data is empty and _for_boleto_or_delivery(self):
            raise problem("Required for BOLETO and for physical products.", "required")
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        phone = contact.normalize_phone(super().to_internal_value(data))
        if phone is None:
            raise problem("Must have 10 to 13 digits (area code and number, the country code optional).",
                           "invalid_phone")
        return phone


class _ZipCodeField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        zip_code = contact.normalize_zip_code(super().to_internal_value(data))
        if zip_code is None:
            raise problem("Must be a CEP of 8 digits, such as 01310-100.", "invalid_zip_code")
        return zip_code


class _StateField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        state = super().to_internal_value(data).translate(_ASCII_UPPER)
        if state not in contact.UF_CODES:
            raise problem("Must be one of the 27 UF codes, such as SP or RJ.", "invalid_state")
        return state


class _DueDateField(ExactCharField):
    def to_internal_value(self, data: Any) -> date:
        value = super().to_internal_value(data)
        try:
            due_date = date.fromisoformat(value) if _ISO_DATE.fullmatch(value) else None
        except ValueError:
            due_date = None
        if due_date is None:
            raise problem("Must be a date written YYYY-MM-DD.", "invalid_date")
        today: date = self.context["today"]
        if not today <= due_date <= today + timedelta(days=BOLETO_DUE_DAYS_MAX):
            raise problem(f"Must be from today to {BOLETO_DUE_DAYS_MAX} days from today (America/Sao_Paulo).",
                           "invalid_due_date")
        return due_date


class _CardNumberField(ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        number = super().to_internal_value(data)
        if not _CARD_NUMBER.fullmatch(number):
            raise problem("Must be 13 to 19 digits, without spaces or other characters.", "invalid_card_number")
        if not cards.luhn_valid(number):
            raise problem("The card number is not valid: its check digit is wrong.", "invalid_card_number")
        if cards.brand(number) is None:
            raise problem("The card brand is not supported.", "unsupported_card_brand")
        if not self.context["livemode"] and number not in cards.TEST_CARDS:
            raise problem("Test mode accepts only the test card numbers.", "live_card_in_test_mode")
        return number


class _ExpirationMonthField(ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        month = super().to_internal_value(data)
        if not _MONTH.fullmatch(month):
            raise problem("Must be the month as two digits, 01 to 12.", "invalid_expiration_month")
        return month


class _ExpirationYearField(ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        year = super().to_internal_value(data)
        if not _YEAR.fullmatch(year):
            raise problem("Must be the year as YYYY or YY.", "invalid_expiration_year")
        full_year = f"20{year}" if len(year) == 2 else year
        if int(full_year) < self.context["today"].year:
            raise problem("The card has expired.", "expired_card")
        return full_year


class _CvvField(ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        cvv = super().to_internal_value(data)
        if not _CVV.fullmatch(cvv):
            raise problem("Must be 3 digits, or 4 for American Express.", "invalid_cvv")
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
            raise problem("Required for BOLETO and for physical products.", "required")
        return super().run_validation(data)

    def validate(self, attrs: dict) -> dict:
        return {"street": attrs["street"], "number": attrs["number"], "complement": attrs.get("complement", ""),
                "zipCode": attrs["zipCode"], "city": attrs["city"], "state": attrs["state"]}


class _CustomerSerializer(StrictSerializer):
    name = StrictCharField(min_length=2, max_length=100)
    document = DocumentField()
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

    token = ExactCharField(required=False)
    holderName = StrictCharField(min_length=2, max_length=100, required=False)
    number = _CardNumberField(required=False)
    expirationMonth = _ExpirationMonthField(required=False)
    expirationYear = _ExpirationYearField(required=False)
    cvv = _CvvField(required=False)
    installments = StrictIntegerField(min_value=1, max_value=12, required=False)

    def run_validation(self, data: Any = empty) -> Any:
        if data is empty and _payment_method(self) == PaymentMethod.CREDIT_CARD:
            raise problem("Required for CREDIT_CARD.", "required")
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
    referenceId = ReferenceIdField()
    payerIp = _IpAddressField()
    isPhysicalProduct = StrictBooleanField()
    webhookUrl = WebhookUrlField(required=False)
    card = _CardSerializer(required=False)
    customer = _CustomerSerializer()
    items = _ItemSerializer(many=True, min_length=1, max_length=100)
    pix = _PixSerializer(required=False)
    boleto = _BoletoSerializer(required=False)
    description = StrictCharField(max_length=140, required=False, allow_blank=True)
    metadata = MetadataField(required=False)


def payin_request_validate(data: Any, *, merchant: Merchant, livemode: bool, today: date) -> dict:
    """Validated, normalized input of POST /payin, or raise a DomainError carrying every problem at once in details.

    `customer` and `items` keep the body's camelCase keys (they are echoed back as sent, normalized); `card` is None,
    `{"token": CardToken, "installments"}` or the card data with its `brand`; `pix_expires_in` is set for PIX only
    and `boleto_due_date` for BOLETO only.
    """
    result = _fast_validate(data, merchant=merchant, livemode=livemode, today=today)
    if result is None:
        result = _validate_with_serializers(data, merchant=merchant, livemode=livemode, today=today)
    return result


def _validate_with_serializers(data: Any, *, merchant: Merchant, livemode: bool, today: date) -> dict:
    """`payin_request_validate` by the serializers: every body, and every problem reported."""
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


# --- Fast path -------------------------------------------------------------------------------------------------------
# The serializers cost ~0.4 ms of CPU per body (DRF deep-copies its fields for every instance); the same rules written
# out plainly cost a few microseconds. They answer only when sure: each `_fast_*` returns None for anything it does not
# fully understand and find valid, and the body then goes to the serializers, which decide and report the problems. So
# they may leave any body to the serializers (a webhookUrl, a card token, an unusual type), but must never accept one
# the serializers refuse, nor return anything but what the serializers return, down to types and key order.
# tests/payments/test_payin_validation_fast_path.py holds the two to that over a corpus of mutated bodies.
# The field names are written out, not read from the serializers, so that a field is never accepted unchecked; the
# tests compare them with the serializers' (a field added there must be added here: if required, the fast path would
# otherwise accept the bodies that lack it).
_FAST_FIELDS = frozenset({"paymentMethod", "amount", "referenceId", "payerIp", "isPhysicalProduct", "card", "customer",
                          "items", "pix", "boleto", "description", "metadata"})  # webhookUrl's check resolves the host


_FAST_CUSTOMER_FIELDS = frozenset({"name", "document", "email", "phone", "address"})


_FAST_ADDRESS_FIELDS = frozenset({"street", "number", "complement", "zipCode", "city", "state"})


_FAST_ITEM_FIELDS = frozenset({"title", "quantity", "unitPrice", "description"})


_FAST_CARD_FIELDS = frozenset({"holderName", "number", "expirationMonth", "expirationYear", "cvv", "installments"})


_FAST_PIX_FIELDS = frozenset({"expiresIn"})


_FAST_BOLETO_FIELDS = frozenset({"dueDate", "instructions"})


_FAST_METHODS = frozenset(PaymentMethod.values)


# Past BIGINT the serializers judge: DRF refuses integers of more than 4300 digits (Python's str(int) limit).
_FAST_INT_MAX = 2**63 - 1


# An IPv4 address as ipaddress writes it; any other notation is parsed (and rewritten) by ipaddress itself.
_FAST_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"


_FAST_IPV4 = re.compile(rf"(?:{_FAST_OCTET}\.){{3}}{_FAST_OCTET}")


def _fast_validate(data: Any, *, merchant: Merchant, livemode: bool, today: date) -> dict | None:
    """What `_validate_with_serializers` returns for a valid body of the usual shape; None for any other body."""
    if type(data) is not dict or not data.keys() <= _FAST_FIELDS:
        return None
    method = data.get("paymentMethod")
    is_physical_product = data.get("isPhysicalProduct")
    if type(method) is not str or method not in _FAST_METHODS or type(is_physical_product) is not bool:
        return None
    amount = _fast_int(data.get("amount"), MIN_AMOUNT[method], _charge_max_amount(merchant))
    reference_id = data.get("referenceId")
    payer_ip = _fast_ip(data.get("payerIp"))
    if amount is None or payer_ip is None or type(reference_id) is not str or not REFERENCE_ID.fullmatch(reference_id):
        return None
    customer = _fast_customer(data.get("customer"), needs_contact=method == PaymentMethod.BOLETO or is_physical_product)
    items = _fast_items(data.get("items"))
    description = fast_text(data.get("description", ""), 140, min_length=0)
    metadata = fast_metadata(data.get("metadata", {}))
    if customer is None or items is None or description is None or metadata is None:
        return None
    card = pix_expires_in = boleto_due_date = None
    boleto_instructions = ""
    if method == PaymentMethod.CREDIT_CARD:
        card = _fast_card(data.get("card"), livemode=livemode, today=today)
        if card is None:
            return None
    elif "card" in data:
        return None
    if method == PaymentMethod.PIX:
        pix_expires_in = _fast_pix_expires_in(data.get("pix", {}))
        if pix_expires_in is None:
            return None
    elif "pix" in data:
        return None
    if method == PaymentMethod.BOLETO:
        boleto = _fast_boleto(data.get("boleto", {}), today=today)
        if boleto is None:
            return None
        boleto_due_date, boleto_instructions = boleto
    elif "boleto" in data:
        return None
    return {
        "payment_method": method,
        "amount": amount,
        "reference_id": reference_id,
        "payer_ip": payer_ip,
        "is_physical_product": is_physical_product,
        "webhook_url": "",
        "description": description,
        "metadata": metadata,
        "customer": customer,
        "items": items,
        "card": card,
        "pix_expires_in": pix_expires_in,
        "boleto_due_date": boleto_due_date,
        "boleto_instructions": boleto_instructions,
    }


def _fast_int(value: Any, minimum: int, maximum: int = _FAST_INT_MAX) -> int | None:
    return value if type(value) is int and minimum <= value <= maximum and value <= _FAST_INT_MAX else None


def _fast_ip(value: Any) -> str | None:
    if type(value) is not str:
        return None
    if _FAST_IPV4.fullmatch(value):
        return value
    try:
        address = str(ipaddress.ip_address(value))
    except ValueError:
        return None
    return None if UNSTORABLE.search(address) else address


def _fast_customer(data: Any, *, needs_contact: bool) -> dict | None:
    if type(data) is not dict or not data.keys() <= _FAST_CUSTOMER_FIELDS:
        return None
    if needs_contact and not ("phone" in data and "address" in data):
        return None
    name = fast_text(data.get("name"), 100, min_length=2)
    document = data.get("document")
    document = documents.normalize(document.strip()) if type(document) is str else ""
    email = fast_text(data.get("email"), 254)
    phone = _fast_phone(data["phone"]) if "phone" in data else None
    address = _fast_address(data["address"]) if "address" in data else None
    if (name is None or documents.document_type(document) is None or email is None or not _fast_email_valid(email)
            or ("phone" in data and phone is None) or ("address" in data and address is None)):
        return None
    return {"name": name, "document": document, "email": email, "phone": phone, "address": address}


def _fast_email_valid(email: str) -> bool:
    try:
        _validate_email(email)
    except DjangoValidationError:
        return False
    return True


def _fast_phone(value: Any) -> str | None:
    return contact.normalize_phone(value.strip()) if type(value) is str else None


def _fast_address(data: Any) -> dict | None:
    if type(data) is not dict or not data.keys() <= _FAST_ADDRESS_FIELDS:
        return None
    street = fast_text(data.get("street"), 150)
    number = fast_text(data.get("number"), 20)
    complement = fast_text(data.get("complement", ""), 100, min_length=0)
    zip_code = data.get("zipCode")
    zip_code = contact.normalize_zip_code(zip_code.strip()) if type(zip_code) is str else None
    city = fast_text(data.get("city"), 80)
    state = data.get("state")
    state = state.strip().translate(_ASCII_UPPER) if type(state) is str else None
    if street is None or number is None or complement is None or zip_code is None or city is None:
        return None
    if state not in contact.UF_CODES:
        return None
    return {"street": street, "number": number, "complement": complement, "zipCode": zip_code, "city": city,
            "state": state}


def _fast_items(data: Any) -> list | None:
    if type(data) is not list or not 1 <= len(data) <= 100:
        return None
    items = []
    for item in data:
        if type(item) is not dict or not item.keys() <= _FAST_ITEM_FIELDS:
            return None
        title = fast_text(item.get("title"), 256)
        quantity = _fast_int(item.get("quantity"), 1)
        unit_price = _fast_int(item.get("unitPrice"), 0)
        if title is None or quantity is None or unit_price is None:
            return None
        validated = {"title": title, "quantity": quantity, "unitPrice": unit_price}
        if "description" in item:
            validated["description"] = fast_text(item["description"], 500, min_length=0)
            if validated["description"] is None:
                return None
        items.append(validated)
    return items


def _fast_card(data: Any, *, livemode: bool, today: date) -> dict | None:
    """The card data; a token (looked up in the database) is left to the serializers."""
    if type(data) is not dict or not data.keys() <= _FAST_CARD_FIELDS:
        return None
    holder_name = fast_text(data.get("holderName"), 100, min_length=2)
    number, month, year, cvv = (data.get(name) for name in ("number", "expirationMonth", "expirationYear", "cvv"))
    installments = _fast_int(data.get("installments", 1), 1, 12)
    if holder_name is None or installments is None:
        return None
    if not (type(number) is str and type(month) is str and type(year) is str and type(cvv) is str):
        return None
    if not (_CARD_NUMBER.fullmatch(number) and _MONTH.fullmatch(month) and _YEAR.fullmatch(year)
            and _CVV.fullmatch(cvv)):
        return None
    brand = cards.brand(number)
    full_year = f"20{year}" if len(year) == 2 else year
    if (brand is None or not cards.luhn_valid(number) or not (livemode or number in cards.TEST_CARDS)
            or int(full_year) < today.year or not cards.cvv_valid(cvv, brand)
            or not cards.expiry_valid(month, year, today=today)):
        return None
    return {"holderName": holder_name, "number": number, "expirationMonth": month, "expirationYear": full_year,
            "cvv": cvv, "brand": brand, "installments": installments}


def _fast_pix_expires_in(data: Any) -> int | None:
    if type(data) is not dict or not data.keys() <= _FAST_PIX_FIELDS:
        return None
    return _fast_int(data.get("expiresIn", PIX_EXPIRES_IN_DEFAULT), 60, 604_800)


def _fast_boleto(data: Any, *, today: date) -> tuple[date, str] | None:
    """The due date (in three days unless given) and instructions."""
    if type(data) is not dict or not data.keys() <= _FAST_BOLETO_FIELDS:
        return None
    due_date = today + timedelta(days=BOLETO_DUE_DAYS_DEFAULT)
    if "dueDate" in data:
        value = data["dueDate"]
        if type(value) is not str or not _ISO_DATE.fullmatch(value):
            return None
        try:
            due_date = date.fromisoformat(value)
        except ValueError:
            return None
        if not today <= due_date <= today + timedelta(days=BOLETO_DUE_DAYS_MAX):
            return None
    instructions = fast_text(data.get("instructions", ""), 255, min_length=0)
    return None if instructions is None else (due_date, instructions)
