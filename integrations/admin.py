from django.contrib import admin
from django.http import HttpRequest

from integrations.models import ApiKey


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Key pairs are listed and revocable; their secret is nowhere (not even its digest is shown)."""

    list_display = ["public_key", "merchant", "livemode", "label", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["livemode"]
    search_fields = ["public_key", "merchant__name"]
    fields = ["public_key", "merchant", "livemode", "label", "secret_last4", "created_at", "last_used_at",
              "revoked_at"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
