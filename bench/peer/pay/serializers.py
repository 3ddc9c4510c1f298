"""Request validation and response bodies of POST /payin (PIX) and POST /payout, as DRF serializers."""

import secrets
import string
import uuid
from collections.abc import Mapping
from datetime import UTC, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from . import brcode
from .errors import ApiError
from .models import Balance, Event, LedgerEntry, Payin, Payout
from .validators import REFERENCE_ID, clean_document, clean_pix_key

UF = ["AC", "AL", "AP", "AM", "BA", "CE", "DF", "ES", "GO", "MA", "MT", "MS", "MG", "PA", "PB", "PR", "PE", "PI",
      "RJ", "RN", "RS", "RO", "RR", "SC", "SP", "SE", "TO"]
BASE62 = string.ascii_letters + string.digits


# --- Strict fields: the SPEC refuses "100" for an integer and "true" for a boolean ------------------------------------
class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if type(data) is not int:
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class TimestampField(serializers.DateTimeField):
    """ISO 8601 in UTC with milliseconds and Z."""

    def to_representation(self, value):
        if value is None:
            return None
        value = value.astimezone(UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


class NullIfEmptyField(serializers.CharField):
    def to_representation(self, value):
        return value or None


class RejectUnknownFieldsMixin:
    """Unknown request fields are a 400 naming them, reported with the other problems."""

    def to_internal_value(self, data):
        unknown = {}
        if isinstance(data, Mapping):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = {name: [ErrorDetail("Unknown field.", code="unknown_field")] for name in data
                       if name not in writable}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as error:
            if unknown and isinstance(error.detail, dict):
                raise serializers.ValidationError({**error.detail, **unknown}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


def validate_metadata(value):
    if len(value) > 20:
        raise serializers.ValidationError("At most 20 keys.", code="invalid_metadata")
    if any(len(key) > 40 for key in value):
        raise serializers.ValidationError("Keys are at most 40 characters.", code="invalid_metadata")
    return value


def metadata_field():
    return serializers.DictField(child=StrictCharField(max_length=500, allow_blank=True), required=False,
                                 validators=[validate_metadata])


# --- Pay-in --------------------------------------------------------------------------------------------------------
class AddressSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    street = StrictCharField(max_length=200)
    number = StrictCharField(max_length=20)
    complement = StrictCharField(max_length=100, required=False, allow_blank=True)
    zipCode = StrictCharField(max_length=9)
    city = StrictCharField(max_length=100)
    state = serializers.ChoiceField(choices=UF)

    def validate_zipCode(self, value):
        digits = value.replace("-", "")
        if len(digits) != 8 or not digits.isdigit():
            raise serializers.ValidationError("A CEP has 8 digits.", code="invalid_zip_code")
        return digits


class CustomerSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(min_length=2, max_length=100)
    document = StrictCharField(max_length=18)
    email = serializers.EmailField(max_length=254)
    phone = StrictCharField(required=False)
    address = AddressSerializer(required=False)

    def validate_document(self, value):
        return clean_document(value)

    def validate_phone(self, value):
        digits = "".join(char for char in value if char not in "+()- ")
        if not digits.isdigit() or not 10 <= len(digits) <= 13:
            raise serializers.ValidationError("10 to 13 digits.", code="invalid_phone")
        return digits


class ItemSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    title = StrictCharField(min_length=1, max_length=256)
    quantity = StrictIntegerField(min_value=1)
    unitPrice = StrictIntegerField(min_value=0)
    description = StrictCharField(max_length=500, required=False, allow_blank=True)


class PixOptionsSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    expiresIn = StrictIntegerField(min_value=60, max_value=604800, required=False)


class PayinSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    paymentMethod = serializers.ChoiceField(source="payment_method", choices=Payin.Method.choices)
    amount = StrictIntegerField()
    referenceId = serializers.RegexField(REFERENCE_ID, source="reference_id")
    payerIp = serializers.IPAddressField(source="payer_ip", write_only=True)
    isPhysicalProduct = StrictBooleanField(source="is_physical_product", write_only=True)
    webhookUrl = serializers.URLField(source="webhook_url", max_length=500, required=False, write_only=True)
    customer = CustomerSerializer()
    items = ItemSerializer(many=True, allow_empty=False, max_length=100)
    pix = PixOptionsSerializer(required=False, write_only=True)
    description = StrictCharField(max_length=140, required=False, allow_blank=True)
    metadata = metadata_field()

    netAmount = serializers.SerializerMethodField()
    currency = serializers.SerializerMethodField()
    refundedAmount = serializers.IntegerField(source="refunded_amount", read_only=True)
    paymentUrl = serializers.SerializerMethodField()
    createdAt = TimestampField(source="created_at", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)
    paidAt = TimestampField(source="paid_at", read_only=True)
    failureCode = NullIfEmptyField(source="failure_code", read_only=True)
    failureMessage = NullIfEmptyField(source="failure_message", read_only=True)

    class Meta:
        model = Payin
        fields = ["id", "status", "amount", "fee", "netAmount", "currency", "paymentMethod", "referenceId",
                  "livemode", "description", "metadata", "customer", "items", "refundedAmount", "paymentUrl",
                  "createdAt", "updatedAt", "paidAt", "failureCode", "failureMessage",
                  "payerIp", "isPhysicalProduct", "webhookUrl", "pix"]
        read_only_fields = ["id", "status", "fee", "livemode"]

    def get_netAmount(self, payin):
        return payin.amount - payin.fee

    def get_currency(self, payin):
        return "BRL"

    def get_paymentUrl(self, payin):
        return f"{settings.PUBLIC_BASE_URL}/pay/{payin.public_token}"

    def validate(self, attrs):
        merchant = self.context["request"].user
        errors = {}
        if attrs["payment_method"] != Payin.Method.PIX:
            errors["paymentMethod"] = ErrorDetail("The peer only creates PIX charges.", code="invalid_choice")
        if attrs["amount"] < 100:
            errors["amount"] = ErrorDetail("At least 100 cents.", code="amount_too_small")
        elif attrs["amount"] > merchant.max_charge_amount:
            errors["amount"] = ErrorDetail("Over the per-charge maximum.", code="amount_too_large")
        if attrs["is_physical_product"] and "address" not in attrs["customer"]:
            errors["customer.address"] = ErrorDetail("Required for a physical product.", code="required")
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def create(self, validated_data):
        request = self.context["request"]
        merchant, key = request.user, request.auth
        options = validated_data.pop("pix", None) or {}
        amount = validated_data["amount"]
        fee = min((amount * merchant.pix_fee_bps + 5000) // 10000, amount)  # half-up to the cent
        txid = uuid.uuid4().hex[:25]
        payload = brcode.build(key=settings.PIX_KEY, amount=amount, name=merchant.trading_name or merchant.name,
                               city=merchant.city or settings.PIX_MERCHANT_CITY, txid=txid)
        expires_at = timezone.now() + timedelta(seconds=options.get("expiresIn", 3600))
        with transaction.atomic():
            payin = Payin.objects.create(merchant=merchant, livemode=key.livemode, fee=fee,
                                         public_token=secrets.token_urlsafe(32), pix_txid=txid, pix_payload=payload,
                                         pix_expires_at=expires_at, **validated_data)
            Event.objects.create(merchant=merchant, livemode=key.livemode, type="payin.created",
                                 payload={"type": "payin.created", "data": {"object": self.to_representation(payin)}})
        return payin

    def to_representation(self, payin):
        body = super().to_representation(payin)
        body["pix"] = {"qrcode": payin.pix_payload, "expiration": TimestampField().to_representation(
            payin.pix_expires_at), "txid": payin.pix_txid,
            "qrcodeImageUrl": f"{settings.PUBLIC_BASE_URL}/payin/{payin.id}/qrcode.png?token={payin.public_token}"}
        return body


# --- Payout --------------------------------------------------------------------------------------------------------
class PayoutSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    amount = StrictIntegerField(min_value=1)
    pixKey = StrictCharField(source="pix_key", max_length=77)
    pixKeyType = serializers.ChoiceField(source="pix_key_type", choices=Payout.KeyType.choices)
    referenceId = serializers.RegexField(REFERENCE_ID, source="reference_id")
    beneficiaryName = StrictCharField(source="beneficiary_name", max_length=120, required=False, allow_blank=True)
    beneficiaryDocument = StrictCharField(source="beneficiary_document", max_length=18, required=False)
    webhookUrl = serializers.URLField(source="webhook_url", max_length=500, required=False, write_only=True)
    description = StrictCharField(max_length=140, required=False, allow_blank=True)
    metadata = metadata_field()

    currency = serializers.SerializerMethodField()
    externalId = serializers.CharField(source="external_id", read_only=True)
    createdAt = TimestampField(source="created_at", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)
    completedAt = TimestampField(source="completed_at", read_only=True)
    failureCode = NullIfEmptyField(source="failure_code", read_only=True)
    failureMessage = NullIfEmptyField(source="failure_message", read_only=True)

    class Meta:
        model = Payout
        fields = ["id", "status", "amount", "fee", "currency", "pixKey", "pixKeyType", "referenceId", "externalId",
                  "beneficiaryName", "beneficiaryDocument", "description", "metadata", "livemode", "createdAt",
                  "updatedAt", "completedAt", "failureCode", "failureMessage", "webhookUrl"]
        read_only_fields = ["id", "status", "fee", "livemode"]

    def get_currency(self, payout):
        return "BRL"

    def to_representation(self, payout):
        body = super().to_representation(payout)
        body["beneficiaryName"] = body["beneficiaryName"] or None
        body["beneficiaryDocument"] = body["beneficiaryDocument"] or None
        return body

    def validate_beneficiaryDocument(self, value):
        return clean_document(value)

    def validate(self, attrs):
        merchant = self.context["request"].user
        attrs["pix_key"] = clean_pix_key(attrs["pix_key_type"], attrs["pix_key"])
        document = attrs.get("beneficiary_document")
        if document and attrs["pix_key_type"] in ("CPF", "CNPJ") and document != attrs["pix_key"]:
            raise ApiError(400, "beneficiary_mismatch", "The beneficiary document is not the Pix key's.")
        if attrs["amount"] > merchant.max_payout_amount:
            raise ApiError(400, "amount_too_large", "Over the per-payout maximum.")
        return attrs

    def create(self, validated_data):
        request = self.context["request"]
        merchant, key = request.user, request.auth
        amount = validated_data["amount"]
        fee = merchant.payout_fee
        now = timezone.now()
        external_id = ("E" + settings.PIX_ISPB + now.astimezone(UTC).strftime("%Y%m%d%H%M")
                       + "".join(secrets.choice(BASE62) for _ in range(11)))
        with transaction.atomic():
            balance = Balance.objects.select_for_update().get(merchant=merchant, livemode=key.livemode)
            if balance.available < amount + fee:
                raise ApiError(400, "insufficient_balance", "Insufficient balance")
            today = timezone.localdate(now)
            if balance.payout_day != today:
                balance.payout_day, balance.payout_day_total = today, 0
            if balance.payout_day_total + amount > merchant.daily_payout_limit:
                raise ApiError(400, "payout_limit_exceeded", "Over the daily payout limit.")
            balance.available -= amount + fee
            balance.in_flight += amount + fee
            balance.payout_day_total += amount
            balance.save(update_fields=["available", "in_flight", "payout_day", "payout_day_total", "updated_at"])
            payout = Payout.objects.create(merchant=merchant, livemode=key.livemode, fee=fee,
                                           external_id=external_id, **validated_data)
            LedgerEntry.objects.create(merchant=merchant, livemode=key.livemode, type="payout", amount=-amount,
                                       balance_after=balance.available + fee, object_type="payout",
                                       object_id=payout.id, reference_id=payout.reference_id)
            if fee:
                LedgerEntry.objects.create(merchant=merchant, livemode=key.livemode, type="payout_fee", amount=-fee,
                                           balance_after=balance.available, object_type="payout",
                                           object_id=payout.id, reference_id=payout.reference_id)
            Event.objects.create(merchant=merchant, livemode=key.livemode, type="payout.created",
                                 payload={"type": "payout.created", "data": {"object": self.to_representation(payout)}})
        return payout
