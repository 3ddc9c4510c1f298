"""OpenAPI documentation of the pay-in and balance API. These serializers only describe: requests are parsed by
`payments.payins.validation`, responses built by `payments.payins.serializers`.

A request schema says everything about a body that JSON Schema can say: lengths, patterns, enums, which fields a
payment method or Pix key type requires or refuses (one `oneOf` variant each), and no other fields. What it cannot
say is in the descriptions: check digits (CPF, CNPJ, Luhn), dates relative to today, a card token or a balance that
must exist, a beneficiary document equal to the key, a webhook host that must resolve to public addresses.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from config.api import StrictSerializer
from config.schema import Const, Documented
from payments.fields import (
    DOCUMENT_HELP,
    DOCUMENT_PATTERN,
    EMAIL_PATTERN,
    PHONE_PATTERN,
    REFERENCE_ID_PATTERN,
    STATE_PATTERN,
    ZIP_CODE_PATTERN,
    metadata_doc,
    pattern_field,
    webhook_url_doc,
)
from payments.formats.contact import UF_CODES
from payments.models import PayinStatus, PaymentMethod, RefundStatus
from payments.payins.validation import BOLETO_DUE_DAYS_MAX, MIN_AMOUNT, PIX_EXPIRES_IN_DEFAULT


# --- POST /payin -----------------------------------------------------------------------------------------------------
class Address(StrictSerializer):
    street = serializers.CharField(max_length=150)
    number = serializers.CharField(max_length=20)
    complement = serializers.CharField(max_length=100, required=False, allow_blank=True)
    zipCode = pattern_field(ZIP_CODE_PATTERN, help_text="CEP: 8 digits; '-' and '.' are dropped.")
    city = serializers.CharField(max_length=80)
    state = pattern_field(STATE_PATTERN, help_text="One of the 27 UF codes, in any case, e.g. SP.")


class Customer(StrictSerializer):
    name = serializers.CharField(min_length=2, max_length=100)
    document = pattern_field(DOCUMENT_PATTERN, help_text=DOCUMENT_HELP)
    email = Documented({"type": "string", "format": "email", "maxLength": 254, "pattern": EMAIL_PATTERN})
    phone = pattern_field(PHONE_PATTERN, required=False,
                          help_text="10 to 13 digits once + ( ) - and spaces are dropped.")
    address = Address(required=False)


class ShippingCustomer(Customer):
    """The customer of a boleto or of a physical product: address and phone required."""

    phone = pattern_field(PHONE_PATTERN, help_text="10 to 13 digits once + ( ) - and spaces are dropped.")
    address = Address()


class Item(StrictSerializer):
    title = serializers.CharField(max_length=256)
    quantity = serializers.IntegerField(min_value=1)
    unitPrice = serializers.IntegerField(min_value=0, help_text="Cents.")
    description = serializers.CharField(required=False, max_length=500, allow_blank=True)


class CardToken(StrictSerializer):
    """A card saved by an earlier PAID charge."""

    token = serializers.CharField(trim_whitespace=False,
                                  help_text="card.token of an earlier PAID charge of this account and mode.")
    installments = serializers.IntegerField(required=False, min_value=1, max_value=12, default=1)


class CardDetails(StrictSerializer):
    """A card of any brand but American Express."""

    holderName = serializers.CharField(min_length=2, max_length=100)
    number = pattern_field("^([0-24-9][0-9]{12,18}|3[0-35689][0-9]{11,17})$",
                   help_text="13 to 19 digits, Luhn-valid, of a known brand (test mode: the test cards only); never "
                             "stored.")
    expirationMonth = pattern_field("^(0[1-9]|1[0-2])$", help_text="01 to 12.")
    expirationYear = pattern_field("^([0-9]{2}|[0-9]{4})$", help_text="YYYY or YY; the card must not have expired.")
    cvv = pattern_field("^[0-9]{3}$", help_text="3 digits; never stored.")
    installments = serializers.IntegerField(required=False, min_value=1, max_value=12, default=1)


class AmexCardDetails(CardDetails):
    """An American Express card: its number starts with 34 or 37 and its security code has 4 digits."""

    number = pattern_field("^3[47][0-9]{11,17}$", help_text="13 to 19 digits from 34 or 37, Luhn-valid; never stored.")
    cvv = pattern_field("^[0-9]{4}$", help_text="4 digits; never stored.")


CARD = PolymorphicProxySerializer(component_name="Card", serializers=[CardToken, CardDetails, AmexCardDetails],
                                  resource_type_field_name=None)


class PixOptions(StrictSerializer):
    expiresIn = serializers.IntegerField(required=False, min_value=60, max_value=604800, default=PIX_EXPIRES_IN_DEFAULT,
                                         help_text="Seconds.")


class BoletoOptions(StrictSerializer):
    dueDate = serializers.DateField(required=False, help_text=f"Today to today + {BOLETO_DUE_DAYS_MAX} days "
                                                              "(America/Sao_Paulo); default today + 3 days.")
    instructions = serializers.CharField(required=False, max_length=255, allow_blank=True)


class _PayinBase(StrictSerializer):
    amount = serializers.IntegerField(
        min_value=MIN_AMOUNT[PaymentMethod.PIX], max_value=settings.CHARGE_MAX_AMOUNT,
        help_text="Cents; at most the account's maximum per charge (by default the maximum here).")
    referenceId = pattern_field(REFERENCE_ID_PATTERN, help_text="Your order id; not unique: charges are listed by it.")
    payerIp = Documented({"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
                         help_text="The payer's IPv4 or IPv6 address.")
    webhookUrl = webhook_url_doc()
    description = serializers.CharField(required=False, max_length=140, allow_blank=True,
                                        help_text="Shown to the payer.")
    metadata = metadata_doc()
    customer = Customer()
    items = Item(many=True, min_length=1, max_length=100)


class _PhysicalProduct(_PayinBase):
    isPhysicalProduct = Const(True, component="PhysicalProduct")
    customer = ShippingCustomer()


class _DigitalProduct(_PayinBase):
    isPhysicalProduct = Const(False, component="DigitalProduct")


class PixPayin(_DigitalProduct):
    """A PIX charge for a digital product or a service."""

    paymentMethod = Const(PaymentMethod.PIX.value, component="PixMethod")
    pix = PixOptions(required=False)


class PixShippedPayin(_PhysicalProduct):
    """A PIX charge for a physical product: the customer's address and phone are required."""

    paymentMethod = Const(PaymentMethod.PIX.value, component="PixMethod")
    pix = PixOptions(required=False)


class CardPayin(_DigitalProduct):
    """A CREDIT_CARD charge for a digital product or a service."""

    paymentMethod = Const(PaymentMethod.CREDIT_CARD.value, component="CardMethod")
    card = Documented(CARD, help_text="A card token, or the card's data.")


class CardShippedPayin(_PhysicalProduct):
    """A CREDIT_CARD charge for a physical product: the customer's address and phone are required."""

    paymentMethod = Const(PaymentMethod.CREDIT_CARD.value, component="CardMethod")
    card = Documented(CARD, help_text="A card token, or the card's data.")


class BoletoPayin(_PayinBase):
    """A BOLETO charge: at least 500 cents, and the customer's address and phone are required."""

    paymentMethod = Const(PaymentMethod.BOLETO.value, component="BoletoMethod")
    amount = serializers.IntegerField(
        min_value=MIN_AMOUNT[PaymentMethod.BOLETO], max_value=settings.CHARGE_MAX_AMOUNT,
        help_text="Cents; at most the account's maximum per charge (by default the maximum here).")
    isPhysicalProduct = serializers.BooleanField()
    customer = ShippingCustomer()
    boleto = BoletoOptions(required=False)


PayinRequest = PolymorphicProxySerializer(
    component_name="Payin", resource_type_field_name=None,
    serializers=[PixPayin, PixShippedPayin, CardPayin, CardShippedPayin, BoletoPayin])


class PayinSimulation(StrictSerializer):
    action = serializers.ChoiceField(choices=["pay", "expire", "chargeback"])


# --- Responses -------------------------------------------------------------------------------------------------------
class AddressData(serializers.Serializer):
    street = serializers.CharField()
    number = serializers.CharField()
    complement = serializers.CharField(allow_blank=True, help_text="Empty when none was sent.")
    zipCode = serializers.CharField(help_text="8 digits.")
    city = serializers.CharField()
    state = serializers.ChoiceField(choices=UF_CODES)


class CustomerData(serializers.Serializer):
    name = serializers.CharField()
    document = serializers.CharField(help_text="As sent, without punctuation.")
    email = serializers.CharField()
    phone = serializers.CharField(allow_null=True, help_text="Digits only; null when none was sent.")
    address = AddressData(allow_null=True, help_text="Null when none was sent.")


class ItemData(serializers.Serializer):
    title = serializers.CharField()
    quantity = serializers.IntegerField()
    unitPrice = serializers.IntegerField()
    description = serializers.CharField(required=False, allow_blank=True, help_text="Present when it was sent.")


class PixData(serializers.Serializer):
    qrcode = serializers.CharField(help_text="The Pix copy-and-paste payload (BR Code).")
    expiration = serializers.DateTimeField()
    txid = serializers.CharField()
    qrcodeImageUrl = serializers.URLField()


class BoletoData(serializers.Serializer):
    barcode = serializers.CharField(help_text="44 digits.")
    digitableLine = serializers.CharField(help_text="47 digits.")
    dueDate = serializers.DateField()
    url = serializers.URLField(help_text="The printable boleto.")
    instructions = serializers.CharField()


class CardData(serializers.Serializer):
    brand = serializers.CharField()
    bin = serializers.CharField()
    last4 = serializers.CharField()
    holderName = serializers.CharField()
    expirationMonth = serializers.CharField()
    expirationYear = serializers.CharField()
    installments = serializers.IntegerField()
    token = serializers.CharField(allow_null=True, help_text="Reuse the card in later charges; null if declined.")


class Payin(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=PayinStatus.values)
    amount = serializers.IntegerField()
    fee = serializers.IntegerField()
    netAmount = serializers.IntegerField()
    currency = serializers.CharField()
    paymentMethod = serializers.ChoiceField(choices=PaymentMethod.values)
    referenceId = serializers.CharField()
    livemode = serializers.BooleanField()
    description = serializers.CharField()
    metadata = serializers.DictField(child=serializers.CharField(allow_blank=True))
    customer = CustomerData()
    items = ItemData(many=True)
    refundedAmount = serializers.IntegerField()
    paymentUrl = serializers.URLField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    paidAt = serializers.DateTimeField(allow_null=True)
    failureCode = serializers.CharField(allow_null=True)
    failureMessage = serializers.CharField(allow_null=True)
    pix = PixData(required=False)
    boleto = BoletoData(required=False)
    card = CardData(required=False)
    authorizationCode = serializers.CharField(required=False, allow_null=True)


class PayinList(serializers.Serializer):
    data = Payin(many=True)
    hasMore = serializers.BooleanField()
    nextCursor = serializers.CharField(allow_null=True)


class Refund(serializers.Serializer):
    id = serializers.UUIDField()
    payinId = serializers.UUIDField()
    amount = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RefundStatus.values)
    reason = serializers.CharField(allow_null=True)
    failureCode = serializers.CharField(allow_null=True)
    livemode = serializers.BooleanField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class RefundList(serializers.Serializer):
    data = Refund(many=True)
