"""The dispute API (issue 14): thin views translating HTTP to one service or selector call."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.audit import audit_record
from accounts.models import AccountEvent
from core.api import ApiView, StrictCharField, StrictSerializer, paginate, path_uuid, reject_unknown_params
from core.errors import NotFound, validation_error
from core.schema import CURSOR_PARAMETER, LIMIT_PARAMETER
from integrations.idempotency import idempotent
from payments.api_support import EmptyRequest, TestModeOnly, choice_param
from payments.disputes import schema as dispute_schema
from payments.disputes import selectors as dispute_selectors
from payments.disputes import services as disputes
from payments.disputes.sandbox import ACTIONS, dispute_simulate
from payments.disputes.serializers import dispute_serialize
from payments.models import DisputeKind, DisputeStatus

EVIDENCE_MAX_LENGTH = 20_000


class DisputesApi(ApiView):
    @extend_schema(
        operation_id="dispute_list", summary="List disputes, newest first",
        parameters=[
            OpenApiParameter("status", str, enum=DisputeStatus.values),
            OpenApiParameter("kind", str, enum=DisputeKind.values),
            OpenApiParameter("payinId", {"type": "string", "format": "uuid"}),
            LIMIT_PARAMETER,
            CURSOR_PARAMETER,
        ],
        responses=dispute_schema.DisputeList,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed={"status", "kind", "payinId"})
        problems: list = []
        status = choice_param(params, "status", DisputeStatus.values, problems)
        kind = choice_param(params, "kind", DisputeKind.values, problems)
        payin_id = params.get("payinId")
        if payin_id is not None:
            try:
                payin_id = path_uuid(payin_id, "charge")
            except NotFound:
                problems.append({"param": "payinId", "code": "invalid_object_id",
                                 "message": "payinId must be a UUID."})
        if problems:
            raise validation_error(problems)
        found = dispute_selectors.dispute_list(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                               status=status, kind=kind, payin_id=payin_id)
        return Response(paginate(found, params=params, serialize=dispute_serialize).as_body())


class DisputeDetailApi(ApiView):
    @extend_schema(operation_id="dispute_retrieve", summary="One dispute", responses=dispute_schema.Dispute)
    def get(self, request: Request, dispute_id: str) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        dispute = dispute_selectors.dispute_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                                dispute_id=path_uuid(dispute_id, "dispute"))
        return Response(dispute_serialize(dispute))


class DisputeEvidenceApi(ApiView):
    # The text's 20,000 characters may be sent as JSON escapes: up to 12 bytes each (an astral character's surrogate
    # pair), 240,012 bytes in all as json.dumps writes it. A body the schema calls valid is never refused for its size.
    max_body_bytes = 256 * 1024

    class DisputeEvidence(StrictSerializer):
        text = StrictCharField(max_length=EVIDENCE_MAX_LENGTH,
                               help_text="Your defence in words (1 to 20000 characters): what was sold, when it was "
                                         "delivered, how the payer agreed.")

    @extend_schema(operation_id="dispute_evidence_submit", summary="Answer an OPEN dispute with evidence",
                   request=DisputeEvidence, responses=dispute_schema.Dispute)
    @idempotent
    def post(self, request: Request, dispute_id: str) -> Response:
        dispute_id = path_uuid(dispute_id, "dispute")
        data = self.DisputeEvidence.validated(request.data)
        dispute = disputes.dispute_evidence_submit(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                                   dispute_id=dispute_id, text=data["text"])
        _audit(request, AccountEvent.Action.DISPUTE_EVIDENCE_SENT, dispute)
        return Response(dispute_serialize(dispute))


class DisputeAcceptApi(ApiView):
    @extend_schema(operation_id="dispute_accept", summary="Accept an OPEN dispute: the payer gets the money",
                   request=None, responses=dispute_schema.Dispute)
    @idempotent
    def post(self, request: Request, dispute_id: str) -> Response:
        dispute_id = path_uuid(dispute_id, "dispute")
        EmptyRequest.validated(request.data)
        dispute = disputes.dispute_accept(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                          dispute_id=dispute_id)
        _audit(request, AccountEvent.Action.DISPUTE_ACCEPTED, dispute)
        return Response(dispute_serialize(dispute))


def _audit(request: Request, action: str, dispute) -> None:
    """A merchant's answer to a dispute made through the API, attributed to the key pair that made it."""
    audit_record(request, merchant=request.auth.merchant, action=action, obj_type="dispute", obj_id=str(dispute.pk),
                 after={"status": dispute.status}, actor_key=request.auth.public_key)


class SandboxDisputeSimulateApi(ApiView):
    class SimulateRequest(StrictSerializer):
        action = StrictCharField(help_text="win or lose")

        def validate_action(self, value: str) -> str:
            if value not in ACTIONS:
                raise ValidationError("Must be one of win, lose.", code="invalid_choice")
            return value

    @extend_schema(operation_id="sandbox_dispute_simulate", summary="Test mode: decide a dispute (win or lose)",
                   request=dispute_schema.DisputeSimulation, responses=dispute_schema.Dispute)
    @idempotent
    def post(self, request: Request, dispute_id: str) -> Response:
        if request.auth.livemode:
            raise TestModeOnly()
        dispute_id = path_uuid(dispute_id, "dispute")
        data = self.SimulateRequest.validated(request.data)
        dispute = dispute_simulate(merchant=request.auth.merchant, dispute_id=dispute_id, action=data["action"])
        return Response(dispute_serialize(dispute))
