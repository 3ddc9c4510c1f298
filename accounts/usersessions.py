"""A member's signed-in sessions: the list the sessions page shows (device, IP, last seen), and ending them.

Django keeps the sessions; this keeps one row per signed-in session beside it, written at sign-in and touched at most
once a minute by `SessionTrackingMiddleware`. Ending a session deletes Django's session (the browser is signed out at
its next request) and the row. Pages name a session by `session_public_id` (an HMAC of its key), never by the key:
whoever reads a key can sign in as that session."""

from __future__ import annotations

import datetime
import hmac
import time
from importlib import import_module

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.contrib.sessions.backends.base import SessionBase
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone
from django.utils.crypto import salted_hmac

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


def session_public_id(session_key: str) -> str:
    """The opaque name of a session on pages and in forms: it tells nothing of the key, and only its user's own
    request can end the session it names."""
    return salted_hmac("accounts.usersessions.session_public_id", session_key).hexdigest()[:32]


def session_list(*, user: User, current_key: str | None = None) -> list[UserSession]:
    """The user's sessions, last seen first, each with its `public_id` and `is_current` (the session asking)."""
    rows = list(UserSession.objects.filter(user=user).order_by("-last_seen"))
    for row in rows:
        row.public_id = session_public_id(row.session_key)
        row.is_current = row.session_key == current_key
    return rows


def session_end(*, user: User, session_id: str) -> bool:
    """End the user's session named `session_id` (its public id); False when no session of theirs has it."""
    row = next((row for row in UserSession.objects.filter(user=user)
                if hmac.compare_digest(session_public_id(row.session_key), session_id)), None)
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
