"""OpenAPI generation: every authenticated operation documents the SPEC's error body for each status it can answer,
and every POST its Idempotency-Key header."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer):
    param = serializers.CharField(allow_null=True)
    code = serializers.CharField()
    message = serializers.CharField()


class ErrorBodySerializer(serializers.Serializer):
    type = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()
    param = serializers.CharField(allow_null=True)
    details = ErrorDetailSerializer(many=True)
    requestId = serializers.CharField()


class ErrorResponseSerializer(serializers.Serializer):
    error = ErrorBodySerializer()

    class Meta:
        ref_name = "Error"


AUTHENTICATED_ERRORS = ("400", "401", "403", "404", "405", "429", "500")
POST_ERRORS = ("409", "413", "415", "422")


class AutoSchema(SpectacularAutoSchema):
    def _authenticated(self) -> bool:
        return bool(getattr(self.view, "authentication_classes", None)) and bool(
            getattr(self.view, "permission_classes", None))

    def _get_response_bodies(self, direction: str = "response") -> dict:
        responses = super()._get_response_bodies(direction)
        statuses = ("400", "404", "405", "500")
        if self._authenticated():
            statuses = AUTHENTICATED_ERRORS + (POST_ERRORS if self.method == "POST" else ())
        for status in statuses:
            responses.setdefault(status, self._get_response_for_code(ErrorResponseSerializer, status))
        return responses

    def get_override_parameters(self) -> list:
        parameters = list(super().get_override_parameters())
        if self.method == "POST" and self._authenticated():
            parameters.append(OpenApiParameter(
                "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
                description="1 to 255 printable characters. Retrying with the same key and body replays the first "
                            "response (with Idempotent-Replayed: true) instead of acting twice. Kept 24 hours."))
        return parameters
