"""Who may open a dashboard page and post its forms: the merchant chosen among the user's memberships, the role's
permissions (accounts.roles), the second factor for sensitive actions, and the owner's "two-factor for everyone".

Every dashboard view is wrapped by `merchant_required` (permission READ: a page that only reads, and refuses POSTs)
or `permission_required(<permission>)`. The permission is checked on the server for every request, before the view
runs, and is kept on the view as `required_permission`, so a test can enumerate the URLconf and prove that every
POST is checked. A view whose action is sensitive calls `second_factor_refusal` (or is wrapped by
`second_factor_required`)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext

from accounts import roles
from accounts.members import membership_of
from accounts.twofactor import user_has_second_factor

SESSION_MERCHANT = "merchant_id"
# Pages a member must still reach when the owner requires two-factor sign-in and they have none yet.
SECURITY_URL = "dashboard:security"


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "accounts/forbidden.html", {"message": message}, status=403)


def _prepare(request: HttpRequest) -> HttpResponse | None:
    """Set request.merchant, .membership, .role and .livemode; a refusal when the user has no merchant."""
    membership = membership_of(user=request.user, merchant_id=request.session.get(SESSION_MERCHANT))
    request.membership = membership
    request.merchant = membership.merchant if membership else None
    request.role = membership.role if membership else None
    request.livemode = request.session.get("livemode", False)
    if membership is None:
        return render(request, "accounts/no_merchant.html", status=403)
    if membership.merchant.require_two_factor and not user_has_second_factor(request.user):
        return redirect(SECURITY_URL)
    return None


SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def merchant_required(view: Callable[..., HttpResponse] | None = None, *, permission: str = roles.READ,
                      read_permission: str = roles.READ) -> Callable[..., HttpResponse]:
    """Log-in required and a membership. A POST (any unsafe method) needs `permission`, and a READ view refuses
    every POST; a GET needs `read_permission` (READ: every member)."""
    if view is None:
        return functools.partial(merchant_required, permission=permission, read_permission=read_permission)
    if not {permission, read_permission} <= roles.PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r} or {read_permission!r}")

    @login_required
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if refusal := _prepare(request):
            return refusal
        needed = read_permission if request.method in SAFE_METHODS else permission
        if request.method not in SAFE_METHODS and permission == roles.READ:
            return forbidden(request, gettext("This page cannot be changed."))
        if not roles.role_allows(request.role, needed):
            return forbidden(request, gettext("Your role in this account does not allow this. Ask an owner or "
                                              "admin."))
        return view(request, *args, **kwargs)

    wrapper.required_permission = permission
    wrapper.read_permission = read_permission
    return wrapper


def permission_required(permission: str, *, read_permission: str = roles.READ
                        ) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """What a view that writes is wrapped with: `@permission_required(roles.MONEY)`."""
    return functools.partial(merchant_required, permission=permission, read_permission=read_permission)


def second_factor_refusal(request: HttpRequest) -> HttpResponse | None:
    """Revealing or rotating secrets, live keys, payouts, refunds and member changes need a second factor: a member
    without one is sent to enrol. (Every session of a user with a second factor began with it: sign-in asks for it,
    and enrolling ends the user's other sessions.)"""
    if user_has_second_factor(request.user):
        return None
    return forbidden(request, gettext("Turn on two-factor sign-in in Security before doing this."))


def second_factor_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method == "POST" and (refusal := second_factor_refusal(request)):
            return refusal
        return view(request, *args, **kwargs)

    wrapper.second_factor = True
    return wrapper
