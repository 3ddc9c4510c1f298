"""Error reporting to Sentry when SENTRY_DSN is set (settings.py calls `sentry_init`; imports no Django setting).

Nothing that identifies a payer or opens an account may leave for a third party: no request bodies (card numbers,
CVVs, documents), no cookies, no Authorization or API-key headers, no local variables of frames, and any run of
digits that looks like a card number in a message is masked. `event_scrub` is the `before_send` and
`before_send_transaction` hook doing it, so a new integration's data passes through it too.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import sentry_sdk

from core.logging import CREDENTIAL_PREFIXES

REDACTED = "[redacted]"
# Headers whose value opens an account or a session; compared lower-case.
SECRET_HEADERS = frozenset({"authorization", "cookie", "set-cookie", "x-api-key", "x-api-secret", "proxy-authorization",
                            "webhook-signature", "x-csrftoken"})
# Keys whose values are secrets or card data wherever they appear (extra, contexts, breadcrumbs' data, tags).
SECRET_KEY_PATTERN = re.compile(r"secret|password|passwd|token|authorization|api[_-]?key|cookie|session|csrf|card|"
                                r"cvv|cvc|number|document|dsn", re.IGNORECASE)
# 13 to 19 digits, optionally grouped by spaces or dashes: a card number (a CPF has 11, a CNPJ 14, masked too).
DIGITS_PATTERN = re.compile(r"\b(?:\d[ -]?){10,18}\d\b")


def sentry_init(*, dsn: str, environment: str) -> None:
    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        send_default_pii=False,
        include_local_variables=False,
        max_request_body_size="never",
        before_send=event_scrub,
        before_send_transaction=event_scrub,
        before_breadcrumb=breadcrumb_scrub,
        traces_sample_rate=0.0,
    )


def event_scrub(event: dict[str, Any], hint: dict[str, Any] | None = None) -> dict[str, Any]:
    request = event.get("request")
    if isinstance(request, dict):
        request.pop("data", None)
        request.pop("cookies", None)
        if "query_string" in request:
            request["query_string"] = REDACTED
        headers = request.get("headers")
        if isinstance(headers, dict):
            request["headers"] = {name: REDACTED if name.lower() in SECRET_HEADERS else _scrub(value)
                                  for name, value in headers.items()}
        if isinstance(request.get("url"), str):
            request["url"] = _mask(url_redact(request["url"]))
    for key in ("extra", "contexts", "tags"):
        if key in event:
            event[key] = _scrub(event[key])
    for exception in (event.get("exception") or {}).get("values") or []:
        if isinstance(exception.get("value"), str):
            exception["value"] = _mask(exception["value"])
        for frame in (exception.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)
    for thread in (event.get("threads") or {}).get("values") or []:
        for frame in (thread.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)
    logentry = event.get("logentry")
    if isinstance(logentry, dict):
        for key in ("message", "formatted"):
            if isinstance(logentry.get(key), str):
                logentry[key] = _mask(logentry[key])
        logentry["params"] = _scrub(logentry.get("params") or [])
    if isinstance(event.get("message"), str):
        event["message"] = _mask(event["message"])
    breadcrumbs = event.get("breadcrumbs")
    if isinstance(breadcrumbs, dict):
        breadcrumbs["values"] = [breadcrumb_scrub(crumb) for crumb in breadcrumbs.get("values") or []]
    return event


def url_redact(url: str) -> str:
    """A URL whose path carries a credential (the hosted page's token, a password reset's) keeps only the prefix."""
    parts = urlsplit(url)
    for prefix in CREDENTIAL_PREFIXES:
        if parts.path.startswith(prefix) and parts.path != prefix:
            return urlunsplit((parts.scheme, parts.netloc, prefix + REDACTED, "", ""))
    return url


def breadcrumb_scrub(crumb: dict[str, Any], hint: dict[str, Any] | None = None) -> dict[str, Any]:
    if isinstance(crumb.get("message"), str):
        crumb["message"] = _mask(crumb["message"])
    if "data" in crumb:
        crumb["data"] = _scrub(crumb["data"])
    return crumb


def _mask(text: str) -> str:
    return DIGITS_PATTERN.sub(REDACTED, text)


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: REDACTED if isinstance(key, str) and SECRET_KEY_PATTERN.search(key) else _scrub(item)
                for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(item) for item in value]
    if isinstance(value, str):
        return _mask(value)
    return value
