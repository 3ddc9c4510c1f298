"""OpenAPI documentation of the unmatched-payment endpoints."""

from __future__ import annotations

from rest_framework import serializers

from core.api import StrictSerializer
from payments.models import UnmatchedAction, UnmatchedKind, UnmatchedStatus

MAX_AMOUNT = 10_000_000_000  # the sandbox's plays: what the API takes as one amount


class Payer(serializers.Serializer):
    name = serializers.CharField(allow_null=True)
    document = serializers.CharField(allow_null=True, help_text="CPF or CNPJ, digits only, when the rail said.")


KIND_HELP = ("AMOUNT_MISMATCH: a PENDING charge paid with another amount. DUPLICATE: a second payment of a charge "
             "already paid. AFTER_CANCEL: a payment of a CANCELED (or FAILED) charge. UNKNOWN_REFERENCE: a Pix naming "
             "no charge.")
STATUS_HELP = ("HELD: in `held`, awaiting a decision. ACCEPTED: moved to `available`, less the fee. REFUND_PENDING: "
               "being sent back to the payer. REFUNDED: returned. REFUND_FAILED: the return failed; held again.")


class UnmatchedPayment(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=UnmatchedKind.values, help_text=KIND_HELP)
    status = serializers.ChoiceField(choices=UnmatchedStatus.values, help_text=STATUS_HELP)
    payinId = serializers.UUIDField(allow_null=True, help_text="The charge it named; null for UNKNOWN_REFERENCE.")
    amount = serializers.IntegerField()
    fee = serializers.IntegerField(help_text="The method's fee, taken when it is accepted (0 before).")
    currency = serializers.CharField()
    payer = Payer(help_text="Who paid, as the rail said.")
    endToEndId = serializers.CharField(help_text="The rail's id of the money that arrived (the Pix end-to-end id).")
    failureCode = serializers.CharField(allow_null=True)
    livemode = serializers.BooleanField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    resolvedAt = serializers.DateTimeField(allow_null=True, help_text="When it was ACCEPTED or REFUNDED; null before.")


class UnmatchedPaymentBrief(serializers.Serializer):
    """An unmatched payment as another answer names it (a sandbox payment that settled no charge)."""
    id = serializers.UUIDField(help_text="The unmatched payment's id: GET /unmatched-payments/{id} answers it whole.")
    kind = serializers.ChoiceField(choices=UnmatchedKind.values, help_text=KIND_HELP)
    amount = serializers.IntegerField(help_text="Cents: what the payer paid.")
    status = serializers.ChoiceField(choices=UnmatchedStatus.values, help_text=(
        "Where your policy for its kind left it: HELD, ACCEPTED or REFUND_PENDING."))


class UnmatchedPaymentList(serializers.Serializer):
    data = UnmatchedPayment(many=True)
    hasMore = serializers.BooleanField()
    nextCursor = serializers.CharField(allow_null=True)


_ACTION = {"refund": "send it back to the payer at once (Pix only; a boleto is held)", "accept": "move it to "
           "available at once, less the fee", "hold": "keep it in held for a decision"}
_ACTIONS_HELP = "; ".join(f"{action}: {meaning}" for action, meaning in _ACTION.items())


def _policy_field(kind: str, *, required: bool) -> serializers.ChoiceField:
    return serializers.ChoiceField(choices=UnmatchedAction.choices, required=required,
                                   help_text=f"What happens to a {kind} payment when it arrives ({_ACTIONS_HELP}).")


class UnmatchedPolicy(serializers.Serializer):
    AMOUNT_MISMATCH = _policy_field("AMOUNT_MISMATCH", required=True)
    DUPLICATE = _policy_field("DUPLICATE", required=True)
    AFTER_CANCEL = _policy_field("AFTER_CANCEL", required=True)
    UNKNOWN_REFERENCE = _policy_field("UNKNOWN_REFERENCE", required=True)


class UnmatchedPolicyUpdate(StrictSerializer):
    AMOUNT_MISMATCH = _policy_field("AMOUNT_MISMATCH", required=False)
    DUPLICATE = _policy_field("DUPLICATE", required=False)
    AFTER_CANCEL = _policy_field("AFTER_CANCEL", required=False)
    UNKNOWN_REFERENCE = _policy_field("UNKNOWN_REFERENCE", required=False)


class PixReceive(StrictSerializer):
    amount = serializers.IntegerField(min_value=1, max_value=MAX_AMOUNT)
    txid = serializers.CharField(required=False, max_length=35,
                                 help_text="A txid the Pix names (none of ours: it matches nothing).")
