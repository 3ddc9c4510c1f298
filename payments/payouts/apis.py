"""The payout API (SPEC §4): thin views translating HTTP to one service or selector call."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.audit import audit_build, audit_record
from accounts.models import AccountEvent
from core.api import (
    ApiView,
    StrictCharField,
    StrictSerializer,
    paginate,
    path_uuid,
    reject_unknown_params,
)
from core.errors import validation_error
from core.schema import CURSOR_PARAMETER, LIMIT_PARAMETER, timestamp_parameter
from integrations.idempotency import idempotent
from payments import fields
from payments.api_support import EmptyRequest, TestModeOnly, choice_param, datetime_param, reference_id_param
from payments.models import PayoutStatus
from payments.payouts import schema as payout_schema
from payments.payouts import selectors as payout_selectors
from payments.payouts import services as payouts
from payments.payouts.serializers import payout_serialize
from payments.payouts.validation import payout_request_validate


# --- Payouts ---------------------------------------------------------------------------------------------------------
class PayoutsApi(ApiView):
    @extend_schema(operation_id="payout_create", summary="Send a Pix payout from the available balance",
                   request=payout_schema.PayoutRequest, responses={201: payout_schema.Payout})
    @idempotent
    def post(self, request: Request) -> Response:
        data = payout_request_validate(request.data, merchant=request.auth.merchant)
        _, body = payouts.payout_create_answered(
            merchant=request.auth.merchant, livemode=request.auth.livemode, data=data,
            audit=lambda made: audit_build(request, merchant=request.auth.merchant, obj_type="payout",
                                           action=AccountEvent.Action.PAYOUT_CREATED, obj_id=str(made.pk),
                                           actor_key=request.auth.public_key,
                                           after={"amount": made.amount, "fee": made.fee}))
        return Response(body, status=201)

    @extend_schema(
        operation_id="payout_list", summary="List payouts, newest first",
        parameters=[
            OpenApiParameter("status", str, enum=PayoutStatus.values),
            OpenApiParameter("referenceId", {"type": "string", "pattern": fields.REFERENCE_ID_PATTERN}),
            timestamp_parameter("createdFrom", "inclusive."),
            timestamp_parameter("createdTo", "exclusive."),
            LIMIT_PARAMETER,
            CURSOR_PARAMETER,
        ],
        responses=payout_schema.PayoutList,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed={"status", "referenceId", "createdFrom", "createdTo"})
        problems: list = []
        status = choice_param(params, "status", PayoutStatus.values, problems)
        reference_id = reference_id_param(params, problems)
        created_from = datetime_param(params, "createdFrom", problems)
        created_to = datetime_param(params, "createdTo", problems)
        if problems:
            raise validation_error(problems)
        items = payout_selectors.payout_rows(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                             status=status,
                                      reference_id=reference_id, created_from=created_from,
                                      created_to=created_to)
        return Response(paginate(items, params=params, serialize=payout_serialize).as_body())


class PayoutDetailApi(ApiView):
    @extend_schema(operation_id="payout_retrieve", summary="One payout", responses=payout_schema.Payout)
    def get(self, request: Request, payout_id: str) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        payout = payout_selectors.payout_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                      payout_id=path_uuid(payout_id, "payout"))
        return Response(payout_serialize(payout))


class PayoutCancelApi(ApiView):
    @extend_schema(operation_id="payout_cancel", summary="Cancel a PENDING payout (before the worker sends it)",
                   request=None, responses=payout_schema.Payout)
    @idempotent
    def post(self, request: Request, payout_id: str) -> Response:
        EmptyRequest.validated(request.data)
        payout = payouts.payout_cancel(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                       payout_id=path_uuid(payout_id, "payout"))
        audit_record(request, merchant=request.auth.merchant, action=AccountEvent.Action.PAYOUT_CANCELED,
                     obj_type="payout", obj_id=str(payout.pk), actor_key=request.auth.public_key,
                     after={"status": payout.status})
        return Response(payout_serialize(payout))


class SandboxPayoutSimulateApi(ApiView):
    class PayoutSimulateRequest(StrictSerializer):
        action = StrictCharField(help_text="complete, fail or return")

        def validate_action(self, value: str) -> str:
            if value not in ("complete", "fail", "return"):
                raise ValidationError("Must be one of complete, fail, return.", code="invalid_choice")
            return value

    @extend_schema(operation_id="sandbox_payout_simulate", summary="Test mode: complete, fail or return a payout",
                   request=payout_schema.PayoutSimulation, responses=payout_schema.Payout)
    @idempotent
    def post(self, request: Request, payout_id: str) -> Response:
        if request.auth.livemode:
            raise TestModeOnly()
        payout_id = path_uuid(payout_id, "payout")
        data = self.PayoutSimulateRequest.validated(request.data)
        payout = payouts.payout_simulate(merchant=request.auth.merchant, payout_id=payout_id, action=data["action"])
        return Response(payout_serialize(payout))
