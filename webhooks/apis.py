from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ApiView, paginate, path_uuid, reject_unknown_params
from core.errors import ValidationFailed
from core.schema import CURSOR_PARAMETER, LIMIT_PARAMETER
from webhooks.models import EventType
from webhooks.selectors import event_get, event_list


class EventDataSerializer(serializers.Serializer):
    object = serializers.DictField(help_text="The charge, payout or refund as its GET endpoint returns it.")
    previousStatus = serializers.CharField(allow_null=True)


class EventSerializer(serializers.Serializer):
    """Documentation of the envelope; events are stored as the exact envelope that webhooks carry."""

    id = serializers.UUIDField()
    type = serializers.ChoiceField(choices=EventType.values)
    createdAt = serializers.DateTimeField()
    livemode = serializers.BooleanField()
    apiVersion = serializers.CharField()
    data = EventDataSerializer()


class EventListApi(ApiView):
    @extend_schema(
        operation_id="events_list", summary="List events, newest first (kept 30 days)",
        parameters=[
            OpenApiParameter("type", str, enum=EventType.values),
            OpenApiParameter("objectId", {"type": "string", "format": "uuid"},
                             description="Only events about this object (a charge, refund or payout id)."),
            LIMIT_PARAMETER,
            CURSOR_PARAMETER,
        ],
        responses=inline_serializer("EventList", {
            "data": EventSerializer(many=True), "hasMore": serializers.BooleanField(),
            "nextCursor": serializers.CharField(allow_null=True),
        }),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed={"type", "objectId"})
        object_id = params.get("objectId")
        if object_id is not None:
            # Every object's id is a UUID: another value is refused, not looked up (a NUL in it was a 500).
            try:
                object_id = str(uuid.UUID(object_id))
            except ValueError as exc:
                raise ValidationFailed(param="objectId", details=[{
                    "param": "objectId", "code": "invalid_object_id", "message": "objectId must be a UUID."}]) from exc
        events = event_list(merchant=request.auth.merchant, livemode=request.auth.livemode,
                            type=params.get("type"), object_id=object_id)
        return Response(paginate(events, params=params, serialize=lambda e: e.payload).as_body())


class EventDetailApi(ApiView):
    @extend_schema(operation_id="events_retrieve", summary="One event", responses=EventSerializer)
    def get(self, request: Request, event_id: str) -> Response:
        event = event_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                          event_id=path_uuid(event_id, "event"))
        return Response(event.payload)
