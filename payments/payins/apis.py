"""The pay-in and balance API (SPEC §3, §5, §7): thin views translating HTTP to one service or selector call."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.audit import audit_record
from accounts.models import AccountEvent
from accounts.services import merchant_settings_change
from core import dates, readcache
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
from core.schema import CURSOR_PARAMETER, LIMIT_PARAMETER, RAIL_ERRORS, timestamp_parameter
from integrations.idempotency import idempotent
from payments import fields, policy
from payments.api_support import EmptyRequest, TestModeOnly, choice_param, datetime_param, reference_id_param
from payments.models import PayinStatus, PaymentMethod
from payments.payins import refunds
from payments.payins import sandbox as payin_sandbox
from payments.payins import schema as payin_schema
from payments.payins import selectors as payin_selectors
from payments.payins import services as payins
from payments.payins.selectors import CARD_BRANDS
from payments.payins.serializers import payin_serialize, refund_serialize
from payments.payins.validation import payin_request_validate
from payments.unmatched.serializers import unmatched_brief

INSTALLMENTS_AMOUNT = {"type": "integer", "minimum": 100, "maximum": 10_000_000_000}  # as the view reads it


class PayinsApi(ApiView):
    @extend_schema(operation_id="payin_create", summary="Create a charge (PIX, CREDIT_CARD or BOLETO)",
                   request=payin_schema.PayinRequest,
                   responses={201: payin_schema.Payin, 202: payin_schema.Payin, **RAIL_ERRORS})
    @idempotent
    def post(self, request: Request) -> Response:
        data = payin_request_validate(request.data, merchant=request.auth.merchant, livemode=request.auth.livemode,
                                      today=dates.sao_paulo_today())
        _, body = payins.payin_create_answered(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                               data=data)
        # A live card whose rail has not decided yet (ADR 0085): accepted, and a webhook tells the outcome.
        return Response(body, status=202 if body["status"] == PayinStatus.PROCESSING else 201)

    @extend_schema(
        operation_id="payin_list", summary="List charges, newest first",
        parameters=[
            OpenApiParameter("status", str, enum=PayinStatus.values),
            OpenApiParameter("paymentMethod", str, enum=PaymentMethod.values),
            OpenApiParameter("referenceId", {"type": "string", "pattern": fields.REFERENCE_ID_PATTERN}),
            timestamp_parameter("createdFrom", "inclusive."),
            timestamp_parameter("createdTo", "exclusive."),
            LIMIT_PARAMETER,
            CURSOR_PARAMETER,
        ],
        responses=payin_schema.PayinList,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed={"status", "paymentMethod", "referenceId", "createdFrom", "createdTo"})
        problems: list = []
        status = choice_param(params, "status", PayinStatus.values, problems)
        method = choice_param(params, "paymentMethod", PaymentMethod.values, problems)
        reference_id = reference_id_param(params, problems)
        created_from = datetime_param(params, "createdFrom", problems)
        created_to = datetime_param(params, "createdTo", problems)
        if problems:
            raise validation_error(problems)
        payins = payin_selectors.payin_rows(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                            status=status, payment_method=method, reference_id=reference_id,
                                            created_from=created_from, created_to=created_to)
        return Response(paginate(payins, params=params, serialize=payin_serialize).as_body())


class PayinInstallmentsApi(ApiView):
    """The installments a card of `brand` can pay `amount` in, as the rail offers them (Efí's table in live mode):
    for a merchant's own checkout, the same table the hosted card page shows."""

    @extend_schema(operation_id="payin_installments", summary="Installment options for a card charge",
                   parameters=[OpenApiParameter("amount", INSTALLMENTS_AMOUNT, required=True,
                                                description="Cents, at least 100."),
                               OpenApiParameter("brand", str, required=True, enum=list(CARD_BRANDS),
                                                description="The card's brand, as Efí's library tells it.")],
                   responses={200: payin_schema.Installments, **RAIL_ERRORS})
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed={"amount", "brand"})
        problems: list = []
        amount_text = params.get("amount", "")
        if not (amount_text.isascii() and amount_text.isdigit()
                and INSTALLMENTS_AMOUNT["minimum"] <= int(amount_text) <= INSTALLMENTS_AMOUNT["maximum"]):
            problems.append({"param": "amount", "code": "invalid_amount",
                             "message": "amount must be an integer of cents, at least 100."})
        brand = params.get("brand")
        if brand is None:
            problems.append({"param": "brand", "code": "required", "message": "brand is required."})
        choice_param(params, "brand", list(CARD_BRANDS), problems)
        if problems:
            raise validation_error(problems)
        options = payin_selectors.installments_get(livemode=request.auth.livemode, brand=brand,
                                                   amount=int(amount_text))
        return Response({"amount": int(amount_text), "brand": brand, "data": options})


class BoletoSettingsApi(ApiView):
    """boletoFine and boletoInterest: what a payer pays on top of a live boleto paid after its due date (the bank
    charges it; the charge's `boleto.paidAmount` says what was paid). 0 is none, the default."""

    class SettingsRequest(StrictSerializer):
        boletoFine = StrictIntegerField(required=False, min_value=0, max_value=1000,
                                        help_text="Basis points of the amount, once: 200 is 2%. At most 1000.")
        boletoInterest = StrictIntegerField(required=False, min_value=0, max_value=1000,
                                            help_text="Basis points of the amount a month, charged by the day: 100 "
                                                      "is 1% a month. At most 1000.")

    @extend_schema(operation_id="boleto_settings_retrieve", summary="A late live boleto's fine and interest",
                   responses=payin_schema.BoletoSettings)
    def get(self, request: Request) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        return Response(_boleto_settings(request.auth.merchant))

    @extend_schema(operation_id="boleto_settings_update", summary="Set a late live boleto's fine and interest",
                   request=SettingsRequest, responses=payin_schema.BoletoSettings)
    def patch(self, request: Request) -> Response:
        data = self.SettingsRequest.validated(request.data)
        names = {"boletoFine": "boleto_fine_bps", "boletoInterest": "boleto_interest_bps"}
        merchant_settings_change(merchant=request.auth.merchant, actor=None, actor_key=request.auth.public_key,
                                 changes={names[key]: value for key, value in data.items()})
        return Response(_boleto_settings(request.auth.merchant))


def _boleto_settings(merchant) -> dict:
    return {"boletoFine": policy.boleto_fine_bps(merchant), "boletoInterest": policy.boleto_interest_bps(merchant)}


class PayinDetailApi(ApiView):
    def freshness_key(self, payin_id: str) -> str | None:
        try:
            return readcache.key("payin", uuid.UUID(payin_id))
        except ValueError:
            return None

    @extend_schema(operation_id="payin_retrieve", summary="One charge", responses=payin_schema.Payin)
    def get(self, request: Request, payin_id: str) -> Response:
        reject_unknown_params(request.query_params, allowed=set())
        body = payin_selectors.payin_body_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                        payin_id=path_uuid(payin_id, "charge"),
                                        freshness=getattr(request, "freshness", None))
        return Response(body)


class PayinCancelApi(ApiView):
    @extend_schema(operation_id="payin_cancel", summary="Cancel a PENDING PIX or BOLETO charge", request=None,
                   responses=payin_schema.Payin)
    @idempotent
    def post(self, request: Request, payin_id: str) -> Response:
        EmptyRequest.validated(request.data)
        payin = payins.payin_cancel(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                      payin_id=path_uuid(payin_id, "charge"))
        audit_record(request, merchant=request.auth.merchant, action=AccountEvent.Action.CHARGE_CANCELED,
                     obj_type="payin", obj_id=str(payin.pk), actor_key=request.auth.public_key,
                     after={"status": payin.status})
        return Response(payin_serialize(payin))


class PayinRefundsApi(ApiView):
    class RefundRequest(StrictSerializer):
        amount = StrictIntegerField(required=False, min_value=1,
                                    help_text="Cents; default: what is left to refund.")
        reason = StrictCharField(required=False, max_length=255, allow_blank=True)

    @extend_schema(operation_id="refund_create", summary="Refund part or the rest of a PIX or card charge",
                   request=RefundRequest, responses={201: payin_schema.Refund, **RAIL_ERRORS})
    @idempotent
    def post(self, request: Request, payin_id: str) -> Response:
        payin_id = path_uuid(payin_id, "charge")
        data = self.RefundRequest.validated(request.data)
        refund = refunds.refund_create(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                        payin_id=payin_id, amount=data.get("amount"), reason=data.get("reason", ""))
        audit_record(request, merchant=request.auth.merchant, action=AccountEvent.Action.REFUND_CREATED,
                     obj_type="refund", obj_id=str(refund.pk), actor_key=request.auth.public_key,
                     after={"payin": str(payin_id), "amount": refund.amount, "status": refund.status})
        return Response(refund_serialize(refund), status=201)

    @extend_schema(operation_id="refund_list", summary="The refunds of a charge, newest first",
                   parameters=[LIMIT_PARAMETER, CURSOR_PARAMETER], responses=payin_schema.RefundList)
    def get(self, request: Request, payin_id: str) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed=set())
        payin = payin_selectors.payin_get(merchant=request.auth.merchant, livemode=request.auth.livemode,
                                    payin_id=path_uuid(payin_id, "charge"))
        refunds = payin_selectors.payin_refunds(payin=payin)
        return Response(paginate(refunds, params=params, serialize=refund_serialize).as_body())


class SandboxPayinSimulateApi(ApiView):
    class SimulateRequest(StrictSerializer):
        action = StrictCharField(help_text="pay, expire, chargeback (a card) or med (a Pix)")
        amount = StrictIntegerField(required=False, min_value=1, max_value=10_000_000_000,
                                    help_text="pay: the amount the payer pays (default the charge's)")

        def validate_action(self, value: str) -> str:
            if value not in ("pay", "expire", "chargeback", "med"):
                raise ValidationError("Must be one of pay, expire, chargeback, med.", code="invalid_choice")
            return value

    @extend_schema(operation_id="sandbox_payin_simulate", summary="Test mode: pay, expire or dispute a charge",
                   request=payin_schema.PayinSimulation, responses=payin_schema.PayinSimulated)
    @idempotent
    def post(self, request: Request, payin_id: str) -> Response:
        if request.auth.livemode:
            raise TestModeOnly()
        payin_id = path_uuid(payin_id, "charge")
        data = self.SimulateRequest.validated(request.data)
        simulation = payin_sandbox.payin_simulate(merchant=request.auth.merchant, payin_id=payin_id,
                                                  action=data["action"],
                                                  amount=data.get("amount") if data["action"] == "pay" else None)
        body = payin_serialize(simulation.payin)
        if simulation.unmatched is not None:
            body["unmatchedPayment"] = unmatched_brief(simulation.unmatched)
        return Response(body)
