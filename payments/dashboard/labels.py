"""The dashboard's words for the models' codes and choice labels, in the active language.

The models keep their English labels (the API and Django's admin speak English); the dashboard's templates translate
them as they render them, with a context because Portuguese agrees in gender ("Paga" for a cobrança, "Concluído" for
a repasse): `{% translate payin.get_status_display context "charge status" %}`. The msgids below are the labels the
models give, written out so that makemessages finds them; tests/payments/dashboard/test_translations.py checks that
every choice of those models is here.
"""

from __future__ import annotations

from django.utils.translation import pgettext_lazy

CHARGE_STATUS = {
    "PENDING": pgettext_lazy("charge status", "Pending"), "PAID": pgettext_lazy("charge status", "Paid"),
    "PROCESSING": pgettext_lazy("charge status", "Processing"),
    "FAILED": pgettext_lazy("charge status", "Failed"), "EXPIRED": pgettext_lazy("charge status", "Expired"),
    "CANCELED": pgettext_lazy("charge status", "Canceled"),
    "PARTIALLY_REFUNDED": pgettext_lazy("charge status", "Partially Refunded"),
    "REFUNDED": pgettext_lazy("charge status", "Refunded"), "CHARGEBACK": pgettext_lazy("charge status", "Chargeback"),
}
REFUND_STATUS = {
    "PENDING": pgettext_lazy("refund status", "Pending"), "SUCCEEDED": pgettext_lazy("refund status", "Succeeded"),
    "FAILED": pgettext_lazy("refund status", "Failed"),
}
PAYOUT_STATUS = {
    "PENDING": pgettext_lazy("payout status", "Pending"), "PROCESSING": pgettext_lazy("payout status", "Processing"),
    "COMPLETED": pgettext_lazy("payout status", "Completed"), "FAILED": pgettext_lazy("payout status", "Failed"),
    "CANCELED": pgettext_lazy("payout status", "Canceled"), "RETURNED": pgettext_lazy("payout status", "Returned"),
}
DISPUTE_STATUS = {
    "OPEN": pgettext_lazy("dispute status", "Open"), "UNDER_REVIEW": pgettext_lazy("dispute status", "Under Review"),
    "WON": pgettext_lazy("dispute status", "Won"), "LOST": pgettext_lazy("dispute status", "Lost"),
    "ACCEPTED": pgettext_lazy("dispute status", "Accepted"),
}
DISPUTE_KIND = {
    "CHARGEBACK": pgettext_lazy("dispute kind", "Chargeback"), "MED": pgettext_lazy("dispute kind", "Med"),
}
PAYMENT_METHOD = {
    "PIX": pgettext_lazy("payment method", "Pix"), "CREDIT_CARD": pgettext_lazy("payment method", "Credit Card"),
    "BOLETO": pgettext_lazy("payment method", "Boleto"),
}
# The codes as the ledger's stored descriptions hold them ("PIX charge"): the same in English, words in Portuguese.
PAYMENT_METHOD_CODE = {
    "PIX": pgettext_lazy("payment method code", "PIX"),
    "CREDIT_CARD": pgettext_lazy("payment method code", "CREDIT_CARD"),
    "BOLETO": pgettext_lazy("payment method code", "BOLETO"),
}
# Shown as the codes themselves in English ("EVP key"), as words in Portuguese ("chave aleatória").
PIX_KEY_TYPE = {
    "CPF": pgettext_lazy("pix key type", "CPF"), "CNPJ": pgettext_lazy("pix key type", "CNPJ"),
    "EMAIL": pgettext_lazy("pix key type", "EMAIL"), "PHONE": pgettext_lazy("pix key type", "PHONE"),
    "EVP": pgettext_lazy("pix key type", "EVP"),
}
# The deliveries page shows the code, a timeline its label: both are translated.
DELIVERY_STATUS = {
    "PENDING": (pgettext_lazy("delivery status", "PENDING"), pgettext_lazy("delivery status", "Pending")),
    "SUCCEEDED": (pgettext_lazy("delivery status", "SUCCEEDED"), pgettext_lazy("delivery status", "Succeeded")),
    "FAILED": (pgettext_lazy("delivery status", "FAILED"), pgettext_lazy("delivery status", "Failed")),
}
KYC_STATUS = {
    "NOT_SUBMITTED": pgettext_lazy("kyc status", "Not Submitted"),
    "SUBMITTED": pgettext_lazy("kyc status", "Submitted"),
    "APPROVED": pgettext_lazy("kyc status", "Approved"), "REJECTED": pgettext_lazy("kyc status", "Rejected"),
}
ACCOUNT_EVENT = {
    "signed_up": pgettext_lazy("account event", "Signed up"),
    "kyc_submitted": pgettext_lazy("account event", "KYC submitted"),
    "kyc_approved": pgettext_lazy("account event", "KYC approved"),
    "kyc_rejected": pgettext_lazy("account event", "KYC rejected"),
    "kyc_revoked": pgettext_lazy("account event", "KYC approval withdrawn"),
    "suspended": pgettext_lazy("account event", "Suspended"),
    "reactivated": pgettext_lazy("account event", "Reactivated"),
    "settings_changed": pgettext_lazy("account event", "Settings changed"),
    "balance_adjusted": pgettext_lazy("account event", "Balance adjusted"),
    "delivery_resent": pgettext_lazy("account event", "Webhook delivery resent"),
    "password_changed": pgettext_lazy("account event", "Password changed"),
    "signed_in": pgettext_lazy("account event", "Signed in"),
    "sign_in_failed": pgettext_lazy("account event", "Sign-in failed"),
    "two_factor_enabled": pgettext_lazy("account event", "Two-factor sign-in enabled"),
    "two_factor_disabled": pgettext_lazy("account event", "Two-factor sign-in disabled"),
    "recovery_code_used": pgettext_lazy("account event", "Recovery code used"),
    "member_invited": pgettext_lazy("account event", "Member invited"),
    "member_joined": pgettext_lazy("account event", "Member joined"),
    "member_role_changed": pgettext_lazy("account event", "Member role changed"),
    "member_removed": pgettext_lazy("account event", "Member removed"),
    "session_ended": pgettext_lazy("account event", "Session ended"),
    "key_created": pgettext_lazy("account event", "API key created"),
    "key_revoked": pgettext_lazy("account event", "API key revoked"),
    "signing_secret_revealed": pgettext_lazy("account event", "Signing secret revealed"),
    "signing_secret_rotated": pgettext_lazy("account event", "Signing secret rotated"),
    "endpoint_added": pgettext_lazy("account event", "Webhook endpoint added"),
    "endpoint_changed": pgettext_lazy("account event", "Webhook endpoint changed"),
    "payout_created": pgettext_lazy("account event", "Payout created"),
    "payout_canceled": pgettext_lazy("account event", "Payout canceled"),
    "refund_created": pgettext_lazy("account event", "Refund created"),
    "charge_canceled": pgettext_lazy("account event", "Charge canceled"),
    "unmatched_accepted": pgettext_lazy("account event", "Unmatched payment accepted"),
    "unmatched_refunded": pgettext_lazy("account event", "Unmatched payment sent back"),
    "unmatched_policy_changed": pgettext_lazy("account event", "Unmatched payment policy changed"),
    "dispute_evidence_sent": pgettext_lazy("account event", "Dispute evidence sent"),
    "dispute_accepted": pgettext_lazy("account event", "Dispute accepted"),
    "staff_action": pgettext_lazy("account event", "Staff action in the admin"),
}
# A statement line's object when the page has no link for it.
STATEMENT_OBJECT = {
    "adjustment": pgettext_lazy("statement object", "Adjustment"), "payin": pgettext_lazy("statement object", "Payin"),
    "payout": pgettext_lazy("statement object", "Payout"), "refund": pgettext_lazy("statement object", "Refund"),
    "dispute": pgettext_lazy("statement object", "Dispute"),
    "unmatched_payment": pgettext_lazy("statement object", "Unmatched payment"),
}
