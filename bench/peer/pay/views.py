from django.db import IntegrityError
from django.http import JsonResponse
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from .errors import ApiError
from .idempotency import IdempotentPostMixin
from .models import Payout
from .serializers import PayinSerializer, PayoutSerializer


def ping(request):
    return JsonResponse({"pong": True})


def health(request):
    return JsonResponse({"status": "ok"})


class AccountView(APIView):
    def get(self, request):
        merchant = request.user
        return Response({"merchantId": str(merchant.id), "name": merchant.name, "livemode": request.auth.livemode,
                         "kycStatus": merchant.kyc_status})


class PayinCreateView(IdempotentPostMixin, generics.CreateAPIView):
    serializer_class = PayinSerializer


class PayoutCreateView(IdempotentPostMixin, generics.CreateAPIView):
    serializer_class = PayoutSerializer

    def perform_create(self, serializer):
        try:
            serializer.save()
        except IntegrityError:
            existing = Payout.objects.filter(merchant=self.request.user, livemode=self.request.auth.livemode,
                                             reference_id=serializer.validated_data["reference_id"]).first()
            if existing is None:
                raise
            raise ApiError(409, "duplicate_reference_id", "A payout with this referenceId exists.",
                           [{"param": "referenceId", "code": "duplicate_reference_id",
                             "message": "A payout with this referenceId exists.",
                             "existingId": str(existing.id)}]) from None
