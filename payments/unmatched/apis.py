"""The unmatched-payments API (issue 14): list, one, accept, refund, the merchant's policy, and the sandbox's Pix
naming no charge. Thin views translating HTTP to one service or selector call."""

from __future__ import annotations

import functools

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.audit import audit_record
from accounts.models import AccountEvent
from core.api import (
    ApiView,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    paginate,
    path_uuid,
    reject_unknown_params,
)
from core.errors import validation_error
from core.schema import CURSOR_PARAMETER, LIMIT_PARAMETER
from integrations.idempotency import idempotent
from payments.api_support import TestModeOnly, choice_param
from payments.models import UnmatchedAction, UnmatchedKind, UnmatchedStatus
from payments.unmatched import sandbox, selectors, services
from payments.unmatched import schema as unmatched_schema
from payments.unmatched.serializers import unmatched_serialize


class UnmatchedPaymentsApi(ApiView):
    @extend_schema(
        operation_id="unmatched_payment_list", summary="List unmatched payments, newest first",
        parameters=[OpenApiParameter("status", str, enum=UnmatchedStatus.values),
                    OpenApiParameter("kind", str, enum=UnmatchedKind.values), LIMIT_PARAMETER, CURSOR_PARAMETER],
        responses=unmatched_schema.UnmatchedPaymentList)
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed={"status", "kind"})
        problems: list = []
        status = choice_param(params, "status", UnmatchedStatus.values, problems)
        kind = choice_param(params, "kind", UnmatchedKind.values, problems)
        if problems:
            raise validation_error(problems)
        items = selectors.unmatched_list(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                         status=status, kind=kind)
        return Response(paginate(items, params=params, serialize=unmatched_serialize).as_body())


class UnmatchedPaymentDetailApi(ApiView):
    @extend_schema(operation_id="unmatched_payment_retrieve", summary="One unmatched payment",
                   responses=unmatched_schema.UnmatchedPayment)
    def get(self, request: Request, unmatched_id: str) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        unmatched = selectors.unmatched_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                            unmatched_id=path_uuid(unmatched_id, "unmatched payment"))
        return Response(unmatched_serialize(unmatched))


class UnmatchedPaymentAcceptApi(ApiView):
    @extend_schema(operation_id="unmatched_payment_accept", request=None, responses=unmatched_schema.UnmatchedPayment,
                   summary="Keep an unmatched payment: its amount moves from held to available, less the fee")
    @idempotent
    def post(self, request: Request, unmatched_id: str) -> Response:
        unmatched = services.unmatched_accept(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                              unmatched_id=path_uuid(unmatched_id, "unmatched payment"))
        _audit(request, AccountEvent.Action.UNMATCHED_ACCEPTED, unmatched)
        return Response(unmatched_serialize(unmatched))


class UnmatchedPaymentRefundApi(ApiView):
    @extend_schema(operation_id="unmatched_payment_refund", request=None, responses=unmatched_schema.UnmatchedPayment,
                   summary="Send an unmatched payment back to the payer (a Pix devolução)")
    @idempotent
    def post(self, request: Request, unmatched_id: str) -> Response:
        unmatched = services.unmatched_refund(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                              unmatched_id=path_uuid(unmatched_id, "unmatched payment"))
        _audit(request, AccountEvent.Action.UNMATCHED_REFUNDED, unmatched)
        return Response(unmatched_serialize(unmatched))


def _audit(request: Request, action: str, unmatched) -> None:
    """A money decision made through the API, attributed to the key pair that made it."""
    audit_record(request, merchant=request.auth.merchant, action=action, obj_type="unmatched_payment",
                 obj_id=str(unmatched.pk), after={"status": unmatched.status}, actor_key=request.auth.public_key)


class PolicyRequest(StrictSerializer):
    AMOUNT_MISMATCH = StrictCharField(required=False)
    DUPLICATE = StrictCharField(required=False)
    AFTER_CANCEL = StrictCharField(required=False)
    UNKNOWN_REFERENCE = StrictCharField(required=False)

    def validate(self, attrs: dict) -> dict:
        for kind, action in attrs.items():
            if action not in UnmatchedAction.values:
                raise ValidationError({kind: [serializers.ErrorDetail(
                    f"Must be one of {', '.join(UnmatchedAction.values)}.", code="invalid_choice")]})
        return attrs


class UnmatchedPolicyApi(ApiView):
    @extend_schema(operation_id="unmatched_policy_retrieve", responses=unmatched_schema.UnmatchedPolicy,
                   summary="What happens to each kind of unmatched payment when it arrives")
    def get(self, request: Request) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        return Response(selectors.unmatched_policy(merchant=request.auth.merchant))

    @extend_schema(operation_id="unmatched_policy_update", request=unmatched_schema.UnmatchedPolicyUpdate,
                   responses=unmatched_schema.UnmatchedPolicy,
                   summary="Choose refund, accept or hold for some kinds of unmatched payment")
    def patch(self, request: Request) -> Response:
        changes = PolicyRequest.validated(request.data)
        return Response(services.unmatched_policy_update(
            merchant=request.auth.merchant, changes=changes, audit=functools.partial(
                audit_record, request, merchant=request.auth.merchant, obj_type="unmatched_policy",
                action=AccountEvent.Action.UNMATCHED_POLICY_CHANGED, actor_key=request.auth.public_key)))


class SandboxPixReceiveApi(ApiView):
    class ReceiveRequest(StrictSerializer):
        amount = StrictIntegerField(min_value=1, max_value=unmatched_schema.MAX_AMOUNT)
        txid = StrictCharField(required=False, max_length=35)

    @extend_schema(operation_id="sandbox_pix_receive", request=unmatched_schema.PixReceive,
                   responses={201: unmatched_schema.UnmatchedPayment},
                   summary="Test mode: a Pix arrives at our key naming no charge of yours")
    @idempotent
    def post(self, request: Request) -> Response:
        if request.auth.livemode:
            raise TestModeOnly()
        data = self.ReceiveRequest.validated(request.data)
        unmatched = sandbox.pix_receive(merchant=request.auth.merchant, amount=data["amount"],
                                        txid=data.get("txid", ""))
        return Response(unmatched_serialize(unmatched), status=201)
