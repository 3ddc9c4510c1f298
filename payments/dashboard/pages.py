"""What the dashboard's charge, payout and statement pages share (SPEC §9): keyset pages, search, the event
timeline, and the guards of a write (a suspended account, a test-mode-only action).

The pages are thin, as the API views are: a page reads through a selector, a form posts to one service call, and a
`DomainError` becomes a message or an error beside the field it is about. Every query is scoped to `request.merchant`
and `request.livemode` (set by `merchant_required`): another merchant's or the other mode's object is a 404. Lists are
keyset-paginated with the API's own cursor (`core.api.paginate`), never OFFSET.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.contrib import messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext

from accounts.models import KycStatus
from accounts.views import refuse_if_suspended
from core.api import paginate
from core.errors import DomainError
from webhooks.models import Event
from webhooks.selectors import event_timeline

PAGE_SIZE = 25


TIMELINE_MAX = 200


# --- Shared ----------------------------------------------------------------------------------------------------------
def itself(obj):
    return obj


def keyset_page(request: HttpRequest, queryset: QuerySet) -> dict:
    """One page, newest first, and the links around it, keeping the page's filters in the links."""
    cursor = request.GET.get("cursor") or None
    params = {"limit": str(PAGE_SIZE), "cursor": cursor}
    try:
        page = paginate(queryset, params=params, serialize=itself)
    except DomainError:  # an edited or very old link: start again from the newest
        cursor = None
        page = paginate(queryset, params={"limit": str(PAGE_SIZE)}, serialize=itself)
    query = request.GET.copy()
    query.pop("cursor", None)
    first_url = f"?{query.urlencode()}" if cursor else None
    next_url = None
    if page.next_cursor:
        query["cursor"] = page.next_cursor
        next_url = f"?{query.urlencode()}"
    return {"rows": page.data, "next_url": next_url, "first_url": first_url, "paged": bool(cursor)}


def search(queryset: QuerySet, text: str) -> QuerySet:
    """An exact id, or an exact referenceId (which may itself look like a UUID)."""
    try:
        return queryset.filter(Q(pk=uuid.UUID(text)) | Q(reference_id=text))
    except ValueError:
        return queryset.filter(reference_id=text)


def timeline(request: HttpRequest, object_ids: list[str]) -> list[Event]:
    """The events of these objects, oldest first, each with its webhook deliveries."""
    return event_timeline(merchant=request.merchant, livemode=request.livemode, object_ids=object_ids,
                          limit=TIMELINE_MAX)


def refuse_write(request: HttpRequest) -> HttpResponse | None:
    """A suspended account is read-only; live mode moves real money only once KYC is approved (the API's rule for
    live keys)."""
    if refusal := refuse_if_suspended(request):
        return refusal
    if request.livemode and request.merchant.kyc_status != KycStatus.APPROVED:
        messages.error(request, gettext("Live mode works once your KYC is approved. Until then, use test mode."))
        return redirect("dashboard:kyc")
    return None


def test_mode_only(request: HttpRequest, back: HttpResponse) -> HttpResponse | None:
    if request.livemode:
        messages.error(request, gettext("Sandbox controls work in test mode only."))
        return back
    return None


def sandbox_action(request: HttpRequest, back: HttpResponse, actions: dict[str, object],
                    simulate: Callable[[str], object]) -> HttpResponse:
    """A sandbox button: test mode only, one of `actions` (action → success message), refusals as messages."""
    if refusal := test_mode_only(request, back):
        return refusal
    action = request.POST.get("action", "")
    if action not in actions:
        messages.error(request, gettext("Unknown sandbox action."))
        return back
    try:
        simulate(action)
    except DomainError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, str(actions[action]))
    return back
