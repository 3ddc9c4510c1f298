"""A test-only business POST, so the Idempotency-Key protocol can be exercised before the real endpoints exist.

`POST /test/notes` (and the same view at `/test/notes-alt` and `/test/notes/<ref>`, for the path rules) validates
{"note": str, "sleep": seconds?, "refuse": bool?}, records an AccountEvent of the calling merchant and answers
201 {"id", "note"}; with "refuse": true it returns (not raises) a 409 error response, before any effect.
`before_create`, when a test sets it, runs inside the handler: the moment the first request is "in progress".
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import transaction
from django.urls import path
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import AccountEvent
from config.urls import urlpatterns as project_urlpatterns
from core.api import ApiView, StrictBooleanField, StrictCharField, StrictSerializer
from core.errors import InvalidState, error_body
from integrations.idempotency import effect_record, idempotent

before_create: Callable[[], None] | None = None


class NoteCreateApi(ApiView):
    class InputSerializer(StrictSerializer):
        note = StrictCharField(max_length=100)
        sleep = serializers.FloatField(required=False, min_value=0, max_value=2)
        refuse = StrictBooleanField(required=False)

    @idempotent
    def post(self, request: Request, ref: str = "") -> Response:
        data = self.InputSerializer.validated(request.data)
        if data.get("refuse"):
            return Response(error_body(InvalidState("Refused on request")), status=409)
        if data.get("sleep"):
            time.sleep(data["sleep"])
        if before_create is not None:
            before_create()
        with transaction.atomic():  # the service's transaction: the note and the record of the request's effect
            event = AccountEvent.objects.create(merchant=request.auth.merchant, action=AccountEvent.Action.SIGNED_UP,
                                                reason=data["note"])
            effect_record()
        return Response({"id": event.id, "note": event.reason}, status=201)


urlpatterns = [
    *project_urlpatterns,
    path("test/notes", NoteCreateApi.as_view(), name="test_notes"),
    path("test/notes-alt", NoteCreateApi.as_view(), name="test_notes_alt"),
    # A path parameter, as in POST /payin/{id}/cancel: the path's length is the client's choice.
    path("test/notes/<str:ref>", NoteCreateApi.as_view(), name="test_notes_ref"),
]
