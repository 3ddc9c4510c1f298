"""Dashboard pages of payments (SPEC §9), included by accounts/urls.py under /dashboard/ in the "dashboard"
namespace; the views are in payments/views.py."""

from django.urls import path

from payments import views

urlpatterns = [
    path("charges/", views.charge_list, name="charges"),
    path("charges/<uuid:payin_id>/", views.charge_detail, name="charge_detail"),
    path("charges/<uuid:payin_id>/cancel/", views.charge_cancel, name="charge_cancel"),
    path("charges/<uuid:payin_id>/refund/", views.charge_refund, name="charge_refund"),
    path("charges/<uuid:payin_id>/simulate/", views.charge_simulate, name="charge_simulate"),
    path("payouts/", views.payout_list, name="payouts"),
    path("payouts/new/", views.payout_new, name="payout_new"),
    path("payouts/<uuid:payout_id>/", views.payout_detail, name="payout_detail"),
    path("payouts/<uuid:payout_id>/cancel/", views.payout_cancel, name="payout_cancel"),
    path("payouts/<uuid:payout_id>/simulate/", views.payout_simulate, name="payout_simulate"),
    path("statement/", views.statement, name="statement"),
    path("statement.csv", views.statement_csv, name="statement_csv"),
]
