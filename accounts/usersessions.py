"""A member's signed-in sessions: the list the sessions page shows (device, IP, last seen), and ending them.

Django keeps the sessions; this keeps one row per signed-in session beside it, written at sign-in and touched at most
once a minute by `SessionTrackingMiddleware`. Ending a session deletes Django's session (the browser is signed out at
its next request) and the row."""

from __future__ import annotations

import datetime
import time
from importlib import import_module

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.contrib.sessions.backends.base import SessionBase
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone

from accounts.audit import request_origin
from accounts.models import User, UserSession

TOUCH_EVERY = datetime.timedelta(minutes=1)
SEEN_AT = "seen_at"  # in the session: when this session's row was last touched


def _store(session_key: str) -> SessionBase:
    return import_module(settings.SESSION_ENGINE).SessionStore(session_key=session_key)


def session_track(request: HttpRequest) -> None:
    """Record (or touch) the request's session for its signed-in user."""
    user, key = request.user, request.session.session_key
    if not key or not getattr(user, "is_authenticated", False):
        return
    now = timezone.now()
    updated = UserSession.objects.filter(session_key=key, user=user, last_seen__lt=now - TOUCH_EVERY).update(
        last_seen=now, **request_origin(request))
    if not updated and not UserSession.objects.filter(session_key=key).exists():
        UserSession.objects.create(session_key=key, user=user, last_seen=now, **request_origin(request))


@receiver(user_logged_in, dispatch_uid="accounts.usersessions.session_signed_in")
def session_signed_in(sender, request: HttpRequest, user: User, **kwargs) -> None:
    """Plumbing, not business logic: a new signed-in session is listed from its first moment."""
    if request is None or not hasattr(request, "session"):
        return
    if request.session.session_key is None:
        request.session.save()
    UserSession.objects.update_or_create(session_key=request.session.session_key, defaults={
        "user": user, "last_seen": timezone.now(), **request_origin(request)})
    request.session[SEEN_AT] = time.time()


def session_list(*, user: User) -> list[UserSession]:
    return list(UserSession.objects.filter(user=user).order_by("-last_seen"))


def session_end(*, user: User, session_key: str) -> bool:
    row = UserSession.objects.filter(user=user, session_key=session_key).first()
    if row is None:
        return False
    _store(row.session_key).delete()
    row.delete()
    return True


def sessions_end_all(*, user: User, keep: str | None = None) -> int:
    """End every session of the user but `keep` (the caller's own, when it stays)."""
    ended = 0
    for row in UserSession.objects.filter(user=user).exclude(session_key=keep or ""):
        _store(row.session_key).delete()
        row.delete()
        ended += 1
    return ended
