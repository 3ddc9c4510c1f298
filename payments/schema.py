"""OpenAPI documentation of the pay-in and balance API. These serializers only describe: requests are parsed by
`payments.validation` and responses built by `payments.serializers`."""

from __future__ import annotations

from rest_framework import serializers

from payments.models import LineType, PayinStatus, PaymentMethod, PayoutStatus, PixKeyType, RefundStatus


class Address(serializers.Serializer):
    street = serializers.CharField(max_length=150)
    number = serializers.CharField(max_length=20)
    complement = serializers.CharField(max_length=100, required=False)
    zipCode = serializers.CharField(help_text="8 digits; '-' and '.' are stripped.")
    city = serializers.CharField(max_length=80)
    state = serializers.CharField(help_text="One of the 27 UF codes, e.g. SP.")


class Customer(serializers.Serializer):
    name = serializers.CharField(min_length=2, max_length=100)
    document = serializers.CharField(help_text="CPF (11 digits) or CNPJ (14 characters, alphanumeric allowed).")
    email = serializers.EmailField(max_length=254)
    phone = serializers.CharField(required=False, help_text="10 to 13 digits after stripping + ( ) - and spaces.")
    address = Address(required=False, help_text="Required for BOLETO and when isPhysicalProduct is true.")


class Item(serializers.Serializer):
    title = serializers.CharField(min_length=1, max_length=256)
    quantity = serializers.IntegerField(min_value=1)
    unitPrice = serializers.IntegerField(min_value=0, help_text="Cents.")
    description = serializers.CharField(required=False, max_length=500)


class CardRequest(serializers.Serializer):
    token = serializers.CharField(required=False, help_text="card.token of an earlier charge; or the fields below.")
    holderName = serializers.CharField(required=False, min_length=2, max_length=100)
    number = serializers.CharField(required=False, help_text="13 to 19 digits; never stored.")
    expirationMonth = serializers.CharField(required=False, help_text="01 to 12.")
    expirationYear = serializers.CharField(required=False, help_text="YYYY or YY.")
    cvv = serializers.CharField(required=False, help_text="3 digits, 4 for Amex; never stored.")
    installments = serializers.IntegerField(required=False, min_value=1, max_value=12, default=1)


class PixOptions(serializers.Serializer):
    expiresIn = serializers.IntegerField(required=False, min_value=60, max_value=604800, default=3600)


class BoletoOptions(serializers.Serializer):
    dueDate = serializers.DateField(required=False, help_text="Today to today + 365; default today + 3 days.")
    instructions = serializers.CharField(required=False, max_length=255)


class PayinRequest(serializers.Serializer):
    paymentMethod = serializers.ChoiceField(choices=PaymentMethod.values)
    amount = serializers.IntegerField(min_value=100, help_text="Cents: at least 100 (BOLETO 500).")
    referenceId = serializers.RegexField(r"^[A-Za-z0-9._:-]{1,64}$")
    payerIp = serializers.IPAddressField()
    isPhysicalProduct = serializers.BooleanField()
    webhookUrl = serializers.URLField(required=False, max_length=2048)
    customer = Customer()
    items = Item(many=True)
    card = CardRequest(required=False, help_text="CREDIT_CARD only, and required there.")
    pix = PixOptions(required=False)
    boleto = BoletoOptions(required=False)
    description = serializers.CharField(required=False, max_length=140)
    metadata = serializers.DictField(child=serializers.CharField(max_length=500), required=False)


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
    metadata = serializers.DictField(child=serializers.CharField())
    customer = Customer()
    items = Item(many=True)
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


class PayoutRequest(serializers.Serializer):
    amount = serializers.IntegerField(min_value=1, help_text="Cents; at most the per-payout limit (default 5000000).")
    pixKey = serializers.CharField(max_length=77)
    pixKeyType = serializers.ChoiceField(choices=PixKeyType.values)
    referenceId = serializers.RegexField(r"^[A-Za-z0-9._:-]{1,64}$", help_text="Unique per merchant and mode.")
    beneficiaryName = serializers.CharField(required=False, max_length=120)
    beneficiaryDocument = serializers.CharField(required=False, help_text="CPF or CNPJ; must equal a CPF/CNPJ key.")
    webhookUrl = serializers.URLField(required=False, max_length=2048)
    description = serializers.CharField(required=False, max_length=140)
    metadata = serializers.DictField(child=serializers.CharField(max_length=500), required=False)


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
    description = serializers.CharField()
    metadata = serializers.DictField(child=serializers.CharField())
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
