"""API authentication: HTTP Basic (public key as user, secret as password) or x-api-key + x-api-secret."""

from __future__ import annotations

import base64
import binascii
import logging
import re
from datetime import UTC
from typing import NoReturn

from django.conf import settings
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from core.errors import AccountSuspended, ApiKeyRevoked, InvalidApiKey, KycNotApproved, RateLimited
from core.requests import client_ip, request_meta
from integrations import authcache, keys, ratelimit
from integrations.models import ApiKey
from integrations.services import apikey_touch

logger = logging.getLogger(__name__)


PUBLIC_KEY_PATTERN = re.compile(rf"pk_(test|live)_[0-9A-Za-z]{{{keys.PUBLIC_KEY_LENGTH}}}")


class ApiClient:
    """The `request.user` of an API request: the merchant's server, not a person.

    `request.auth` (the key pair) and `request.auth.merchant` come from this process's key cache and are shared by
    its requests: read them, never save them. A service that changes the merchant re-reads its row (locked)."""

    is_authenticated = True
    is_anonymous = False
    is_staff = False

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key

    def __str__(self) -> str:
        return f"api:{self.api_key.public_key}"


IP_BLOCKED = "Too many failed authentications from this address; retry in a minute"
KEY_BLOCKED = "Too many failed authentications with this key from this address; retry in a minute"
BASIC_FORMAT = "The Authorization header must be: Basic base64(PUBLIC_KEY:SECRET_KEY)"


def _basic_credentials(header: str) -> tuple[str, str]:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        raise InvalidApiKey(BASIC_FORMAT)
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidApiKey(BASIC_FORMAT) from exc
    public_key, sep, secret_key = decoded.partition(":")
    if not sep or not public_key or not secret_key:
        raise InvalidApiKey(BASIC_FORMAT)
    return public_key, secret_key


def read_credentials(request: Request) -> tuple[str, str] | None:
    """The key pair the request carries, in either form; both forms must then name the same pair."""
    meta = request_meta(request)
    header = meta.get("HTTP_AUTHORIZATION")
    header_key = meta.get("HTTP_X_API_KEY")
    header_secret = meta.get("HTTP_X_API_SECRET")
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
    """Authenticates with one round trip to the shared cache and, for a key pair this process has seen, no database
    query: the cache answers whether this public key is blocked from this IP, counts the request against the key
    pair's rate limit, and says whether the locally cached pair is still current (see integrations.authcache)."""

    def authenticate(self, request: Request) -> tuple[ApiClient, ApiKey] | None:
        ip = client_ip(request)
        try:
            credentials = read_credentials(request)
        except InvalidApiKey as error:
            self._fail_before_lookup(ip, error)
        if credentials is None:
            self._refuse_blocked(ratelimit.ip_blocked(ip))
            return None
        public_key, secret_key = credentials
        # Only what looks like a public key goes further: a client that swapped its pair must not put its secret
        # into a cache key, a query or a log line.
        if PUBLIC_KEY_PATTERN.fullmatch(public_key) is None:
            logger.info("api.authentication_failed", extra={"public_key": "(not a public key)"})
            self._fail_before_lookup(ip, InvalidApiKey())
        gate = ratelimit.gate(ip=ip, public_key=public_key, freshness_key=getattr(request, "freshness_key", None))
        request.freshness = gate.freshness
        if gate.blocked:
            ratelimit.rate_count_release(gate)
            self._refuse_blocked(True, KEY_BLOCKED)
        api_key = self._verified_key(public_key, secret_key, gate)
        if api_key is None or api_key.revoked_at is not None:
            logger.info("api.authentication_failed", extra={
                "public_key": public_key, "reason": "unknown" if api_key is None else "revoked"})
            self._refuse_blocked(ratelimit.auth_failure_record(ip, public_key=public_key, rate_key=gate.rate_key))
            if api_key is None:
                raise InvalidApiKey()
            revoked_at = api_key.revoked_at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            raise ApiKeyRevoked(f"This API key pair was revoked on {revoked_at}; use an active pair (dashboard: "
                                "Integrations)")
        merchant = api_key.merchant
        # Before the merchant checks, so their 403s carry the RateLimit-* headers too.
        request.rate_limit = ratelimit.rate_limit_check(gate, limit=merchant.api_rate_limit or settings.API_RATE_LIMIT)
        if merchant.is_suspended:
            raise AccountSuspended()
        if api_key.livemode and not merchant.kyc_approved:
            raise KycNotApproved()
        apikey_touch(api_key=api_key)
        return ApiClient(api_key), api_key

    def _fail_before_lookup(self, ip: str, error: InvalidApiKey) -> NoReturn:
        """Credentials refused before any key was looked up: it counts, and an IP with too many failures hears 429."""
        self._refuse_blocked(ratelimit.auth_failure_record(ip))
        raise error

    @staticmethod
    def _refuse_blocked(blocked: bool, message: str = IP_BLOCKED) -> None:
        if blocked:
            raise RateLimited(message, headers={"Retry-After": str(ratelimit.AUTH_FAILURE_WINDOW)})

    @staticmethod
    def _verified_key(public_key: str, secret_key: str, gate: ratelimit.Gate) -> ApiKey | None:
        api_key = authcache.get(public_key, version=gate.version) if gate.version is not None else None
        if api_key is None:
            api_key = ApiKey.objects.select_related("merchant").filter(public_key=public_key).first()
            if api_key is not None and gate.version is None:
                # No token yet (a new pair, an expired token, a flushed Redis): give it one and cache nothing now, so
                # no entry can ever match an absent token that a later change could not move.
                ratelimit.version_ensure(public_key)
            elif api_key is not None:
                authcache.put(api_key, version=gate.version)
        # Compare against a digest even for an unknown key, so timing does not tell which public keys exist. A revoked
        # pair is returned (the caller refuses it, naming the revocation) only to a request that knows its secret.
        digest = api_key.secret_digest if api_key else "0" * 64
        if not keys.secret_matches(secret_key, digest) or api_key is None:
            return None
        return api_key

    def authenticate_header(self, request: Request) -> str:
        return 'Basic realm="api"'
