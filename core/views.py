"""Operational endpoints: health, the bare baseline view used by the benchmark, and the JSON 404 for the API."""

from __future__ import annotations

import logging

from celery import current_app as celery_app
from django.db import connection
from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import ServiceUnavailable, error_body

logger = logging.getLogger(__name__)


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        logger.exception("health.database_down")
        return False


def _broker_ok() -> bool:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return True
    except Exception:
        logger.exception("health.broker_down")
        return False


class HealthApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="health",
        summary="Liveness of the service and its database and broker",
        responses={200: inline_serializer("Health", {
            "status": serializers.CharField(), "database": serializers.CharField(), "broker": serializers.CharField()
        })},
    )
    def get(self, request: Request) -> Response:
        checks = {"database": _database_ok(), "broker": _broker_ok()}
        if all(checks.values()):
            return Response({"status": "ok", "database": "ok", "broker": "ok"})
        down = [name for name, ok in checks.items() if not ok]
        error = ServiceUnavailable(
            f"Unavailable: {', '.join(down)}",
            details=[{"param": name, "code": "unavailable", "message": f"The {name} does not answer."}
                     for name in down],
        )
        return Response(error_body(error), status=503)


def baseline(request: HttpRequest) -> JsonResponse:
    """A bare Django JSON view with no authentication: the benchmark's yardstick for the API's own overhead."""
    return JsonResponse({"status": "ok"})
