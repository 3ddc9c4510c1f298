"""The balance API (SPEC §5): the balance and its statement lines."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import (
    ApiView,
    paginate,
    reject_unknown_params,
)
from core.schema import CURSOR_PARAMETER, LIMIT_PARAMETER
from payments.ledger import schema as ledger_schema
from payments.ledger import selectors as ledger_selectors
from payments.ledger.selectors import balance_get
from payments.ledger.serializers import statement_line_serialize


class BalanceApi(ApiView):
    @extend_schema(
        operation_id="balance_retrieve",
        summary="The balance of the calling key pair's merchant and mode",
        description="`available` can be paid out now (payouts in flight are already out of it); `pending` is card "
                    "money not yet settled; `held` is money that reached us without settling a charge (unmatched "
                    "payments awaiting a decision) and the amount of open disputes. Integer cents, BRL.",
        responses=ledger_schema.Balance,
    )
    def get(self, request: Request) -> Response:
        balance = balance_get(merchant=request.auth.merchant, livemode=request.auth.livemode)
        return Response({"available": balance.available, "pending": balance.pending, "held": balance.held,
                         "currency": "BRL", "livemode": request.auth.livemode})


class BalanceTransactionsApi(ApiView):
    @extend_schema(
        operation_id="balance_transactions_list", summary="The statement: every movement of the balance, newest first",
        parameters=[LIMIT_PARAMETER, CURSOR_PARAMETER],
        responses=ledger_schema.StatementList,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        reject_unknown_params(params, allowed=set())
        lines = ledger_selectors.statement_lines(merchant=request.auth.merchant, livemode=request.auth.livemode)
        return Response(paginate(lines, params=params, serialize=statement_line_serialize).as_body())
