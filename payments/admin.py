"""Staff see the ledger read-only: corrections are new movements, never edits."""

from django.contrib import admin
from django.http import HttpRequest

from config.admin import ReadOnlyAdmin
from payments.models import LedgerAccount, LedgerEntry, LedgerTransaction


class LedgerEntryInline(admin.TabularInline):
    model = LedgerEntry
    extra = 0
    can_delete = False
    fields = readonly_fields = ["account", "line_type", "amount", "balance_after", "created_at"]

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


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
