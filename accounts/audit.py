"""The audit log's one writer for actions taken through a request, and its reader for the dashboard.

    audit_record(request, merchant=m, action=AccountEvent.Action.PAYOUT_CREATED, obj_type="payout", obj_id=str(p.pk),
                 after={"amount": p.amount})

`request` may be None (a task, a command); with a request the actor defaults to its signed-in user, and the IP and
user agent are taken from it. An API action passes `actor_key` (the key pair's public key) and no user. Call it after
the change committed, or inside the change's transaction to commit both or neither. Entries are never changed or
deleted (AccountEvent refuses both)."""

from __future__ import annotations

import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.models import AccountEvent, Merchant, User
from core.requests import client_ip, request_meta

USER_AGENT_MAX = 300


def request_origin(request: HttpRequest | None) -> dict:
    """The IP and user agent of a request, as the audit log and the sessions page store them."""
    if request is None:
        return {"ip": None, "user_agent": ""}
    agent = request_meta(request).get("HTTP_USER_AGENT", "")
    return {"ip": client_ip(request) or None, "user_agent": agent[:USER_AGENT_MAX]}


def audit_build(request: HttpRequest | None, *, merchant: Merchant | None, action: str, obj_type: str = "",
                obj_id: str = "", before: Any = None, after: Any = None, actor_user: User | None = None,
                actor_key: str | None = None, reason: str = "", details: dict | None = None) -> AccountEvent:
    """The entry, not saved: for a service that saves it in the same transaction as the change it records."""
    if actor_user is None and actor_key is None and request is not None:
        user = getattr(request, "user", None)
        actor_user = user if getattr(user, "is_authenticated", False) else None
    return AccountEvent(
        merchant=merchant, actor=actor_user, actor_key=actor_key or "", action=action, obj_type=obj_type,
        obj_id=str(obj_id), before=before, after=after, reason=reason, details=details or {},
        **request_origin(request))


def audit_record(request: HttpRequest | None, **fields: Any) -> AccountEvent:
    """Build the entry (`audit_build`'s arguments) and save it."""
    entry = audit_build(request, **fields)
    entry.save(force_insert=True)
    return entry


def audit_record_for_user(request: HttpRequest | None, *, user: User, action: str, **fields) -> None:
    """An action of a person rather than of one merchant (a sign-in, a second-factor change): one entry in each of
    their merchants' logs, or one without a merchant when they have none (staff)."""
    merchants = [m.merchant for m in user.memberships.select_related("merchant")] if user.pk else []
    for merchant in merchants or [None]:
        audit_record(request, merchant=merchant, action=action, actor_user=user, **fields)


def audit_list(*, merchant: Merchant, actor_id: int | None = None, action: str | None = None,
               since: datetime.datetime | None = None, until: datetime.datetime | None = None) -> QuerySet:
    """The merchant's log, newest first, filtered by member, action and a date range (`until` exclusive)."""
    rows = AccountEvent.objects.filter(merchant=merchant).select_related("actor")
    if actor_id:
        rows = rows.filter(actor_id=actor_id)
    if action:
        rows = rows.filter(action=action)
    if since:
        rows = rows.filter(created_at__gte=since)
    if until:
        rows = rows.filter(created_at__lt=until)
    return rows.order_by("-created_at", "-id")
