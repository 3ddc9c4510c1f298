"""OpenAPI documentation of the balance and statement endpoints."""

from __future__ import annotations

from rest_framework import serializers

from payments.models import LineType


class Balance(serializers.Serializer):
    available = serializers.IntegerField()
    pending = serializers.IntegerField()
    held = serializers.IntegerField(help_text="Unmatched payments awaiting a decision and open disputes.")
    currency = serializers.CharField()
    livemode = serializers.BooleanField()


class StatementLine(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.ChoiceField(choices=LineType.values)
    amount = serializers.IntegerField(help_text="Signed cents.")
    balanceAfter = serializers.IntegerField()
    balance = serializers.ChoiceField(choices=["available", "pending", "held"],
                                      help_text="Which balance the line moves.")
    objectType = serializers.CharField()
    objectId = serializers.CharField()
    referenceId = serializers.CharField(allow_null=True)
    description = serializers.CharField()
    createdAt = serializers.DateTimeField()


class StatementList(serializers.Serializer):
    data = StatementLine(many=True)
    hasMore = serializers.BooleanField()
    nextCursor = serializers.CharField(allow_null=True)
