"""Staff see the ledger and charges read-only: corrections are new movements (balance adjustments), never edits."""

from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest

from accounts.models import AccountEvent
from accounts.services import audit_record
from config.admin import ReadOnlyAdmin, ReadOnlyInline
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
    UnmatchedPayment,
)
from payments.templatetags.payments_format import brl


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
    merchant (a live Pix to the platform's key naming no charge): staff send it back from the bank's side."""

    list_display = ["received_at", "rail", "dedupe_key", "processed_at", "outcome"]
    list_filter = ["rail", "outcome"]
    search_fields = ["=dedupe_key", "outcome"]


@admin.register(UnmatchedPayment)
class UnmatchedPaymentAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "merchant", "livemode", "kind", "amount", "status", "payin"]
    list_filter = ["kind", "status", "livemode"]
    search_fields = ["=id", "=end_to_end_id", "merchant__name"]
    list_select_related = ["merchant"]


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
