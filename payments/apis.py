from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from config.api import ApiView
from payments.ledger import balance_get


class BalanceApi(ApiView):
    @extend_schema(
        operation_id="balance_retrieve",
        summary="The balance of the calling key pair's merchant and mode",
        description="`available` can be paid out now (payouts in flight are already out of it); `pending` is card "
                    "money not yet settled. Integer cents, BRL.",
        responses=inline_serializer("Balance", {
            "available": serializers.IntegerField(), "pending": serializers.IntegerField(),
            "currency": serializers.CharField(), "livemode": serializers.BooleanField(),
        }),
    )
    def get(self, request: Request) -> Response:
        balance = balance_get(merchant=request.auth.merchant, livemode=request.auth.livemode)
        return Response({"available": balance.available, "pending": balance.pending, "currency": "BRL",
                         "livemode": request.auth.livemode})
