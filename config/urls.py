from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularRedocView

from accounts.apis import AccountApi
from config.views import HealthApi, baseline
from payments.apis import (
    BalanceApi,
    BalanceTransactionsApi,
    PayinCancelApi,
    PayinDetailApi,
    PayinRefundsApi,
    PayinsApi,
    PayoutCancelApi,
    PayoutDetailApi,
    PayoutsApi,
    SandboxPayinSimulateApi,
    SandboxPayoutSimulateApi,
)
from webhooks.apis import EventDetailApi, EventListApi

admin.site.site_header = "Pagamentos staff"
admin.site.site_title = "Pagamentos staff"

api_patterns = [
    path("account", AccountApi.as_view(), name="account"),
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
    path("events", EventListApi.as_view(), name="events"),
    path("events/<str:event_id>", EventDetailApi.as_view(), name="event"),
]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="dashboard:overview", permanent=False)),
    path("health", HealthApi.as_view(), name="health"),
    path("ping", baseline, name="ping"),  # no database, no auth: liveness, and the benchmark's yardstick
    path("openapi.json", SpectacularJSONAPIView.as_view(authentication_classes=[], permission_classes=[]),
         name="openapi"),
    path("docs", SpectacularRedocView.as_view(url_name="openapi"), name="docs"),
    path("admin/", admin.site.urls),
    path("dashboard/", include(("accounts.urls", "dashboard"))),
    path("", include(("payments.page_urls", "pay"))),
    *api_patterns,
]

