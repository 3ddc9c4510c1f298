"""Dashboard pages of payments (SPEC §9): the overview, charges, payouts and the statement, in the "dashboard"
namespace that config/urls.py composes."""

from django.urls import path

from payments.dashboard import charges, disputes, overview, payouts, statement, unmatched

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("charges/", charges.charge_list, name="charges"),
    path("charges/<uuid:payin_id>/", charges.charge_detail, name="charge_detail"),
    path("charges/<uuid:payin_id>/cancel/", charges.charge_cancel, name="charge_cancel"),
    path("charges/<uuid:payin_id>/refund/", charges.charge_refund, name="charge_refund"),
    path("charges/<uuid:payin_id>/simulate/", charges.charge_simulate, name="charge_simulate"),
    path("payouts/", payouts.payout_list, name="payouts"),
    path("payouts/new/", payouts.payout_new, name="payout_new"),
    path("payouts/<uuid:payout_id>/", payouts.payout_detail, name="payout_detail"),
    path("payouts/<uuid:payout_id>/cancel/", payouts.payout_cancel, name="payout_cancel"),
    path("payouts/<uuid:payout_id>/simulate/", payouts.payout_simulate, name="payout_simulate"),
    path("disputes/", disputes.dispute_list, name="disputes"),
    path("disputes/<uuid:dispute_id>/", disputes.dispute_detail, name="dispute_detail"),
    path("disputes/<uuid:dispute_id>/evidence/", disputes.dispute_evidence, name="dispute_evidence"),
    path("disputes/<uuid:dispute_id>/accept/", disputes.dispute_accept, name="dispute_accept"),
    path("disputes/<uuid:dispute_id>/simulate/", disputes.dispute_simulate_view, name="dispute_simulate"),
    path("unmatched/", unmatched.unmatched_list, name="unmatched"),
    path("unmatched/policy/", unmatched.unmatched_policy_update, name="unmatched_policy"),
    path("unmatched/<uuid:unmatched_id>/", unmatched.unmatched_detail, name="unmatched_detail"),
    path("unmatched/<uuid:unmatched_id>/decide/", unmatched.unmatched_decide, name="unmatched_decide"),
    path("statement/", statement.statement, name="statement"),
    path("statement.csv", statement.statement_csv, name="statement_csv"),
]
