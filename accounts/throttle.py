"""Brute-force limits for the dashboard's log-in and password-reset forms, counted in the shared cache.

An attempt is counted before the password is checked, so parallel guesses cannot slip past the limit between the
check and the count; a successful log-in takes its attempt back. Past a limit the email or IP is locked for a fixed
time, and a locked attempt is refused without checking the password at all. Counters use `cache.add` + `cache.incr`
(atomic on Redis across processes); emails are hashed in the keys, so the cache holds no addresses.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass

from django.core.cache import cache
from django.utils.translation import gettext, ngettext
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rule:
    name: str
    attempts: int  # allowed within the window; the next one is refused and locks
    window: int  # seconds; also how long the lock lasts


# Knowing an e-mail must not be enough to lock its owner out: the tight limit counts an account's failures from one
# IP; from elsewhere the owner still signs in. Only a spread-out attack (many IPs) reaches the account's own limit,
# which a password reset lifts. The account+IP counters live under the account's "epoch", which a reset moves on.
LOGIN_PER_EMAIL = Rule("login:email-ip", attempts=5, window=15 * 60)
LOGIN_PER_ACCOUNT = Rule("login:email", attempts=50, window=60 * 60)
LOGIN_PER_IP = Rule("login:ip", attempts=20, window=15 * 60)
# The second step of a sign-in (a TOTP or recovery code), per account and per IP.
SECOND_FACTOR_PER_USER = Rule("2fa:user", attempts=5, window=15 * 60)
SECOND_FACTOR_PER_IP = Rule("2fa:ip", attempts=20, window=15 * 60)
RESET_PER_IP = Rule("reset:ip", attempts=5, window=60 * 60)
RESET_PER_EMAIL = Rule("reset:email", attempts=3, window=60 * 60)  # nobody's mailbox is flooded with reset links


def _subject(value: str) -> str:
    return hashlib.sha256(value.strip().lower().encode()).hexdigest()[:32]


def _count_key(rule: Rule, subject: str) -> str:
    return f"throttle:{rule.name}:{subject}"


def _lock_key(rule: Rule, subject: str) -> str:
    return f"throttle:{rule.name}:{subject}:lock"


def _seconds_left(deadline: float | None) -> int | None:
    if deadline is None:
        return None
    return max(1, math.ceil(deadline - time.time()))


def _incr(key: str, window: int) -> int:
    cache.add(key, 0, timeout=window)  # the window starts at the first attempt
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window)
        return 1


def _attempt(checks: list[tuple[Rule, str]]) -> int | None:
    """Count one attempt against each (rule, subject); the seconds to wait if any refuses it, else None."""
    checks = [(rule, _subject(value)) for rule, value in checks if value]
    try:
        locks = cache.get_many([_lock_key(rule, subject) for rule, subject in checks])
        if locks:
            return max(_seconds_left(deadline) for deadline in locks.values())
        waits = []
        for rule, subject in checks:
            if _incr(_count_key(rule, subject), rule.window) > rule.attempts:
                # `add`: of two attempts that overflow together, the first sets the deadline, the second reads it.
                cache.add(_lock_key(rule, subject), time.time() + rule.window, timeout=rule.window)
                waits.append(_seconds_left(cache.get(_lock_key(rule, subject))) or rule.window)
                logger.warning("throttle.locked", extra={"rule": rule.name})
        return max(waits) if waits else None
    except RedisError:
        # The dashboard stays usable while the cache is away; the API, which fails closed, is the bigger target.
        logger.exception("throttle.unavailable")
        return None


def _epoch(email: str) -> str:
    return str(cache.get(f"throttle:epoch:{_subject(email)}") or 0)


def _email_ip(email: str, ip: str) -> str:
    return f"{email.strip().lower()}|{_epoch(email)}|{ip}"


def login_attempt(*, email: str, ip: str) -> int | None:
    """Call before checking a password: None to go ahead, or the seconds the email (from this IP), the email
    (everywhere) or the IP stays locked."""
    try:
        email_ip = _email_ip(email, ip)
    except RedisError:
        logger.exception("throttle.unavailable")
        return None
    return _attempt([(LOGIN_PER_EMAIL, email_ip), (LOGIN_PER_ACCOUNT, email), (LOGIN_PER_IP, ip)])


def second_factor_attempt(*, user_id: int, ip: str) -> int | None:
    """Call before checking a second-factor code: None to go ahead, or the seconds the account or IP stays locked."""
    return _attempt([(SECOND_FACTOR_PER_USER, f"user:{user_id}"), (SECOND_FACTOR_PER_IP, ip)])


def second_factor_succeeded(*, user_id: int, ip: str) -> None:
    """A right code: the account's failures are forgotten, and the IP gets back the attempt counted before the check,
    so only wrong codes count toward the IP's limit (an office signs many people in from one address)."""
    try:
        cache.delete(_count_key(SECOND_FACTOR_PER_USER, _subject(f"user:{user_id}")))
        if ip:
            cache.decr(_count_key(SECOND_FACTOR_PER_IP, _subject(ip)))
    except ValueError:
        pass  # the IP's window ended meanwhile
    except RedisError:
        logger.exception("throttle.unavailable")


def login_succeeded(*, email: str, ip: str) -> None:
    """The email's failures are forgotten; the IP gets back the attempt that succeeded (an office behind one address
    logs in many times a day)."""
    try:
        cache.delete_many([_count_key(LOGIN_PER_EMAIL, _subject(_email_ip(email, ip))),
                           _count_key(LOGIN_PER_ACCOUNT, _subject(email))])
        if ip:
            cache.decr(_count_key(LOGIN_PER_IP, _subject(ip)))
    except ValueError:
        pass  # the IP's window ended meanwhile
    except RedisError:
        logger.exception("throttle.unavailable")


def login_unlock(*, email: str) -> None:
    """A password reset proves the owner holds the mailbox: their email is no longer locked, from any IP (the IPs'
    own locks stay). The account+IP counters are left behind under the old epoch, to expire."""
    subject = _subject(email)
    epoch_key = f"throttle:epoch:{subject}"
    try:
        cache.delete_many([_count_key(LOGIN_PER_ACCOUNT, subject), _lock_key(LOGIN_PER_ACCOUNT, subject)])
        cache.set(epoch_key, time.time_ns(), timeout=LOGIN_PER_EMAIL.window)
    except RedisError:
        logger.exception("throttle.unavailable")


def password_reset_attempt(*, email: str, ip: str) -> int | None:
    return _attempt([(RESET_PER_IP, ip), (RESET_PER_EMAIL, email)])


def wait_text(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return ngettext("%(minutes)s minute", "%(minutes)s minutes", minutes) % {"minutes": minutes}


# In the active language: the dashboard's forms show them.
def login_refused_message(seconds: int) -> str:
    return gettext("Too many failed attempts; try again in %(wait)s or reset your password.") % {
        "wait": wait_text(seconds)}


def second_factor_refused_message(seconds: int) -> str:
    return gettext("Too many wrong codes; try again in %(wait)s.") % {"wait": wait_text(seconds)}


def password_reset_refused_message(seconds: int) -> str:
    return gettext("Too many reset requests; try again in %(wait)s.") % {"wait": wait_text(seconds)}
