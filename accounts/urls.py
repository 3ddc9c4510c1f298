"""Dashboard pages of accounts, in the "dashboard" namespace that config/urls.py composes from every app's pages."""

from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import security_views, team_views, views
from core.http import post_only

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("login/", views.LoginView.as_view(), name="login"),
    # Django's LogoutView takes POST only; a GET of its URL (a bookmark, a switch going back) goes to the sign-in page.
    path("logout/", post_only("dashboard:login")(auth_views.LogoutView.as_view()), name="logout"),
    path("password-reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(
        template_name="accounts/password_reset_done.html"), name="password_reset_done"),
    path("password-reset/<uidb64>/<token>/", views.PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("password-reset/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name="accounts/password_reset_complete.html"), name="password_reset_complete"),
    path("mode/", views.mode_switch, name="mode_switch"),
    path("kyc/", views.kyc, name="kyc"),
    path("settings/", views.account_settings, name="settings"),
    path("login/verify/", security_views.login_verify, name="login_verify"),
    path("security/", security_views.security, name="security"),
    path("security/two-factor/enable/", security_views.two_factor_enable, name="two_factor_enable"),
    path("security/two-factor/disable/", security_views.two_factor_disable, name="two_factor_disable"),
    path("security/recovery-codes/", security_views.recovery_codes_new, name="recovery_codes_new"),
    path("security/sessions/end/", security_views.session_end, name="session_end"),
    path("members/", team_views.member_list, name="members"),
    path("members/invite/", team_views.member_invite, name="member_invite"),
    path("members/<int:member_id>/role/", team_views.member_role, name="member_role"),
    path("members/<int:member_id>/remove/", team_views.member_remove, name="member_remove"),
    path("members/<int:member_id>/transfer/", team_views.ownership_transfer, name="ownership_transfer"),
    path("members/invitations/<int:invitation_id>/revoke/", team_views.invitation_revoke, name="invitation_revoke"),
    path("members/require-two-factor/", team_views.require_two_factor, name="require_two_factor"),
    path("merchant/", team_views.merchant_switch, name="merchant_switch"),
    path("invitations/<str:token>/", team_views.invitation_accept, name="invitation_accept"),
    path("audit/", team_views.audit_log, name="audit"),
    path("audit.csv", team_views.audit_log_csv, name="audit_csv"),
]
