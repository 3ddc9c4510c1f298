"""The body of POST /payin, checked and normalized (SPEC §3.1, §3.7).

Every problem is reported at once, each with its dotted path. Rules that span fields (the amount's minimum, the
address for boletos and physical goods, `card`/`pix`/`boleto` only with their method) read the raw body, so they are
checked even when the fields they depend on have problems of their own. No message ever repeats a card number or a
CVV; no message repeats any other value either.

PayinRequestSerializer is the one declaration of the body: it validates every request, and the OpenAPI request variants
(payments.payins.schema, by payments.openapi) are derived from its fields, whose rules live in their classes
(payments.payins.fields, payments.fields).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.settings import api_settings

from accounts.models import Merchant
from core.api import StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer, VisibleCharField
from core.errors import as_domain_error
from payments import policy, rails
from payments.fields import (
    DocumentField,
    MetadataField,
    ReferenceIdField,
    WebhookUrlField,
    problem,
    request_body,
)
from payments.formats import cards
from payments.models import CardToken, PaymentMethod
from payments.payins.errors import RawCardDataNotAllowed
from payments.payins.fields import (
    BOLETO_DUE_DAYS_DEFAULT,
    BOLETO_DUE_DAYS_MAX,
    CardNumberField,
    CardTokenField,
    CvvField,
    DueDateField,
    EmailField,
    ExpirationMonthField,
    ExpirationYearField,
    IpAddressField,
    OnlyWithItsMethod,
    PaymentMethodField,
    PhoneField,
    RequiredForBoletoOrDelivery,
    StateField,
    ZipCodeField,
    payment_method,
)

__all__ = ["BOLETO_DUE_DAYS_MAX", "MIN_AMOUNT", "PIX_EXPIRES_IN_DEFAULT", "PayinRequestSerializer",
           "payin_request_validate"]

MIN_AMOUNT = {PaymentMethod.PIX: 100, PaymentMethod.CREDIT_CARD: 100, PaymentMethod.BOLETO: 500}


PIX_EXPIRES_IN_DEFAULT = 3600


class _AmountField(StrictIntegerField):
    HELP = "Cents; at most the account's maximum per charge (by default the maximum here)."

    @staticmethod
    def minimum(method: str | None) -> int:
        return MIN_AMOUNT[method] if method else min(MIN_AMOUNT.values())

    def documented(self, body: Mapping, required: bool) -> serializers.Field:
        return _AmountField(min_value=self.minimum(payment_method(body)), max_value=settings.CHARGE_MAX_AMOUNT,
                            required=required, help_text=self.HELP)

    def to_internal_value(self, data: Any) -> int:
        amount = super().to_internal_value(data)
        method = payment_method(request_body(self))
        minimum = self.minimum(method)
        if amount < minimum:
            raise problem(f"Must be at least {minimum} cents" + (f" for {method}." if method else "."),
                          "amount_too_small")
        maximum = policy.charge_max_amount(self.context["merchant"])
        if amount > maximum:
            raise problem(f"Must be at most {maximum} cents, this account's maximum per charge.", "amount_too_large")
        return amount


# --- Objects ---------------------------------------------------------------------------------------------------------
class _AddressSerializer(RequiredForBoletoOrDelivery, StrictSerializer):
    doc_name = "Address"

    street = VisibleCharField(max_length=150)
    number = VisibleCharField(max_length=20)
    complement = VisibleCharField(max_length=100, required=False, allow_blank=True)
    zipCode = ZipCodeField()
    city = VisibleCharField(max_length=80)
    state = StateField()

    def validate(self, attrs: dict) -> dict:
        return {"street": attrs["street"], "number": attrs["number"], "complement": attrs.get("complement", ""),
                "zipCode": attrs["zipCode"], "city": attrs["city"], "state": attrs["state"]}


class CustomerSerializer(StrictSerializer):
    doc_name = "Customer"

    name = VisibleCharField(min_length=2, max_length=100)
    document = DocumentField()
    email = EmailField()
    phone = PhoneField(required=False)
    address = _AddressSerializer(required=False)

    def validate(self, attrs: dict) -> dict:
        return {"name": attrs["name"], "document": attrs["document"], "email": attrs["email"],
                "phone": attrs.get("phone"), "address": attrs.get("address")}


class _ItemListSerializer(serializers.ListSerializer):
    """The items, which add up (quantity × unitPrice) to the charge's amount exactly: one meaning for the contract,
    what the payer is charged for (docs/decisions/0077-items-add-up-to-the-amount.md)."""

    default_error_messages = {
        "not_a_list": "Must be a JSON array of items.",
        "min_length": "Must have at least {min_length} item.",
        "max_length": "Must have at most {max_length} items.",
    }

    def to_internal_value(self, data: Any) -> list:
        items = super().to_internal_value(data)
        amount = request_body(self).get("amount")
        if isinstance(amount, int) and not isinstance(amount, bool) and amount > 0:  # else amount's own problem
            total = sum(item["quantity"] * item["unitPrice"] for item in items)
            if total != amount:
                raise ValidationError([ErrorDetail(
                    f"The items add up to {total} cents (quantity × unitPrice), but amount is {amount}: they must "
                    "be equal.", code="items_total_mismatch")])
        return items


ITEM_QUANTITY_MAX = 1_000_000


class _UnitPriceField(StrictIntegerField):
    """Cents, at most the account's maximum per charge (an item cannot cost more than a charge may)."""

    def documented(self, body: Mapping, required: bool) -> serializers.Field:
        return _UnitPriceField(min_value=0, max_value=settings.CHARGE_MAX_AMOUNT, required=required,
                               help_text=self.help_text)

    def to_internal_value(self, data: Any) -> int:
        price = super().to_internal_value(data)
        maximum = policy.charge_max_amount(self.context["merchant"])
        if price > maximum:
            raise problem(f"Must be at most {maximum} cents, this account's maximum per charge.", "max_value")
        return price


class _ItemSerializer(StrictSerializer):
    doc_name = "Item"

    title = VisibleCharField(max_length=256)
    quantity = StrictIntegerField(min_value=1, max_value=ITEM_QUANTITY_MAX)
    unitPrice = _UnitPriceField(min_value=0, help_text="Cents; at most the account's maximum per charge.")
    description = VisibleCharField(max_length=500, required=False, allow_blank=True)

    class Meta:
        list_serializer_class = _ItemListSerializer

    def validate(self, attrs: dict) -> dict:
        return dict(attrs)


CARD_DATA = ("holderName", "number", "expirationMonth", "expirationYear", "cvv")
RAIL_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")  # a rail's browser token (Efí's payment_token: 40 hex digits)


class CardSerializer(OnlyWithItsMethod, StrictSerializer):
    """Either a token from an earlier charge or the card data; `installments` with both."""

    method = PaymentMethod.CREDIT_CARD
    required_for_method = True

    token = CardTokenField(required=False)
    holderName = StrictCharField(min_length=2, max_length=100, required=False)
    number = CardNumberField(required=False)
    expirationMonth = ExpirationMonthField(required=False)
    expirationYear = ExpirationYearField(required=False)
    cvv = CvvField(required=False)
    installments = StrictIntegerField(min_value=1, max_value=12, required=False, default=1)

    def required_for(self, body: Mapping) -> bool:
        # A live card on a rail that takes only its browser token may come without one: the payer pays on the hosted
        # page.
        return super().required_for(body) and not self.context.get("tokens_only")

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, Mapping):
            return super().to_internal_value(data)  # refused as not an object
        try:
            fields = super().to_internal_value(data)
            errors: dict = {}
        except ValidationError as exc:
            fields, errors = {}, dict(exc.detail)
        card = self._card(data, fields, errors)
        if errors:
            raise ValidationError(_in_field_order(errors, self.fields))
        return card

    def _card(self, data: Mapping, fields: dict, errors: dict) -> dict:
        """The rules across the card's fields, checked whatever else is wrong: adds to `errors`, or returns the card.
        `fields` holds the fields that passed their own checks (the same values as in `data`, untrimmed)."""
        valid = {name for name in self.fields if name in data and name not in errors}
        installments = data["installments"] if "installments" in valid else 1
        card_token = brand = None
        if self.context.get("tokens_only"):  # card data was refused before (payin_request_validate)
            if "token" not in valid:
                return {}
            if not RAIL_TOKEN.fullmatch(data["token"]):
                errors["token"] = [ErrorDetail("Must be the payment_token Efí's browser library made for this card.",
                                               code="invalid_token")]
                return {}
            return {"token": data["token"], "installments": installments}
        if "token" in data:
            if any(name in data for name in CARD_DATA):
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
            for name in CARD_DATA:
                if name not in data:
                    errors[name] = [ErrorDetail("This field is required unless a token is sent.", code="required")]
            brand = cards.brand(data["number"]) if "number" in valid else None
            if {"number", "cvv"} <= valid and not cards.cvv_valid(data["cvv"], brand):
                message = "Must be 4 digits for American Express." if brand == "amex" else "Must be 3 digits."
                errors["cvv"] = [ErrorDetail(message, code="invalid_cvv")]
            if {"expirationMonth", "expirationYear"} <= valid and not cards.expiry_valid(
                    data["expirationMonth"], data["expirationYear"], today=self.context["today"]):
                errors["expirationMonth"] = [ErrorDetail("The card has expired.", code="expired_card")]
        if errors:
            return {}
        if card_token is not None:
            return {"token": card_token, "installments": installments}
        return {"holderName": fields["holderName"], "number": fields["number"],
                "expirationMonth": fields["expirationMonth"], "expirationYear": fields["expirationYear"],
                "cvv": fields["cvv"], "brand": brand, "installments": installments}


def _in_field_order(errors: dict, fields: Mapping) -> dict:
    """The object's own problems first, then its fields' in declaration order, then its unknown fields."""
    order = [api_settings.NON_FIELD_ERRORS_KEY, *fields]
    return dict(sorted(errors.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)))


class _PixSerializer(OnlyWithItsMethod, StrictSerializer):
    method = PaymentMethod.PIX
    doc_name = "PixOptions"

    expiresIn = StrictIntegerField(min_value=60, max_value=604_800, required=False, default=PIX_EXPIRES_IN_DEFAULT,
                                   help_text="Seconds.")


class _BoletoSerializer(OnlyWithItsMethod, StrictSerializer):
    method = PaymentMethod.BOLETO
    doc_name = "BoletoOptions"

    dueDate = DueDateField(required=False)
    instructions = VisibleCharField(max_length=255, required=False, allow_blank=True)


class PayinRequestSerializer(StrictSerializer):
    """Context: `merchant`, `livemode` and `today` (the America/Sao_Paulo date)."""

    paymentMethod = PaymentMethodField()
    amount = _AmountField()
    referenceId = ReferenceIdField(help_text="Your order id; not unique: charges are listed by it.")
    payerIp = IpAddressField()
    isPhysicalProduct = StrictBooleanField()
    webhookUrl = WebhookUrlField(required=False)
    card = CardSerializer(required=False)
    customer = CustomerSerializer()
    items = _ItemSerializer(many=True, min_length=1, max_length=100)
    pix = _PixSerializer(required=False)
    boleto = _BoletoSerializer(required=False)
    description = VisibleCharField(max_length=140, required=False, allow_blank=True, help_text="Shown to the payer.")
    metadata = MetadataField(required=False)


def payin_request_validate(data: Any, *, merchant: Merchant, livemode: bool, today: date) -> dict:
    """Validated, normalized input of POST /payin, or raise a DomainError carrying every problem at once in details.

    `customer` and `items` keep the body's camelCase keys (they are echoed back as sent, normalized); `card` is None,
    `{"token": CardToken, "installments"}` or the card data with its `brand`; `pix_expires_in` is set for PIX only
    and `boleto_due_date` for BOLETO only.
    """
    tokens_only = livemode and rails.for_mode(livemode).card_tokens_only
    if tokens_only and isinstance(data, Mapping) and isinstance(data.get("card"), Mapping) and any(
            name in data["card"] for name in CARD_DATA):
        raise RawCardDataNotAllowed(param="card")  # before anything reads the number
    try:
        body = PayinRequestSerializer.validated(data, merchant=merchant, livemode=livemode, today=today,
                                                tokens_only=tokens_only)
    except ValidationError as exc:
        raise as_domain_error(exc) from exc
    if tokens_only and body.get("card") and not body["customer"].get("address"):
        # The rail's card payment needs the payer's billing address.
        raise as_domain_error(ValidationError({"customer": {"address": [ErrorDetail(
            "Required for a live card payment: the payer's billing address.", code="required")]}}))
    return _result(body, today=today)


def _result(body: dict, *, today: date) -> dict:
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
