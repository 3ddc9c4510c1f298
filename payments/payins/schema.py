"""OpenAPI documentation of the pay-in and balance API. These serializers only describe: the request's variants are
generated from `payments.payins.validation.PayinRequestSerializer` (payments.openapi), which parses requests;
responses are built by `payments.payins.serializers`.

A request schema says everything about a body that JSON Schema can say: lengths, patterns, enums, which fields a
payment method or Pix key type requires or refuses (one `oneOf` variant each), and no other fields. What it cannot
say is in the descriptions: check digits (CPF, CNPJ, Luhn), dates relative to today, a card token or a balance that
must exist, a beneficiary document equal to the key, a webhook host that must resolve to public addresses.
"""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from core.api import StrictSerializer
from core.formats.contact import UF_CODES
from core.schema import Const, Documented
from payments.models import PayinStatus, PaymentMethod, RefundStatus
from payments.openapi import request_variant
from payments.payins.validation import CARD_DATA, CardSerializer, CustomerSerializer, PayinRequestSerializer
from payments.unmatched.schema import UnmatchedPaymentBrief

# --- POST /payin: generated from PayinRequestSerializer --------------------------------------------------------------
SHIPPED = {"isPhysicalProduct": True}  # what makes the customer's address and phone required


ShippingCustomer = request_variant(
    CustomerSerializer, "ShippingCustomer", body=SHIPPED,
    doc="The customer of a boleto or of a physical product: address and phone required.")


# The card's shapes: either rule (a token, or the card data) is a rule across its fields, and the brand's number and
# security code, which JSON Schema can tell apart.
CardToken = request_variant(CardSerializer, "CardToken", only=("token", "installments"), required=("token",),
                            doc="A card saved by an earlier PAID charge.")


CardDetails = request_variant(CardSerializer, "CardDetails", only=(*CARD_DATA, "installments"), required=CARD_DATA,
                              doc="A card of any brand but American Express.")


AmexCardDetails = request_variant(
    CardSerializer, "AmexCardDetails", only=(*CARD_DATA, "installments"), required=CARD_DATA,
    doc="An American Express card: its number starts with 34 or 37 and its security code has 4 digits.",
    replace={"number": Documented({"type": "string", "pattern": "^3[47][0-9]{11,17}$"},
                                  help_text="13 to 19 digits from 34 or 37, Luhn-valid; never stored."),
             "cvv": Documented({"type": "string", "pattern": "^[0-9]{4}$"}, help_text="4 digits; never stored.")})


CARD = PolymorphicProxySerializer(component_name="Card", serializers=[CardToken, CardDetails, AmexCardDetails],
                                  resource_type_field_name=None)


# Each variant: the fields the body allows with its paymentMethod (and isPhysicalProduct), in this order first.
_COMMON = ("amount", "referenceId", "payerIp", "webhookUrl", "description", "metadata", "customer", "items")


def _payin_variant(name: str, doc: str, method: str, physical: bool | None) -> type[StrictSerializer]:
    body = {"paymentMethod": method} if physical is None else {"paymentMethod": method, "isPhysicalProduct": physical}
    replace: dict[str, serializers.Field] = {"card": Documented(CARD, help_text="A card token, or the card's data.")}
    if physical is not None:
        component = "PhysicalProduct" if physical else "DigitalProduct"
        replace["isPhysicalProduct"] = Const(physical, component=component)
    if physical or method == PaymentMethod.BOLETO:
        replace["customer"] = ShippingCustomer()
    first = _COMMON if physical is None else (*_COMMON, "isPhysicalProduct")
    return request_variant(PayinRequestSerializer, name, doc=doc, body=body, replace=replace, first=first)


PayinRequest = PolymorphicProxySerializer(
    component_name="Payin", resource_type_field_name=None,
    serializers=[
        _payin_variant("PixPayin", "A PIX charge for a digital product or a service.", PaymentMethod.PIX, False),
        _payin_variant("PixShippedPayin",
                       "A PIX charge for a physical product: the customer's address and phone are required.",
                       PaymentMethod.PIX, True),
        _payin_variant("CardPayin", "A CREDIT_CARD charge for a digital product or a service.",
                       PaymentMethod.CREDIT_CARD, False),
        _payin_variant("CardShippedPayin",
                       "A CREDIT_CARD charge for a physical product: the customer's address and phone are required.",
                       PaymentMethod.CREDIT_CARD, True),
        _payin_variant("BoletoPayin",
                       "A BOLETO charge: at least 500 cents, and the customer's address and phone are required.",
                       PaymentMethod.BOLETO, None),
    ])


class PayinSimulation(StrictSerializer):
    action = serializers.ChoiceField(choices=["pay", "expire", "chargeback", "med"])
    amount = serializers.IntegerField(required=False, min_value=1, max_value=10_000_000_000, help_text=(
        "pay: the amount the payer pays, default the charge's. Another amount, or paying a charge that is not PENDING "
        "(a second time, after a cancel), makes an unmatched payment."))


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


class BolixPixData(serializers.Serializer):
    qrcode = serializers.CharField(help_text="The Pix copy-and-paste payload the bank registered with the boleto.")
    qrcodeImageUrl = serializers.URLField()


class BoletoData(serializers.Serializer):
    barcode = serializers.CharField(help_text="44 digits.")
    digitableLine = serializers.CharField(help_text="47 digits.")
    dueDate = serializers.DateField()
    url = serializers.URLField(help_text="The printable boleto.")
    instructions = serializers.CharField()
    pdfUrl = serializers.URLField(allow_null=True, help_text="The bank's PDF of a live boleto; null in test mode.")
    pix = BolixPixData(allow_null=True, help_text="A live boleto's Pix code: the same charge, payable by either way, "
                                                  "once (a second payment is an unmatched payment).")
    paidAmount = serializers.IntegerField(allow_null=True, help_text="What the payer paid, with the fine and "
                                                                     "interest of a late payment; null until paid.")


class CardData(serializers.Serializer):
    brand = serializers.CharField()
    bin = serializers.CharField()
    last4 = serializers.CharField()
    holderName = serializers.CharField()
    expirationMonth = serializers.CharField()
    expirationYear = serializers.CharField()
    installments = serializers.IntegerField()
    installmentValue = serializers.IntegerField(required=False, allow_null=True,
                                                help_text="Live cards: each installment, in cents, as the rail set it.")
    retryable = serializers.BooleanField(required=False, allow_null=True,
                                         help_text="Live cards refused: the rail says the card may be tried again.")
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


class PayinSimulated(Payin):
    unmatchedPayment = UnmatchedPaymentBrief(required=False, help_text=(
        "Present when the simulated payment did not settle the charge (another amount, a second payment, a payment "
        "after a cancel): the unmatched payment it made, held in your `held` balance. The charge itself does not "
        "move."))


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


class BoletoSettings(serializers.Serializer):
    boletoFine = serializers.IntegerField(help_text="Basis points of the amount, once (200 is 2%); 0: none.")
    boletoInterest = serializers.IntegerField(help_text="Basis points of the amount a month (100 is 1% a month); "
                                                        "0: none.")


class InstallmentOption(serializers.Serializer):
    installments = serializers.IntegerField()
    installmentValue = serializers.IntegerField(help_text="Cents.")
    hasInterest = serializers.BooleanField()
    interestPercentage = serializers.IntegerField(help_text="Hundredths of a percent a month (199 = 1.99%).")


class Installments(serializers.Serializer):
    amount = serializers.IntegerField()
    brand = serializers.CharField()
    data = InstallmentOption(many=True)


class RefundList(serializers.Serializer):
    data = Refund(many=True)
    hasMore = serializers.BooleanField()
    nextCursor = serializers.CharField(allow_null=True)
