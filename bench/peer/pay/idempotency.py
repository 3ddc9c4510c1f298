"""Idempotency-Key on POST: a row per (merchant, mode, key), claimed by its unique constraint before the work and
filled with the response after it (SPEC §1.3)."""

import hashlib
import json

from django.db import IntegrityError, transaction
from rest_framework import serializers
from rest_framework.response import Response

from .errors import ApiError
from .models import IdempotencyKey


class IdempotentPostMixin:
    def post(self, request, *args, **kwargs):
        key = request.headers.get("Idempotency-Key")
        if key is None:
            return super().post(request, *args, **kwargs)
        if not 1 <= len(key) <= 255 or not key.isprintable():
            raise serializers.ValidationError({"Idempotency-Key": ["1 to 255 printable characters."]})
        fingerprint = hashlib.sha256(json.dumps([request.method, request.path, request.data], sort_keys=True,
                                                separators=(",", ":")).encode()).hexdigest()
        scope = {"merchant": request.user, "livemode": request.auth.livemode, "key": key}
        try:
            with transaction.atomic():
                record = IdempotencyKey.objects.create(**scope, method=request.method, path=request.path,
                                                       request_hash=fingerprint)
        except IntegrityError:
            return self._replay(IdempotencyKey.objects.filter(**scope).first(), fingerprint)
        try:
            response = super().post(request, *args, **kwargs)
        except Exception:
            record.delete()  # an error before any effect: the key can be used again
            raise
        record.status_code, record.response_body = response.status_code, response.data
        record.save(update_fields=["status_code", "response_body"])
        return response

    def _replay(self, record, fingerprint):
        if record is None or record.status_code is None:
            raise ApiError(409, "idempotency_key_in_use", "A request with this Idempotency-Key is in progress.")
        if record.request_hash != fingerprint:
            raise ApiError(422, "idempotency_key_reused", "This Idempotency-Key was used with another request.")
        return Response(record.response_body, status=record.status_code, headers={"Idempotent-Replayed": "true"})
