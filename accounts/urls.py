from django.contrib.auth import views as auth_views
from django.urls import include, path

from accounts import views
from integrations import views as integration_views
from webhooks import views as webhook_views

urlpatterns = [
    path("", views.overview, name="overview"),
    path("signup/", views.signup, name="signup"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password-reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(
        template_name="accounts/password_reset_done.html"), name="password_reset_done"),
    path("password-reset/<uidb64>/<token>/", views.PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("password-reset/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name="accounts/password_reset_complete.html"), name="password_reset_complete"),
    path("mode/", views.mode_switch, name="mode_switch"),
    path("kyc/", views.kyc, name="kyc"),
    path("settings/", views.account_settings, name="settings"),
    path("integrations/", integration_views.integrations, name="integrations"),
    path("integrations/keys/", integration_views.apikey_create_view, name="apikey_create"),
    path("integrations/keys/<uuid:key_id>/revoke/", integration_views.apikey_revoke_view, name="apikey_revoke"),
    path("webhooks/secret/reveal/", webhook_views.signing_secret_reveal, name="signing_secret_reveal"),
    path("webhooks/secret/rotate/", webhook_views.signing_secret_rotate, name="signing_secret_rotate"),
    path("webhooks/endpoints/", webhook_views.endpoint_create, name="endpoint_create"),
    path("webhooks/endpoints/<uuid:endpoint_id>/", webhook_views.endpoint_edit, name="endpoint_edit"),
    path("webhooks/endpoints/<uuid:endpoint_id>/test/", webhook_views.endpoint_send_test, name="endpoint_test"),
    path("webhooks/deliveries/", webhook_views.deliveries, name="deliveries"),
    path("webhooks/deliveries/<uuid:delivery_id>/", webhook_views.delivery_detail, name="delivery_detail"),
    path("webhooks/deliveries/<uuid:delivery_id>/resend/", webhook_views.delivery_resend, name="delivery_resend"),
    path("", include("payments.dashboard_urls")),
]
