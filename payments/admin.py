"""Staff see the ledger and charges read-only: corrections are new movements (balance adjustments), never edits."""

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext, gettext_lazy

from accounts import audit
from accounts.models import AccountEvent
from accounts.services import audit_record
from core.admin import ReadOnlyAdmin, ReadOnlyInline, apply_to_each
from payments.ledger.services import adjustment_create
from payments.models import (
    BalanceAdjustment,
    Dispute,
    LedgerAccount,
    LedgerEntry,
    LedgerTransaction,
    Payin,
    Payout,
    RailNotification,
    Refund,
    UnattributedPayment,
    UnmatchedPayment,
)
from payments.templatetags.payments_format import brl
from payments.unattributed import services as unattributed


class LedgerEntryInline(ReadOnlyInline):
    model = LedgerEntry
    fields = readonly_fields = ["account", "line_type", "amount", "balance_after", "created_at"]


@admin.register(LedgerAccount)
class LedgerAccountAdmin(ReadOnlyAdmin):
    list_display = ["merchant", "livemode", "kind", "balance"]
    list_filter = ["kind", "livemode"]
    search_fields = ["merchant__name"]
    list_select_related = ["merchant"]


@admin.register(LedgerTransaction)
class LedgerTransactionAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "merchant", "livemode", "object_type", "object_id", "reference_id"]
    list_filter = ["object_type", "livemode"]
    search_fields = ["=object_id", "reference_id", "merchant__name"]
    list_select_related = ["merchant"]
    inlines = [LedgerEntryInline]


class RefundInline(ReadOnlyInline):
    model = Refund
    fields = readonly_fields = ["id", "amount", "status", "reason", "failure_code", "created_at"]


@admin.register(Payin)
class PayinAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "merchant", "livemode", "payment_method", "amount", "fee", "status",
                    "reference_id"]
    list_filter = ["status", "payment_method", "livemode"]
    search_fields = ["=id", "reference_id", "=pix_txid", "merchant__name"]
    list_select_related = ["merchant"]
    show_full_result_count = False  # no COUNT(*) over millions of charges on every page
    exclude = ["public_token"]  # it opens the hosted payment page; staff have no use for it
    inlines = [RefundInline]


@admin.register(RailNotification)
class RailNotificationAdmin(ReadOnlyAdmin):
    """What the rails told us. `outcome` "no matching charge: unattributed" is money at the rail that names no
    merchant (a live Pix to the platform's key naming no charge): it is an unattributed payment, sent back below."""

    list_display = ["received_at", "rail", "dedupe_key", "processed_at", "outcome"]
    list_filter = ["rail", "outcome"]
    search_fields = ["=dedupe_key", "outcome"]


@admin.register(UnmatchedPayment)
class UnmatchedPaymentAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "merchant", "livemode", "kind", "amount", "status", "payin"]
    list_filter = ["kind", "status", "livemode"]
    search_fields = ["=id", "=end_to_end_id", "merchant__name"]
    list_select_related = ["merchant"]


@admin.register(UnattributedPayment)
class UnattributedPaymentAdmin(ReadOnlyAdmin):
    """Live Pix to the platform's key naming no charge: nobody's money. Staff with the `refund_unattributedpayment`
    permission send it back to the payer (a devolução through the rail, sent by a worker after this commits)."""

    list_display = ["created_at", "rail", "amount_shown", "payer_name", "payer_document", "status", "failure_code",
                    "resolved_at"]
    list_filter = ["status", "rail"]
    search_fields = ["=id", "=end_to_end_id", "payer_name", "=payer_document"]
    fields = readonly_fields = ["id", "rail", "end_to_end_id", "amount_shown", "payer_name", "payer_document",
                                "status", "failure_code", "refund_key", "refunded_by", "notification", "created_at",
                                "updated_at", "resolved_at"]
    list_select_related = ["refunded_by"]
    actions = ["send_back"]

    @admin.display(description=gettext_lazy("Amount"), ordering="amount")
    def amount_shown(self, payment: UnattributedPayment) -> str:
        return brl(payment.amount)

    def has_refund_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("payments.refund_unattributedpayment")

    @admin.action(description=gettext_lazy("Send back to the payer"), permissions=["refund"])
    def send_back(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        if request.POST.get("confirm") == "yes":
            apply_to_each(request, queryset, lambda payment: unattributed.unattributed_refund(
                unattributed_id=payment.pk, staff=request.user,
                audit=lambda sent, previous: _audit_send_back(request, sent, previous)),
                done=gettext("Sent back to the payer"))
            return None
        return render(request, "admin/payments/unattributedpayment/send_back.html", {
            **self.admin_site.each_context(request), "title": gettext("Send back to the payer"),
            "payments": queryset, "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            "opts": self.model._meta})


def _audit_send_back(request: HttpRequest, payment: UnattributedPayment, previous: str) -> None:
    """The decision in the audit log (no merchant: the money is the platform's), in the transaction that makes it."""
    audit.audit_record(request, merchant=None, action=AccountEvent.Action.STAFF_ACTION,
                       obj_type="unattributed_payment", obj_id=str(payment.pk), before={"status": previous},
                       after={"status": payment.status}, reason=f"sent back to the payer: {brl(payment.amount)}",
                       details={"unattributed_id": str(payment.pk), "amount": payment.amount,
                                "end_to_end_id": payment.end_to_end_id, "refund_key": str(payment.refund_key)})


@admin.register(Dispute)
class DisputeAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "merchant", "livemode", "kind", "amount", "status", "evidence_due_by"]
    list_filter = ["kind", "status", "livemode"]
    search_fields = ["=id", "=payin__id", "merchant__name"]
    list_select_related = ["merchant"]


@admin.register(BalanceAdjustment)
class BalanceAdjustmentAdmin(admin.ModelAdmin):
    """Staff credit or debit a merchant's balance with a reason; each adjustment is a ledger movement, never edited
    or deleted (a wrong one is corrected by another)."""

    list_display = ["created_at", "merchant", "livemode", "amount", "reason", "created_by"]
    list_filter = ["livemode"]
    search_fields = ["merchant__name", "reason"]
    list_select_related = ["merchant", "created_by"]
    autocomplete_fields = ["merchant"]
    fields = ["merchant", "livemode", "amount", "reason"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: BalanceAdjustment, form, change: bool) -> None:
        with transaction.atomic():  # the movement and its audit line are committed together
            created = adjustment_create(merchant=obj.merchant, livemode=obj.livemode, amount=obj.amount,
                                        reason=obj.reason, staff=request.user)
            mode = "live" if created.livemode else "test"
            audit_record(merchant=created.merchant, actor=request.user, action=AccountEvent.Action.BALANCE_ADJUSTED,
                         reason=f"{brl(created.amount)} in {mode} mode: {created.reason}",
                         details={"adjustment_id": str(created.pk), "amount": created.amount,
                                  "livemode": created.livemode})
        obj.pk = created.pk
        obj.created_by = created.created_by
        obj.created_at = created.created_at
        obj._state.adding = False


@admin.register(Payout)
class PayoutAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "merchant", "livemode", "amount", "fee", "status", "pix_key_type", "reference_id"]
    list_filter = ["status", "pix_key_type", "livemode"]
    search_fields = ["=id", "reference_id", "=external_id", "merchant__name"]
    list_select_related = ["merchant"]
    show_full_result_count = False
