"""The pay-in and balance API (SPEC §3, §5, §7): thin views translating HTTP to one service or selector call."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from config import readcache
from config.api import (
    ApiView,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    paginate,
    path_uuid,
    reject_unknown_params,
)
from config.errors import DomainError, validation_error
from config.schema import CURSOR_PARAMETER, LIMIT_PARAMETER, RAIL_ERRORS, timestamp_parameter
from payments import payouts, sandbox, schema, selectors, services
from payments.ledger import balance_get
from payments.models import PayinStatus, PaymentMethod, PayoutStatus
from payments.payout_validation import payout_request_validate
from payments.serializers import payin_serialize, payout_serialize, refund_serialize, statement_line_serialize
from payments.validation import _REFERENCE_ID as REFERENCE_ID
from payments.validation import payin_request_validate


class EmptyRequest(StrictSerializer):
    """A body-less action: an empty body or `{}`; any field is unknown (a typo must not pass silently)."""


class TestModeOnly(DomainError):
    status_code = 403
    type = "permission_error"
    code = "test_mode_only"
    message = "Sandbox controls work with test keys only"


def _datetime_param(params, name: str, problems: list) -> datetime | None:
    value = params.get(name)
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.upper())  # RFC 3339 allows a lowercase t and z
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        problems.append({"param": name, "code": "invalid_datetime",
                         "message": f"{name} must be an ISO 8601 timestamp with a time zone, e.g. "
                                    "2026-11-20T00:00:00Z."})
        return None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        # A valid timestamp whose UTC time is outside the years 1 to 9999 (9999-12-31T23:59:59-03:00): no row can be on
        # the other side of the nearest representable instant, so that instant selects exactly the same rows.
        return datetime.min.replace(tzinfo=UTC) if parsed.year == 1 else datetime.max.replace(tzinfo=UTC)


def _reference_id_param(params, problems: list) -> str | None:
    # Only a referenceId that a charge or payout can have: anything else (an empty or NUL-carrying value) is refused
    # like any unknown filter value, not sent to the database.
    value = params.get("referenceId")
    if value is not None and not REFERENCE_ID.fullmatch(value):
        problems.append({"param": "referenceId", "code": "invalid_reference_id", "message": "referenceId must be 1 to "
                         "64 characters of letters, digits, '.', '_', ':' and '-'."})
    return value


def _choice_param(params, name: str, choices: list[str], problems: list) -> str | None:
    value = params.get(name)
    if value is not None and value not in choices:
        problems.append({"param": name, "code": "invalid_choice",
                         "message": f"{name} must be one of {', '.join(choices)}."})
    return value


class PayinsApi(ApiView):
    @extend_schema(operation_id="payin_create", summary="Create a charge (PIX, CREDIT_CARD or BOLETO)",
                   request=schema.PayinRequest, responses={201: schema.Payin, **RAIL_ERRORS})
    def post(self, request: Request) -> Response:
        data = payin_request_validate(request.data, merchant=request.auth.merchant, livemode=request.auth.livemode,
                                      today=services.sao_paulo_today())
        payin = services.payin_create(merchant=request.auth.merchant, livemode=request.auth.livemode, data=data)
        return Response(payin_serialize(payin), status=201)

    @extend_schema(
        operation_id="payin_list", summary="List charges, newest first",
        parameters=[
            OpenApiParameter("status", str, enum=PayinStatus.values),
            OpenApiParameter("paymentMethod", str, enum=PaymentMethod.values),
            OpenApiParameter("referenceId", {"type": "string", "pattern": schema.REFERENCE_ID_PATTERN}),
            timestamp_parameter("createdFrom", "inclusive."),
            timestamp_parameter("createdTo", "exclusive."),
            LIMIT_PARAMETER,
            CURSOR_PARAMETER,
        ],
        responses=schema.PayinList,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed={"status", "paymentMethod", "referenceId", "createdFrom", "createdTo"})
        problems: list = []
        status = _choice_param(params, "status", PayinStatus.values, problems)
        method = _choice_param(params, "paymentMethod", PaymentMethod.values, problems)
        reference_id = _reference_id_param(params, problems)
        created_from = _datetime_param(params, "createdFrom", problems)
        created_to = _datetime_param(params, "createdTo", problems)
        if problems:
            raise validation_error(problems)
        payins = selectors.payin_list(merchant=request.auth.merchant, livemode=request.auth.livemode, status=status,
                                      payment_method=method, reference_id=reference_id,
                                      created_from=created_from, created_to=created_to)
        return Response(paginate(payins, params=params, serialize=payin_serialize).as_body())


class PayinDetailApi(ApiView):
    def freshness_key(self, payin_id: str) -> str | None:
        try:
            return readcache.key("payin", uuid.UUID(payin_id))
        except ValueError:
            return None

    @extend_schema(operation_id="payin_retrieve", summary="One charge", responses=schema.Payin)
    def get(self, request: Request, payin_id: str) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        body = selectors.payin_body_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                        payin_id=path_uuid(payin_id, "charge"),
                                        freshness=getattr(request, "freshness", None))
        return Response(body)


class PayinCancelApi(ApiView):
    @extend_schema(operation_id="payin_cancel", summary="Cancel a PENDING PIX or BOLETO charge", request=None,
                   responses=schema.Payin)
    def post(self, request: Request, payin_id: str) -> Response:
        EmptyRequest.validated(request.data)
        payin = services.payin_cancel(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                      payin_id=path_uuid(payin_id, "charge"))
        return Response(payin_serialize(payin))


class PayinRefundsApi(ApiView):
    class RefundRequest(StrictSerializer):
        amount = StrictIntegerField(required=False, min_value=1,
                                    help_text="Cents; default: what is left to refund.")
        reason = StrictCharField(required=False, max_length=255, allow_blank=True)

    @extend_schema(operation_id="refund_create", summary="Refund part or the rest of a PIX or card charge",
                   request=RefundRequest, responses={201: schema.Refund, **RAIL_ERRORS})
    def post(self, request: Request, payin_id: str) -> Response:
        payin_id = path_uuid(payin_id, "charge")
        data = self.RefundRequest.validated(request.data)
        refund = services.refund_create(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                        payin_id=payin_id, amount=data.get("amount"), reason=data.get("reason", ""))
        return Response(refund_serialize(refund), status=201)

    @extend_schema(operation_id="refund_list", summary="The refunds of a charge, oldest first",
                   responses=schema.RefundList)
    def get(self, request: Request, payin_id: str) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        payin = selectors.payin_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                    payin_id=path_uuid(payin_id, "charge"))
        refunds = selectors.refund_list(payin=payin)
        return Response({"data": [refund_serialize(refund) for refund in refunds]})


class SandboxPayinSimulateApi(ApiView):
    class SimulateRequest(StrictSerializer):
        action = StrictCharField(help_text="pay, expire or chargeback")

        def validate_action(self, value: str) -> str:
            if value not in ("pay", "expire", "chargeback"):
                raise ValidationError("Must be one of pay, expire, chargeback.", code="invalid_choice")
            return value

    @extend_schema(operation_id="sandbox_payin_simulate", summary="Test mode: pay, expire or charge back a charge",
                   request=schema.PayinSimulation, responses=schema.Payin)
    def post(self, request: Request, payin_id: str) -> Response:
        if request.auth.livemode:
            raise TestModeOnly()
        payin_id = path_uuid(payin_id, "charge")
        data = self.SimulateRequest.validated(request.data)
        payin = sandbox.payin_simulate(merchant=request.auth.merchant, payin_id=payin_id, action=data["action"])
        return Response(payin_serialize(payin))


class BalanceApi(ApiView):
    @extend_schema(
        operation_id="balance_retrieve",
        summary="The balance of the calling key pair's merchant and mode",
        description="`available` can be paid out now (payouts in flight are already out of it); `pending` is card "
                    "money not yet settled. Integer cents, BRL.",
        responses=schema.Balance,
    )
    def get(self, request: Request) -> Response:
        balance = balance_get(merchant=request.auth.merchant, livemode=request.auth.livemode)
        return Response({"available": balance.available, "pending": balance.pending, "currency": "BRL",
                         "livemode": request.auth.livemode})


class BalanceTransactionsApi(ApiView):
    @extend_schema(
        operation_id="balance_transactions_list", summary="The statement: every movement of the balance, newest first",
        parameters=[LIMIT_PARAMETER, CURSOR_PARAMETER],
        responses=schema.StatementList,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed=set())
        lines = selectors.statement_lines(merchant=request.auth.merchant, livemode=request.auth.livemode)
        return Response(paginate(lines, params=params, serialize=statement_line_serialize).as_body())



# --- Payouts ---------------------------------------------------------------------------------------------------------
class PayoutsApi(ApiView):
    @extend_schema(operation_id="payout_create", summary="Send a Pix payout from the available balance",
                   request=schema.PayoutRequest, responses={201: schema.Payout})
    def post(self, request: Request) -> Response:
        data = payout_request_validate(request.data, merchant=request.auth.merchant)
        payout = payouts.payout_create(merchant=request.auth.merchant, livemode=request.auth.livemode, data=data)
        return Response(payout_serialize(payout), status=201)

    @extend_schema(
        operation_id="payout_list", summary="List payouts, newest first",
        parameters=[
            OpenApiParameter("status", str, enum=PayoutStatus.values),
            OpenApiParameter("referenceId", {"type": "string", "pattern": schema.REFERENCE_ID_PATTERN}),
            timestamp_parameter("createdFrom", "inclusive."),
            timestamp_parameter("createdTo", "exclusive."),
            LIMIT_PARAMETER,
            CURSOR_PARAMETER,
        ],
        responses=schema.PayoutList,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed={"status", "referenceId", "createdFrom", "createdTo"})
        problems: list = []
        status = _choice_param(params, "status", PayoutStatus.values, problems)
        reference_id = _reference_id_param(params, problems)
        created_from = _datetime_param(params, "createdFrom", problems)
        created_to = _datetime_param(params, "createdTo", problems)
        if problems:
            raise validation_error(problems)
        items = selectors.payout_list(merchant=request.auth.merchant, livemode=request.auth.livemode, status=status,
                                      reference_id=reference_id, created_from=created_from,
                                      created_to=created_to)
        return Response(paginate(items, params=params, serialize=payout_serialize).as_body())


class PayoutDetailApi(ApiView):
    @extend_schema(operation_id="payout_retrieve", summary="One payout", responses=schema.Payout)
    def get(self, request: Request, payout_id: str) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        payout = selectors.payout_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                      payout_id=path_uuid(payout_id, "payout"))
        return Response(payout_serialize(payout))


class PayoutCancelApi(ApiView):
    @extend_schema(operation_id="payout_cancel", summary="Cancel a PENDING payout (before the worker sends it)",
                   request=None, responses=schema.Payout)
    def post(self, request: Request, payout_id: str) -> Response:
        EmptyRequest.validated(request.data)
        payout = payouts.payout_cancel(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                       payout_id=path_uuid(payout_id, "payout"))
        return Response(payout_serialize(payout))


class SandboxPayoutSimulateApi(ApiView):
    class PayoutSimulateRequest(StrictSerializer):
        action = StrictCharField(help_text="complete, fail or return")

        def validate_action(self, value: str) -> str:
            if value not in ("complete", "fail", "return"):
                raise ValidationError("Must be one of complete, fail, return.", code="invalid_choice")
            return value

    @extend_schema(operation_id="sandbox_payout_simulate", summary="Test mode: complete, fail or return a payout",
                   request=schema.PayoutSimulation, responses=schema.Payout)
    def post(self, request: Request, payout_id: str) -> Response:
        if request.auth.livemode:
            raise TestModeOnly()
        payout_id = path_uuid(payout_id, "payout")
        data = self.PayoutSimulateRequest.validated(request.data)
        payout = payouts.payout_simulate(merchant=request.auth.merchant, payout_id=payout_id, action=data["action"])
        return Response(payout_serialize(payout))
