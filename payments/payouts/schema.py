"""OpenAPI documentation of the payout API: the request's variants, one per Pix key type, generated from
`payments.payouts.validation.PayoutRequestSerializer` (payments.openapi), and the responses."""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from core.api import StrictSerializer
from payments.models import PayoutStatus, PixKeyType
from payments.openapi import request_variant
from payments.payouts.validation import PayoutRequestSerializer


class PayoutSimulation(StrictSerializer):
    action = serializers.ChoiceField(choices=["complete", "fail", "return"])


# --- POST /payout ----------------------------------------------------------------------------------------------------
# Each variant: the fields of PayoutRequestSerializer as its Pix key type documents them, in this order first.
_FIRST = ("amount", "referenceId", "beneficiaryName", "beneficiaryDocument", "webhookUrl", "description", "metadata",
          "pixKeyType")


def _payout_variant(name: str, doc: str, key_type: str) -> type[StrictSerializer]:
    return request_variant(PayoutRequestSerializer, name, doc=doc, body={"pixKeyType": key_type}, first=_FIRST)


PayoutRequest = PolymorphicProxySerializer(
    component_name="Payout", resource_type_field_name="pixKeyType",
    serializers={"CPF": _payout_variant("CpfPayout", "A payout to a CPF key.", PixKeyType.CPF),
                 "CNPJ": _payout_variant("CnpjPayout", "A payout to a CNPJ key.", PixKeyType.CNPJ),
                 "EMAIL": _payout_variant("EmailPayout", "A payout to an e-mail key.", PixKeyType.EMAIL),
                 "PHONE": _payout_variant("PhonePayout", "A payout to a phone key.", PixKeyType.PHONE),
                 "EVP": _payout_variant("EvpPayout", "A payout to a random key (EVP).", PixKeyType.EVP)})


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
