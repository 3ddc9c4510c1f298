"""The merchant's unmatched payments (issue 14): the list with the policy for each kind, one payment with its two
actions (keep it, send it back). Reads need any role; the actions and the policy need the money permission."""

from __future__ import annotations

import functools

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, pgettext

from accounts import roles
from accounts.access import merchant_required, permission_required, second_factor_required
from accounts.audit import audit_record
from accounts.models import AccountEvent
from core.errors import DomainError, NotFound
from core.http import post_only
from payments.dashboard.pages import keyset_page, refuse_write, timeline
from payments.models import UnmatchedAction, UnmatchedKind, UnmatchedStatus
from payments.unmatched import selectors, services

DECIDABLE = {UnmatchedStatus.HELD, UnmatchedStatus.REFUND_FAILED}
AUDIT_ACTIONS = {"accept": AccountEvent.Action.UNMATCHED_ACCEPTED, "refund": AccountEvent.Action.UNMATCHED_REFUNDED}


def _unmatched_or_404(request: HttpRequest, unmatched_id):
    try:
        return selectors.unmatched_get(merchant=request.merchant, livemode=request.livemode,
                                       unmatched_id=unmatched_id)
    except NotFound as exc:
        raise Http404("No such unmatched payment") from exc


@merchant_required
def unmatched_list(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status") or None
    rows = selectors.unmatched_list(merchant=request.merchant, livemode=request.livemode,
                                    status=status if status in UnmatchedStatus.values else None)
    policy = selectors.unmatched_policy(merchant=request.merchant)
    return render(request, "payments/dashboard/unmatched.html", {
        **keyset_page(request, rows), "status": status, "statuses": UnmatchedStatus.choices,
        "policy": [(kind, label, policy[kind]) for kind, label in UnmatchedKind.choices],
        "actions": UnmatchedAction.choices})


@merchant_required
def unmatched_detail(request: HttpRequest, unmatched_id) -> HttpResponse:
    unmatched = _unmatched_or_404(request, unmatched_id)
    return render(request, "payments/dashboard/unmatched_detail.html", {
        "unmatched": unmatched, "can_decide": unmatched.status in DECIDABLE,
        "events": timeline(request, [str(unmatched.pk)]), "object_id": str(unmatched.pk)})


@post_only("dashboard:unmatched_detail", keep=["unmatched_id"])
@permission_required(roles.MONEY)
@second_factor_required
def unmatched_decide(request: HttpRequest, unmatched_id) -> HttpResponse:
    unmatched = _unmatched_or_404(request, unmatched_id)
    back = redirect("dashboard:unmatched_detail", unmatched_id=unmatched.pk)
    if refusal := refuse_write(request):
        return refusal
    action = request.POST.get("action", "")
    decide = {"accept": services.unmatched_accept, "refund": services.unmatched_refund}.get(action)
    if decide is None:
        messages.error(request, gettext("Unknown action."))
        return back
    try:
        decided = decide(merchant=request.merchant, livemode=request.livemode, unmatched_id=unmatched.pk)
    except DomainError as error:
        messages.error(request, str(error.message))
        return back
    audit_record(request, merchant=request.merchant, action=AUDIT_ACTIONS[action], obj_type="unmatched_payment",
                 obj_id=str(unmatched.pk), before={"status": unmatched.status}, after={"status": decided.status})
    messages.success(request, gettext("Done: the payment is now %(status)s.") % {
        "status": pgettext("unmatched status", decided.get_status_display())})
    return back


@post_only("dashboard:unmatched")
@permission_required(roles.MONEY)
def unmatched_policy_update(request: HttpRequest) -> HttpResponse:
    if refusal := refuse_write(request):
        return refusal
    changes = {kind: request.POST[kind] for kind in UnmatchedKind.values
               if request.POST.get(kind) in UnmatchedAction.values}
    services.unmatched_policy_update(merchant=request.merchant, changes=changes, audit=functools.partial(
        audit_record, request, merchant=request.merchant, action=AccountEvent.Action.UNMATCHED_POLICY_CHANGED,
        obj_type="unmatched_policy"))
    messages.success(request, gettext("What happens to unmatched payments was saved."))
    return redirect("dashboard:unmatched")
