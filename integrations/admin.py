from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import apply_to_each
from integrations.models import ApiKey
from integrations.services import apikey_revoke


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Key pairs are listed and revocable; their secret is nowhere (not even its digest is shown)."""

    list_display = ["public_key", "merchant", "livemode", "label", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["livemode"]
    search_fields = ["public_key", "merchant__name"]
    fields = ["public_key", "merchant", "livemode", "label", "secret_last4", "created_at", "last_used_at",
              "revoked_at"]
    readonly_fields = fields

    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # revoke instead: a revoked pair stays listed, and revoking reaches every process's key cache

    @admin.action(description="Revoke the selected key pairs")
    def revoke(self, request: HttpRequest, queryset: QuerySet) -> None:
        apply_to_each(request, queryset, lambda k: apikey_revoke(api_key=k), done="Revoked")
