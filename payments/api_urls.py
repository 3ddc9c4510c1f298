"""The payments API: charges, refunds, payouts, balance and the sandbox controls (SPEC §3-§5, §7)."""

from django.urls import path

from payments.ledger.apis import BalanceApi, BalanceTransactionsApi
from payments.payins.apis import (
    PayinCancelApi,
    PayinDetailApi,
    PayinRefundsApi,
    PayinsApi,
    SandboxPayinSimulateApi,
)
from payments.payouts.apis import PayoutCancelApi, PayoutDetailApi, PayoutsApi, SandboxPayoutSimulateApi

urlpatterns = [
    path("balance", BalanceApi.as_view(), name="balance"),
    path("balance/transactions", BalanceTransactionsApi.as_view(), name="balance-transactions"),
    path("payin", PayinsApi.as_view(), name="payins"),
    path("payin/<str:payin_id>", PayinDetailApi.as_view(), name="payin"),
    path("payin/<str:payin_id>/cancel", PayinCancelApi.as_view(), name="payin-cancel"),
    path("payin/<str:payin_id>/refunds", PayinRefundsApi.as_view(), name="payin-refunds"),
    path("sandbox/payin/<str:payin_id>/simulate", SandboxPayinSimulateApi.as_view(), name="sandbox-payin-simulate"),
    path("payout", PayoutsApi.as_view(), name="payouts"),
    path("payout/<str:payout_id>", PayoutDetailApi.as_view(), name="payout"),
    path("payout/<str:payout_id>/cancel", PayoutCancelApi.as_view(), name="payout-cancel"),
    path("sandbox/payout/<str:payout_id>/simulate", SandboxPayoutSimulateApi.as_view(),
         name="sandbox-payout-simulate"),
]
