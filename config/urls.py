from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularRedocView

from accounts.apis import AccountApi
from config.views import HealthApi, baseline
from payments.apis import BalanceApi
from webhooks.apis import EventDetailApi, EventListApi

admin.site.site_header = "Pagamentos staff"
admin.site.site_title = "Pagamentos staff"

api_patterns = [
    path("account", AccountApi.as_view(), name="account"),
    path("balance", BalanceApi.as_view(), name="balance"),
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
    *api_patterns,
]

