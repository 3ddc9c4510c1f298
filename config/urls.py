from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from django.views.i18n import set_language
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularRedocView

from accounts import api_urls as account_api_urls
from accounts import urls as account_urls
from core.metrics import metrics_view
from core.views import HealthApi, baseline
from integrations import urls as integration_urls
from payments import api_urls as payment_api_urls
from payments.dashboard import urls as payment_dashboard_urls
from payments.inbound import urls as rail_urls
from webhooks import api_urls as webhook_api_urls
from webhooks import urls as webhook_urls

admin.site.site_header = "Pagamentos staff"
admin.site.site_title = "Pagamentos staff"

# Each app owns its URLs; this root URLconf only places them. The dashboard is one namespace made of every app's pages.
dashboard_patterns = [
    *payment_dashboard_urls.urlpatterns,
    *account_urls.urlpatterns,
    *integration_urls.urlpatterns,
    *webhook_urls.urlpatterns,
]
api_patterns = [*account_api_urls.urlpatterns, *payment_api_urls.urlpatterns, *webhook_api_urls.urlpatterns]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="dashboard:overview", permanent=False)),
    path("health", HealthApi.as_view(), name="health"),
    path("metrics", metrics_view, name="metrics"),  # Prometheus, with METRICS_TOKEN (core/metrics.py)
    path("ping", baseline, name="ping"),  # no database, no auth: liveness, and the benchmark's yardstick
    # The API before the pages: Django tries patterns in order, and an include that matches no path raises and
    # catches Resolver404, so every API request would pay for the hosted pages' and the rails' includes.
    *api_patterns,
    path("openapi.json", SpectacularJSONAPIView.as_view(authentication_classes=[], permission_classes=[]),
         name="openapi"),
    path("docs", SpectacularRedocView.as_view(url_name="openapi", template_name="docs.html"), name="docs"),
    path("admin/", admin.site.urls),
    # Django's language switch, under /dashboard/ so that it is an HTML page (core.middleware.HTML_PREFIXES).
    path("dashboard/language/", set_language, name="set_language"),
    path("dashboard/", include((dashboard_patterns, "dashboard"))),
    path("", include(("payments.hosted.urls", "pay"))),
    path("", include((rail_urls.urlpatterns, "rails"))),
]

