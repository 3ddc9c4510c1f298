"""OpenAPI documentation of the pay-in and balance API. These serializers only describe: requests are parsed by
`payments.validation` and `payments.payout_validation`, responses built by `payments.serializers`.

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
from payments.formats.contact import UF_CODES
from payments.formats.pix_keys import EMAIL_MAX_LENGTH
from payments.models import LineType, PayinStatus, PaymentMethod, PayoutStatus, PixKeyType, RefundStatus
from payments.validation import (
    BOLETO_DUE_DAYS_MAX,
    METADATA_KEY_MAX_LENGTH,
    METADATA_MAX_KEYS,
    METADATA_VALUE_MAX_LENGTH,
    MIN_AMOUNT,
    PIX_EXPIRES_IN_DEFAULT,
)


def _text(pattern: str, **kwargs) -> serializers.Field:
    return Documented({"type": "string", "pattern": pattern}, **kwargs)


REFERENCE_ID_PATTERN = "^[A-Za-z0-9._:-]{1,64}$"
# `.`, `-`, `/` and spaces are dropped, letters upper-cased; then a CPF (11 digits) or a CNPJ (12 letters or digits
# and 2 check digits).
DOCUMENT_PATTERN = "^[-./ ]*(([0-9][-./ ]*){11}|([0-9A-Za-z][-./ ]*){12}([0-9][-./ ]*){2})$"
DOCUMENT_HELP = ("CPF (11 digits) or CNPJ (14 characters, alphanumeric allowed), check digits valid and not one digit "
                 "repeated; '.', '-', '/' and spaces are dropped first.")
_EMAIL_ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_EMAIL_LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL_TLD = "([A-Za-z][A-Za-z-]{0,61}[A-Za-z]|[Xx][Nn]--[A-Za-z0-9]{1,59})"
# Django's EmailValidator in its common form: a dot-atom, a DNS domain whose last label has letters only (or is an
# A-label). It also takes quoted local parts, address literals and IDN domains, which this pattern leaves out.
EMAIL_PATTERN = f"^{_EMAIL_ATOM}(\\.{_EMAIL_ATOM})*@({_EMAIL_LABEL}\\.)+{_EMAIL_TLD}$"
PHONE_PATTERN = "^[-+() ]*([0-9][-+() ]*){10,13}$"
ZIP_CODE_PATTERN = "^[-.]*([0-9][-.]*){8}$"
# One of the 27 UF codes, in any case (upper-cased when stored).
STATE_PATTERN = "^({})$".format("|".join("".join(f"[{c}{c.lower()}]" for c in code) for code in UF_CODES))


def _webhook_url_schema() -> dict:
    scheme = "[Hh][Tt][Tt][Pp][Ss]?" if settings.WEBHOOKS_ALLOW_HTTP else "[Hh][Tt][Tt][Pp][Ss]"
    label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    port = "(:0*([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])?)?"
    h16 = "[0-9A-Fa-f]{1,4}"
    ipv6 = "|".join([f"({h16}:){{7}}{h16}", f"({h16}:){{1,7}}:", f"({h16}:){{1,6}}:{h16}",
                     *(f"({h16}:){{1,{5 - n}}}(:{h16}){{1,{n + 2}}}" for n in range(4)), f"{h16}:(:{h16}){{1,6}}",
                     f":((:{h16}){{1,7}}|:)"])
    host = f"(({label}\\.)*{label}\\.?|\\[({ipv6})\\])"
    # After the host: no space, control character or backslash (the delivery client would read those differently).
    rest = "([/?#][^\\s\\\\\\u0000-\\u001f]*)?"
    return {"type": "string", "format": "uri", "maxLength": 2048, "pattern": f"^{scheme}://{host}{port}{rest}$"}


def _webhook_url() -> serializers.Field:
    return Documented(_webhook_url_schema(), required=False,
                      help_text="https:// (no credentials in it) to a host that resolves only to public addresses: "
                                "loopback, private, link-local and other reserved addresses are refused.")


def _metadata() -> serializers.Field:
    values = {"type": "string", "maxLength": METADATA_VALUE_MAX_LENGTH, "pattern": "^[^\\u0000]*$"}
    return Documented(
        {"type": "object", "maxProperties": METADATA_MAX_KEYS, "additionalProperties": values}, required=False,
        help_text=f"At most {METADATA_MAX_KEYS} keys of 1 to {METADATA_KEY_MAX_LENGTH} characters, string values of at "
                  f"most {METADATA_VALUE_MAX_LENGTH}; echoed back and in webhooks.")


# --- POST /payin -----------------------------------------------------------------------------------------------------
class Address(StrictSerializer):
    street = serializers.CharField(max_length=150)
    number = serializers.CharField(max_length=20)
    complement = serializers.CharField(max_length=100, required=False, allow_blank=True)
    zipCode = _text(ZIP_CODE_PATTERN, help_text="CEP: 8 digits; '-' and '.' are dropped.")
    city = serializers.CharField(max_length=80)
    state = _text(STATE_PATTERN, help_text="One of the 27 UF codes, in any case, e.g. SP.")


class Customer(StrictSerializer):
    name = serializers.CharField(min_length=2, max_length=100)
    document = _text(DOCUMENT_PATTERN, help_text=DOCUMENT_HELP)
    email = Documented({"type": "string", "format": "email", "maxLength": 254, "pattern": EMAIL_PATTERN})
    phone = _text(PHONE_PATTERN, required=False, help_text="10 to 13 digits once + ( ) - and spaces are dropped.")
    address = Address(required=False)


class ShippingCustomer(Customer):
    """The customer of a boleto or of a physical product: address and phone required."""

    phone = _text(PHONE_PATTERN, help_text="10 to 13 digits once + ( ) - and spaces are dropped.")
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
    number = _text("^([0-24-9][0-9]{12,18}|3[0-35689][0-9]{11,17})$",
                   help_text="13 to 19 digits, Luhn-valid, of a known brand (test mode: the test cards only); never "
                             "stored.")
    expirationMonth = _text("^(0[1-9]|1[0-2])$", help_text="01 to 12.")
    expirationYear = _text("^([0-9]{2}|[0-9]{4})$", help_text="YYYY or YY; the card must not have expired.")
    cvv = _text("^[0-9]{3}$", help_text="3 digits; never stored.")
    installments = serializers.IntegerField(required=False, min_value=1, max_value=12, default=1)


class AmexCardDetails(CardDetails):
    """An American Express card: its number starts with 34 or 37 and its security code has 4 digits."""

    number = _text("^3[47][0-9]{11,17}$", help_text="13 to 19 digits from 34 or 37, Luhn-valid; never stored.")
    cvv = _text("^[0-9]{4}$", help_text="4 digits; never stored.")


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
    referenceId = _text(REFERENCE_ID_PATTERN, help_text="Your order id; not unique: charges are listed by it.")
    payerIp = Documented({"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
                         help_text="The payer's IPv4 or IPv6 address.")
    webhookUrl = _webhook_url()
    description = serializers.CharField(required=False, max_length=140, allow_blank=True,
                                        help_text="Shown to the payer.")
    metadata = _metadata()
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


class PayoutSimulation(StrictSerializer):
    action = serializers.ChoiceField(choices=["complete", "fail", "return"])


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


class Balance(serializers.Serializer):
    available = serializers.IntegerField()
    pending = serializers.IntegerField()
    currency = serializers.CharField()
    livemode = serializers.BooleanField()


class StatementLine(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.ChoiceField(choices=LineType.values)
    amount = serializers.IntegerField(help_text="Signed cents.")
    balanceAfter = serializers.IntegerField()
    balance = serializers.ChoiceField(choices=["available", "pending"], help_text="Which balance the line moves.")
    objectType = serializers.CharField()
    objectId = serializers.CharField()
    referenceId = serializers.CharField(allow_null=True)
    description = serializers.CharField()
    createdAt = serializers.DateTimeField()


class StatementList(serializers.Serializer):
    data = StatementLine(many=True)
    hasMore = serializers.BooleanField()
    nextCursor = serializers.CharField(allow_null=True)


# --- POST /payout ----------------------------------------------------------------------------------------------------
class _PayoutBase(StrictSerializer):
    amount = serializers.IntegerField(
        min_value=1, max_value=settings.PAYOUT_MAX_AMOUNT,
        help_text="Cents; at most the account's maximum per payout (by default the maximum here), and the day's "
                  "payouts at most its daily maximum.")
    referenceId = _text(REFERENCE_ID_PATTERN, help_text="Unique per account and mode (409 duplicate_reference_id).")
    beneficiaryName = serializers.CharField(required=False, max_length=120, allow_blank=True)
    beneficiaryDocument = _text(DOCUMENT_PATTERN, required=False, help_text=DOCUMENT_HELP)
    webhookUrl = _webhook_url()
    description = serializers.CharField(required=False, max_length=140, allow_blank=True)
    metadata = _metadata()


class CpfPayout(_PayoutBase):
    """A payout to a CPF key."""

    pixKeyType = Const(PixKeyType.CPF.value, component="CpfKeyType")
    pixKey = _text("^[0-9]{11}$", help_text="11 digits, check digits valid, no punctuation.")
    beneficiaryDocument = _text(DOCUMENT_PATTERN, required=False, help_text="The key's CPF, if sent.")


class CnpjPayout(_PayoutBase):
    """A payout to a CNPJ key."""

    pixKeyType = Const(PixKeyType.CNPJ.value, component="CnpjKeyType")
    pixKey = _text("^[0-9A-Z]{12}[0-9]{2}$", help_text="14 digits or uppercase letters, check digits valid, no "
                                                        "punctuation.")
    beneficiaryDocument = _text(DOCUMENT_PATTERN, required=False, help_text="The key's CNPJ, if sent.")


class EmailPayout(_PayoutBase):
    """A payout to an e-mail key."""

    pixKeyType = Const(PixKeyType.EMAIL.value, component="EmailKeyType")
    pixKey = Documented(
        {"type": "string", "maxLength": EMAIL_MAX_LENGTH,
         "pattern": EMAIL_PATTERN},
        help_text="An e-mail address (ASCII, a domain with a dot), compared lowercased.")


class PhonePayout(_PayoutBase):
    """A payout to a phone key."""

    pixKeyType = Const(PixKeyType.PHONE.value, component="PhoneKeyType")
    pixKey = _text("^\\+?55[1-9]{2}(9[0-9]{8}|[2-9][0-9]{7})$", help_text="+55, the area code and the number, e.g. "
                                                                         "+5511987654321.")


class EvpPayout(_PayoutBase):
    """A payout to a random key (EVP)."""

    pixKeyType = Const(PixKeyType.EVP.value, component="EvpKeyType")
    pixKey = _text("^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$",
                   help_text="The random key: a UUID of 36 characters.")


PayoutRequest = PolymorphicProxySerializer(
    component_name="Payout", resource_type_field_name="pixKeyType",
    serializers={"CPF": CpfPayout, "CNPJ": CnpjPayout, "EMAIL": EmailPayout, "PHONE": PhonePayout, "EVP": EvpPayout})


class Payout(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=PayoutStatus.values)
    amount = serializers.IntegerField()
    fee = serializers.IntegerField()
    currency = serializers.CharField()
    pixKey = serializers.CharField()
    pixKeyType = serializers.ChoiceField(choices=PixKeyType.values)
    referenceId = serializers.CharField()
    externalId = serializers.CharField(help_text="The Pix end-to-end id (32 characters).")
    beneficiaryName = serializers.CharField(allow_null=True)
    beneficiaryDocument = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_blank=True)
    metadata = serializers.DictField(child=serializers.CharField(allow_blank=True))
    livemode = serializers.BooleanField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    completedAt = serializers.DateTimeField(allow_null=True)
    failureCode = serializers.CharField(allow_null=True)
    failureMessage = serializers.CharField(allow_null=True)


class PayoutList(serializers.Serializer):
    data = Payout(many=True)
    hasMore = serializers.BooleanField()
    nextCursor = serializers.CharField(allow_null=True)
