"""A merchant's team on the dashboard: members and their roles, invitations (and accepting one), the merchant
switcher for people in several teams, and the audit log (owners and admins) with its CSV export."""

from __future__ import annotations

import datetime

from django.contrib import messages
from django.contrib.auth import login
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
from django.views.decorators.cache import never_cache

from accounts import members, roles
from accounts.access import SESSION_MERCHANT, permission_required, second_factor_required
from accounts.audit import audit_list
from accounts.forms import AcceptInvitationForm, AuditFilterForm, InviteForm, RoleForm
from accounts.models import AccountEvent, Membership, User
from accounts.twofactor import user_has_second_factor
from accounts.views import sign_in_complete
from core.csvexport import csv_response
from core.dates import SAO_PAULO
from core.errors import DomainError
from core.http import post_only


@permission_required(roles.MEMBERS)
def member_list(request: HttpRequest) -> HttpResponse:
    return _members_page(request, InviteForm())


def _members_page(request: HttpRequest, invite_form: InviteForm, *, status: int = 200) -> HttpResponse:
    return render(request, "accounts/members.html", {
        "members": members.member_list(merchant=request.merchant),
        "invitations": members.invitation_list(merchant=request.merchant), "invite_form": invite_form,
        "role_form": RoleForm(), "can_manage": roles.role_allows(request.role, roles.MEMBERS),
        "is_owner": roles.role_allows(request.role, roles.OWNERSHIP),
        "needs_second_factor": not user_has_second_factor(request.user)}, status=status)


def _member_action(request: HttpRequest, action, done: str) -> HttpResponse:
    try:
        action()
    except Membership.DoesNotExist as exc:
        raise Http404 from exc
    except DomainError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, done)
    return redirect("dashboard:members")


@post_only("dashboard:members")
@permission_required(roles.MEMBERS)
def member_invite(request: HttpRequest) -> HttpResponse:
    form = InviteForm(request.POST)
    if not user_has_second_factor(request.user):
        # Refused like every member change without a second factor, but on the page itself: what was typed stays in
        # the form, beside the notice that links to Security.
        form.add_error(None, gettext("Turn on two-factor sign-in in Security before inviting a member. What you "
                                     "typed is kept below."))
        return _members_page(request, form, status=403)
    if form.is_valid():
        try:
            members.invitation_create(request, merchant=request.merchant, email=form.cleaned_data["email"],
                                      role=form.cleaned_data["role"], invited_by=request.user)
        except DomainError as error:
            form.add_error("email", error.message)
        else:
            messages.success(request, gettext("Invitation sent to %(email)s. The link works once, for 72 hours.")
                             % {"email": form.cleaned_data["email"]})
            return redirect("dashboard:members")
    return _members_page(request, form, status=400)


@post_only("dashboard:members")
@permission_required(roles.MEMBERS)
@second_factor_required
def member_role(request: HttpRequest, member_id: int) -> HttpResponse:
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, gettext("Choose a role."))
        return redirect("dashboard:members")
    return _member_action(request, lambda: members.member_role_change(
        request, actor=request.membership, member_id=member_id, role=form.cleaned_data["role"]),
        gettext("Role changed."))


@post_only("dashboard:members")
@permission_required(roles.MEMBERS)
@second_factor_required
def member_remove(request: HttpRequest, member_id: int) -> HttpResponse:
    return _member_action(request, lambda: members.member_remove(request, actor=request.membership,
                                                                 member_id=member_id),
                          gettext("Member removed; their sessions have ended."))


@post_only("dashboard:members")
@permission_required(roles.OWNERSHIP)
@second_factor_required
def ownership_transfer(request: HttpRequest, member_id: int) -> HttpResponse:
    return _member_action(request, lambda: members.ownership_transfer(request, actor=request.membership,
                                                                      member_id=member_id),
                          gettext("Ownership transferred. You are now an admin."))


@post_only("dashboard:members")
@permission_required(roles.MEMBERS)
def invitation_revoke(request: HttpRequest, invitation_id: int) -> HttpResponse:
    members.invitation_revoke(request, merchant=request.merchant, invitation_id=invitation_id)
    messages.success(request, gettext("Invitation withdrawn."))
    return redirect("dashboard:members")


@post_only("dashboard:members")
@permission_required(roles.OWNERSHIP)
@second_factor_required
def require_two_factor(request: HttpRequest) -> HttpResponse:
    required = request.POST.get("required") == "on"
    return _member_action(request, lambda: members.require_two_factor_set(request, actor=request.membership,
                                                                          required=required),
                          gettext("Saved."))


@post_only("dashboard:overview")
@permission_required(roles.PERSONAL)
def merchant_switch(request: HttpRequest) -> HttpResponse:
    """Choose which of the user's merchants the dashboard shows (only one they are a member of)."""
    chosen = members.membership_of(user=request.user, merchant_id=request.POST.get("merchant"))
    if chosen is not None and str(chosen.merchant_id) == request.POST.get("merchant"):
        request.session[SESSION_MERCHANT] = str(chosen.merchant_id)
        request.session["livemode"] = False
    return redirect("dashboard:overview")


@never_cache
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    """Open to anyone with the link: a signed-in person with the invited e-mail joins; someone with no account sets a
    password; someone with an account signs in first."""
    try:
        invitation = members.invitation_get(token=token)
    except DomainError as error:
        return render(request, "accounts/invitation.html", {"error": error.message}, status=404)
    user = request.user if request.user.is_authenticated else None
    has_account = user is not None or User.objects.filter(email=invitation.email).exists()
    form = AcceptInvitationForm(request.POST or None, email=invitation.email) if user is None else None
    if request.method == "POST" and (user is not None or (not has_account and form.is_valid())):
        try:
            membership = members.invitation_accept(request, token=token, user=user,
                                                   password=form.cleaned_data["password"] if form else None)
        except (DomainError, ValidationError) as error:
            messages.error(request, getattr(error, "message", None) or " ".join(error.messages))
            return redirect("dashboard:login")
        if user is None:
            login(request, membership.user, backend="django.contrib.auth.backends.ModelBackend")
            sign_in_complete(request, membership.user, method="invitation")
        request.session[SESSION_MERCHANT] = str(membership.merchant_id)
        messages.success(request, gettext("Welcome to %(merchant)s.") % {"merchant": membership.merchant.name})
        return redirect("dashboard:overview")
    return render(request, "accounts/invitation.html", {
        "invitation": invitation, "form": form, "has_account": has_account, "user_matches": (
            user is not None and user.email.lower() == invitation.email)})


def _audit_rows(request: HttpRequest):
    team = members.member_list(merchant=request.merchant)
    # The same words as the table's "What" column (payments/dashboard/labels.py gives the catalog these msgids).
    actions = [(value, pgettext_lazy("account event", label)) for value, label in AccountEvent.Action.choices]
    form = AuditFilterForm(request.GET or None, members=team, actions=actions)
    data = form.cleaned_data if form.is_valid() else {}
    day = datetime.timedelta(days=1)

    def moment(value, extra=datetime.timedelta()):
        return timezone.make_aware(datetime.datetime.combine(value + extra, datetime.time()), SAO_PAULO) \
            if value else None

    rows = audit_list(merchant=request.merchant, actor_id=data.get("member"), action=data.get("action") or None,
                      since=moment(data.get("since")), until=moment(data.get("until"), day))
    return form, rows


@permission_required(roles.MEMBERS, read_permission=roles.MEMBERS)
def audit_log(request: HttpRequest) -> HttpResponse:
    form, rows = _audit_rows(request)
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    for entry in page:
        entry.changes = audit_changes(entry.before, entry.after)
    return render(request, "accounts/audit.html", {"form": form, "page": page, "query": query.urlencode()})


def audit_changes(before, after) -> list[str]:
    """An entry's change as people read it: `field: old → new` for each field that changed (or was set)."""
    if not isinstance(before, dict) and not isinstance(after, dict):
        return [f"{before} → {after}" if before is not None else str(after)] if after is not None else []
    before, after = before if isinstance(before, dict) else {}, after if isinstance(after, dict) else {}
    lines = []
    for name in [*before, *(key for key in after if key not in before)]:
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        lines.append(f"{name}: {old} → {new}" if name in before else f"{name}: {new}")
    return lines


CSV_COLUMNS = ["created_at", "actor", "actor_key", "action", "obj_type", "obj_id", "before", "after", "reason",
               "ip", "user_agent"]


@permission_required(roles.MEMBERS, read_permission=roles.MEMBERS)
def audit_log_csv(request: HttpRequest) -> StreamingHttpResponse:
    _form, rows = _audit_rows(request)
    lines = ((e.created_at.isoformat(), e.actor.email if e.actor else "", e.actor_key, e.action, e.obj_type, e.obj_id,
              e.before, e.after, e.reason, e.ip, e.user_agent) for e in rows.iterator(chunk_size=500))
    return csv_response(header=CSV_COLUMNS, rows=lines, filename="audit-log.csv")
