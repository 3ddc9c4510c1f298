"""Proof that the person at the keyboard holds the account, asked again before a change to their own sign-in.

A signed-in session alone may not regenerate recovery codes, turn two-factor sign-in off or change the password: a
stolen session cookie would otherwise keep the account for good (ten fresh recovery codes, one of them turning the
second factor off). Each of those forms takes a current code from the authenticator app (or a recovery code) or the
password; a proof counts for REAUTH_SECONDS on the session that gave it, so two changes in a row need one proof
(docs/decisions/0075-changes-to-sign-in-ask-for-proof-again.md).

Every proof attempt, right or wrong, goes through the sign-in's second-step throttle (`accounts.throttle`, per
account and per IP, the same counters); a right one gives its attempt back.
"""

from __future__ import annotations

import time

from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from accounts import throttle, twofactor
from accounts.audit import audit_record_for_user
from accounts.models import AccountEvent, User
from core.errors import DomainError
from core.requests import client_ip

REAUTH_SECONDS = 5 * 60
SESSION_KEY = "reauth_at"  # in the session: when its user last proved it is them (time.time())


class ProofRequired(DomainError):
    code = "reauth_required"
    message = gettext_lazy("Confirm it is you: enter your password, or the code your authenticator app shows now.")


class ProofRefused(DomainError):
    code = "invalid_code"
    message = gettext_lazy("That is neither your password nor a current code from your app.")


class ProofThrottled(DomainError):
    status_code = 429
    type = "rate_limit_error"
    code = "rate_limited"

    def __init__(self, seconds: int):
        super().__init__(throttle.second_factor_refused_message(seconds))
        self.retry_after = seconds


def reauth_fresh(request: HttpRequest) -> bool:
    """Whether this session's user proved it is them within the last REAUTH_SECONDS."""
    proved_at = request.session.get(SESSION_KEY)
    return isinstance(proved_at, int | float) and 0 <= time.time() - proved_at <= REAUTH_SECONDS


def reauth_check(request: HttpRequest, *, user: User, password: str = "", code: str = "") -> str:
    """Let a change to `user`'s sign-in go ahead, or raise. Returns how it was proven: "session" (a proof within
    REAUTH_SECONDS, and nothing typed now), "password", "totp" or "recovery". A code is tried only for a user with
    a second factor; both typed: either one right is enough."""
    password, code = password or "", (code or "").strip()
    if not password and not code:
        if reauth_fresh(request):
            return "session"
        raise ProofRequired()
    ip = client_ip(request)
    wait = throttle.second_factor_attempt(user_id=user.pk, ip=ip)
    if wait:
        raise ProofThrottled(wait)
    method = None
    if code and twofactor.user_has_second_factor(user):
        method = twofactor.second_factor_verify(request, user=user, code=code)
    if method is None and password and user.check_password(password):
        method = "password"
    if method is None:
        audit_record_for_user(request, user=user, action=AccountEvent.Action.SIGN_IN_FAILED,
                              reason="wrong password or code to confirm a change to the sign-in")
        raise ProofRefused()
    throttle.second_factor_succeeded(user_id=user.pk, ip=ip)
    request.session[SESSION_KEY] = time.time()
    return method


def reauth_forget(request: HttpRequest) -> None:
    request.session.pop(SESSION_KEY, None)
