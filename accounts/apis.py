from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ApiView


class AccountApi(ApiView):
    @extend_schema(
        operation_id="account_retrieve",
        summary="The account of the calling key pair",
        description="Use it to check a key pair: it answers with the merchant and mode the keys belong to.",
        responses=inline_serializer("Account", {
            "merchantId": serializers.UUIDField(),
            "name": serializers.CharField(),
            "livemode": serializers.BooleanField(),
            "kycStatus": serializers.ChoiceField(choices=["NOT_SUBMITTED", "SUBMITTED", "APPROVED", "REJECTED"]),
        }),
    )
    def get(self, request: Request) -> Response:
        merchant = request.auth.merchant
        return Response({"merchantId": str(merchant.id), "name": merchant.name, "livemode": request.auth.livemode,
                         "kycStatus": merchant.kyc_status})
