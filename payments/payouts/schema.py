"""OpenAPI documentation of the payout API: the request's variants, one per Pix key type, and the responses."""

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
    REFERENCE_ID_PATTERN,
    metadata_doc,
    pattern_field,
    webhook_url_doc,
)
from payments.formats.pix_keys import EMAIL_MAX_LENGTH
from payments.models import PayoutStatus, PixKeyType


class PayoutSimulation(StrictSerializer):
    action = serializers.ChoiceField(choices=["complete", "fail", "return"])


# --- POST /payout ----------------------------------------------------------------------------------------------------
class _PayoutBase(StrictSerializer):
    amount = serializers.IntegerField(
        min_value=1, max_value=settings.PAYOUT_MAX_AMOUNT,
        help_text="Cents; at most the account's maximum per payout (by default the maximum here), and the day's "
                  "payouts at most its daily maximum.")
    referenceId = pattern_field(REFERENCE_ID_PATTERN,
                                help_text="Unique per account and mode (409 duplicate_reference_id).")
    beneficiaryName = serializers.CharField(required=False, max_length=120, allow_blank=True)
    beneficiaryDocument = pattern_field(DOCUMENT_PATTERN, required=False, help_text=DOCUMENT_HELP)
    webhookUrl = webhook_url_doc()
    description = serializers.CharField(required=False, max_length=140, allow_blank=True)
    metadata = metadata_doc()


class CpfPayout(_PayoutBase):
    """A payout to a CPF key."""

    pixKeyType = Const(PixKeyType.CPF.value, component="CpfKeyType")
    pixKey = pattern_field("^[0-9]{11}$", help_text="11 digits, check digits valid, no punctuation.")
    beneficiaryDocument = pattern_field(DOCUMENT_PATTERN, required=False, help_text="The key's CPF, if sent.")


class CnpjPayout(_PayoutBase):
    """A payout to a CNPJ key."""

    pixKeyType = Const(PixKeyType.CNPJ.value, component="CnpjKeyType")
    pixKey = pattern_field("^[0-9A-Z]{12}[0-9]{2}$", help_text="14 digits or uppercase letters, check digits valid, no "
                                                        "punctuation.")
    beneficiaryDocument = pattern_field(DOCUMENT_PATTERN, required=False, help_text="The key's CNPJ, if sent.")


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
    pixKey = pattern_field("^\\+?55[1-9]{2}(9[0-9]{8}|[2-9][0-9]{7})$",
                           help_text="+55, the area code and the number, e.g. +5511987654321.")


class EvpPayout(_PayoutBase):
    """A payout to a random key (EVP)."""

    pixKeyType = Const(PixKeyType.EVP.value, component="EvpKeyType")
    pixKey = pattern_field("^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$",
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
