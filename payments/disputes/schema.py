"""OpenAPI documentation of the dispute API: request bodies and the Dispute object that
`payments.disputes.serializers` builds."""

from __future__ import annotations

from rest_framework import serializers

from core.api import StrictSerializer
from payments.models import DisputeKind, DisputeStatus


class DisputeSimulation(StrictSerializer):
    action = serializers.ChoiceField(choices=["win", "lose"])


class DisputeEvidenceData(serializers.Serializer):
    text = serializers.CharField(allow_null=True)
    submittedAt = serializers.DateTimeField(allow_null=True)


class Dispute(serializers.Serializer):
    id = serializers.UUIDField()
    payinId = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=DisputeKind.values)
    reason = serializers.CharField(allow_null=True)
    amount = serializers.IntegerField()
    status = serializers.ChoiceField(choices=DisputeStatus.values)
    evidenceDueBy = serializers.DateTimeField()
    evidence = DisputeEvidenceData()
    createdAt = serializers.DateTimeField()
    closedAt = serializers.DateTimeField(allow_null=True)
    livemode = serializers.BooleanField()


class DisputeList(serializers.Serializer):
    data = Dispute(many=True)
    hasMore = serializers.BooleanField()
    nextCursor = serializers.CharField(allow_null=True)
