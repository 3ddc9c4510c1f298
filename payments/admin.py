"""Staff see the ledger read-only: corrections are new movements, never edits."""

from django.contrib import admin

from config.admin import ReadOnlyAdmin, ReadOnlyInline
from payments.models import LedgerAccount, LedgerEntry, LedgerTransaction


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
