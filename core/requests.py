"""Request plumbing shared by the dashboard and the API: who is calling."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def request_meta(request) -> dict:
    """Django's META, of a Django request or of DRF's Request: the latter reaches Django's attributes through a slow
    __getattr__, and this runs on every API request."""
    return getattr(request, "_request", request).META


def client_ip(request: HttpRequest) -> str:
    """The caller's address. Behind TRUSTED_PROXY_COUNT proxies (the load balancer) it is the entry that many places
    from the right of X-Forwarded-For: entries further left were written by the client and prove nothing."""
    meta = request_meta(request)
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies:
        forwarded = [a.strip() for a in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return meta.get("REMOTE_ADDR", "")
