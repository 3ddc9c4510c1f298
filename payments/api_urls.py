"""The payments API: charges, refunds, payouts, balance, disputes and the sandbox controls (SPEC §3-§5, §7)."""

from django.urls import path

from payments.disputes.apis import (
    DisputeAcceptApi,
    DisputeDetailApi,
    DisputeEvidenceApi,
    DisputesApi,
    SandboxDisputeSimulateApi,
)
from payments.ledger.apis import BalanceApi, BalanceTransactionsApi
from payments.payins.apis import (
    BoletoSettingsApi,
    PayinCancelApi,
    PayinDetailApi,
    PayinInstallmentsApi,
    PayinRefundsApi,
    PayinsApi,
    SandboxPayinSimulateApi,
)
from payments.payouts.apis import PayoutCancelApi, PayoutDetailApi, PayoutsApi, SandboxPayoutSimulateApi
from payments.unmatched.apis import (
    SandboxPixReceiveApi,
    UnmatchedPaymentAcceptApi,
    UnmatchedPaymentDetailApi,
    UnmatchedPaymentRefundApi,
    UnmatchedPaymentsApi,
    UnmatchedPolicyApi,
)

urlpatterns = [
    path("balance", BalanceApi.as_view(), name="balance"),
    path("balance/transactions", BalanceTransactionsApi.as_view(), name="balance-transactions"),
    path("payin", PayinsApi.as_view(), name="payins"),
    path("payin/installments", PayinInstallmentsApi.as_view(), name="payin-installments"),
    path("payin/boleto-settings", BoletoSettingsApi.as_view(), name="boleto-settings"),
    path("payin/<str:payin_id>", PayinDetailApi.as_view(), name="payin"),
    path("payin/<str:payin_id>/cancel", PayinCancelApi.as_view(), name="payin-cancel"),
    path("payin/<str:payin_id>/refunds", PayinRefundsApi.as_view(), name="payin-refunds"),
    path("sandbox/payin/<str:payin_id>/simulate", SandboxPayinSimulateApi.as_view(), name="sandbox-payin-simulate"),
    path("payout", PayoutsApi.as_view(), name="payouts"),
    path("payout/<str:payout_id>", PayoutDetailApi.as_view(), name="payout"),
    path("payout/<str:payout_id>/cancel", PayoutCancelApi.as_view(), name="payout-cancel"),
    path("sandbox/payout/<str:payout_id>/simulate", SandboxPayoutSimulateApi.as_view(),
         name="sandbox-payout-simulate"),
    path("unmatched-payments", UnmatchedPaymentsApi.as_view(), name="unmatched-payments"),
    path("unmatched-payments/settings", UnmatchedPolicyApi.as_view(), name="unmatched-policy"),
    path("unmatched-payments/<str:unmatched_id>", UnmatchedPaymentDetailApi.as_view(), name="unmatched-payment"),
    path("unmatched-payments/<str:unmatched_id>/accept", UnmatchedPaymentAcceptApi.as_view(),
         name="unmatched-payment-accept"),
    path("unmatched-payments/<str:unmatched_id>/refund", UnmatchedPaymentRefundApi.as_view(),
         name="unmatched-payment-refund"),
    path("sandbox/pix/receive", SandboxPixReceiveApi.as_view(), name="sandbox-pix-receive"),
    path("disputes", DisputesApi.as_view(), name="disputes"),
    path("disputes/<str:dispute_id>", DisputeDetailApi.as_view(), name="dispute"),
    path("disputes/<str:dispute_id>/evidence", DisputeEvidenceApi.as_view(), name="dispute-evidence"),
    path("disputes/<str:dispute_id>/accept", DisputeAcceptApi.as_view(), name="dispute-accept"),
    path("sandbox/disputes/<str:dispute_id>/simulate", SandboxDisputeSimulateApi.as_view(),
         name="sandbox-dispute-simulate"),
]
