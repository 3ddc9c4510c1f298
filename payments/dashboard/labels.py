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
}
# A statement line's object when the page has no link for it.
STATEMENT_OBJECT = {
    "adjustment": pgettext_lazy("statement object", "Adjustment"), "payin": pgettext_lazy("statement object", "Payin"),
    "payout": pgettext_lazy("statement object", "Payout"), "refund": pgettext_lazy("statement object", "Refund"),
}
