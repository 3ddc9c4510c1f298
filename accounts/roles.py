"""Who may do what on a merchant's dashboard: the role → permissions table, declared once. Every dashboard view
names the permission it needs (`accounts.access.permission_required`); nothing else decides."""

from __future__ import annotations

from accounts.models import Role

READ = "read"  # every page; a view that only reads refuses POSTs
PERSONAL = "personal"  # a member's own things (password, sessions, mode and merchant switches): any role
INTEGRATIONS = "integrations"  # API keys, the webhook signing secret, endpoints, deliveries
MONEY = "money"  # payouts, refunds, cancels, sandbox actions, unmatched payments and disputes
SETTINGS = "settings"  # the account's settings, fees view, KYC
MEMBERS = "members"  # invite, change roles, remove; the audit log
OWNERSHIP = "ownership"  # the owner's own rights: the owner's membership, requiring 2FA for everyone

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset({READ, PERSONAL, INTEGRATIONS, MONEY, SETTINGS, MEMBERS, OWNERSHIP}),
    Role.ADMIN: frozenset({READ, PERSONAL, INTEGRATIONS, MONEY, SETTINGS, MEMBERS}),
    Role.DEVELOPER: frozenset({READ, PERSONAL, INTEGRATIONS}),
    Role.FINANCE: frozenset({READ, PERSONAL, MONEY}),
    Role.VIEWER: frozenset({READ, PERSONAL}),
}
PERMISSIONS = frozenset().union(*ROLE_PERMISSIONS.values())
WRITE_PERMISSIONS = PERMISSIONS - {READ}


def role_allows(role: str | None, permission: str) -> bool:
    return permission in ROLE_PERMISSIONS.get(role or "", frozenset())


def roles_with(permission: str) -> list[str]:
    return [role for role, permissions in ROLE_PERMISSIONS.items() if permission in permissions]
