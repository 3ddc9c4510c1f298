"""Test-only endpoints that exercise the API conventions before the business endpoints exist."""

from django.http import HttpRequest
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

from config.urls import urlpatterns as project_urlpatterns
from core.api import ApiView, StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer
from integrations.idempotency import idempotent


class ItemSerializer(StrictSerializer):
    title = StrictCharField(max_length=10)
    quantity = StrictIntegerField(min_value=1)


class CustomerSerializer(StrictSerializer):
    name = StrictCharField(min_length=2)


class OrderSerializer(StrictSerializer):
    amount = StrictIntegerField(min_value=100)
    isPhysicalProduct = StrictBooleanField()
    customer = CustomerSerializer()
    items = ItemSerializer(many=True)
    note = StrictCharField(required=False)


class OrderApi(ApiView):
    @idempotent
    def post(self, request: Request) -> Response:
        data = OrderSerializer.validated(request.data)
        return Response({"amount": data["amount"], "items": len(data["items"])}, status=201)


class CrashApi(ApiView):
    def get(self, request: Request) -> Response:
        raise RuntimeError("secret internals: sk_test_should_never_show")


def plain_crash(request: HttpRequest):
    raise RuntimeError("plain view internals")


urlpatterns = [
    path("_test/orders", OrderApi.as_view()),
    path("_test/crash", CrashApi.as_view()),
    path("_test/plain-crash", plain_crash),
    *project_urlpatterns,
]
