"""API authentication: HTTP Basic (public key as user, secret as password) or x-api-key + x-api-secret."""

from __future__ import annotations

import base64
import binascii
import logging
import re

from django.conf import settings
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from config.errors import AccountSuspended, InvalidApiKey, KycNotApproved, RateLimited
from integrations import keys, ratelimit
from integrations.models import ApiKey
from integrations.services import apikey_touch

logger = logging.getLogger(__name__)


PUBLIC_KEY_PATTERN = re.compile(rf"pk_(test|live)_[0-9A-Za-z]{{{keys.PUBLIC_KEY_LENGTH}}}")


class ApiClient:
    """The `request.user` of an API request: the merchant's server, not a person."""

    is_authenticated = True
    is_anonymous = False
    is_staff = False

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key

    def __str__(self) -> str:
        return f"api:{self.api_key.public_key}"


def client_ip(request: Request) -> str:
    """The caller's address. Behind TRUSTED_PROXY_COUNT proxies (the load balancer) it is the entry that many places
    from the right of X-Forwarded-For: entries further left were written by the client and prove nothing."""
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "")


def _basic_credentials(header: str) -> tuple[str, str]:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        raise InvalidApiKey("The Authorization header must be: Basic base64(PUBLIC_KEY:SECRET_KEY)")
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidApiKey("The Authorization header must be: Basic base64(PUBLIC_KEY:SECRET_KEY)") from exc
    public_key, sep, secret_key = decoded.partition(":")
    if not sep or not public_key or not secret_key:
        raise InvalidApiKey("The Authorization header must be: Basic base64(PUBLIC_KEY:SECRET_KEY)")
    return public_key, secret_key


def read_credentials(request: Request) -> tuple[str, str] | None:
    """The key pair the request carries, in either form; both forms must then name the same pair."""
    header = request.META.get("HTTP_AUTHORIZATION")
    header_key = request.META.get("HTTP_X_API_KEY")
    header_secret = request.META.get("HTTP_X_API_SECRET")
    basic = _basic_credentials(header) if header else None
    pair = None
    if header_key is not None or header_secret is not None:
        if not header_key or not header_secret:
            raise InvalidApiKey("Send both x-api-key and x-api-secret")
        pair = (header_key, header_secret)
    if basic and pair and basic != pair:
        raise InvalidApiKey("The Authorization header and the x-api-key headers name different key pairs")
    return basic or pair


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[ApiClient, ApiKey] | None:
        ip = client_ip(request)
        if ratelimit.auth_failures_exceeded(ip):
            raise RateLimited("Too many failed authentications from this address; retry in a minute",
                              headers={"Retry-After": str(ratelimit.AUTH_FAILURE_WINDOW)})
        try:
            credentials = read_credentials(request)
            if credentials is None:
                return None
            api_key = self._verified_key(*credentials)
        except InvalidApiKey:
            ratelimit.auth_failure_record(ip)
            raise
        merchant = api_key.merchant
        if merchant.is_suspended:
            raise AccountSuspended()
        if api_key.livemode and not merchant.kyc_approved:
            raise KycNotApproved()
        apikey_touch(api_key=api_key)
        return ApiClient(api_key), api_key

    def _verified_key(self, public_key: str, secret_key: str) -> ApiKey:
        # Only what looks like a public key reaches the database: a client that swapped its pair must not put its
        # secret into a query (and from there into a database server's statement log).
        shaped = PUBLIC_KEY_PATTERN.fullmatch(public_key) is not None
        api_key = ApiKey.objects.select_related("merchant").filter(public_key=public_key).first() if shaped else None
        # Compare against a digest even for an unknown key, so timing does not tell which public keys exist.
        digest = api_key.secret_digest if api_key else "0" * 64
        if not keys.secret_matches(secret_key, digest) or api_key is None or api_key.revoked_at is not None:
            # Only something shaped like a public key is logged: a client that swapped the pair must not leak it.
            shown = public_key if shaped else "(not a public key)"
            logger.info("api.authentication_failed", extra={"public_key": shown})
            raise InvalidApiKey()
        # A public key of one mode with a secret of the other cannot match (the pair is generated together), so the
        # mode is the key's own.
        return api_key

    def authenticate_header(self, request: Request) -> str:
        return 'Basic realm="api"'
