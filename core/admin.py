"""What every staff action in the admin shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.contrib import admin, messages
from django.http import HttpRequest

from core.errors import DomainError


def apply_to_each(request: HttpRequest, objects: Iterable, action: Callable[[object], None], *, done: str) -> None:
    """Run a service on each selected object; report each refusal by name and the successes as one count."""
    succeeded = 0
    for obj in objects:
        try:
            action(obj)
            succeeded += 1
        except DomainError as error:
            messages.error(request, f"{obj}: {error.message}")
    if succeeded:
        messages.success(request, f"{done}: {succeeded}.")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records staff may look at but never add, edit or delete (ledgers, events, audit trails)."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    """Rows shown inside their parent's page, never added or deleted there (entries, attempts, audit lines)."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
