"""API key pairs: `Authorization: Basic base64(public:secret)` or `x-api-key` / `x-api-secret`. The public key finds
the row; the secret is checked against its stored HMAC-SHA256 digest in constant time, on every request."""

import base64
import binascii
import hashlib
import hmac
import secrets
import string
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from .models import ApiKey

BASE62 = string.ascii_letters + string.digits


def secret_digest(secret_key: str) -> str:
    return hmac.new(settings.API_KEY_DIGEST_KEY.encode(), secret_key.encode(), hashlib.sha256).hexdigest()


def generate_pair(livemode: bool = False) -> tuple[str, str]:
    mode = "live" if livemode else "test"
    public = f"pk_{mode}_" + "".join(secrets.choice(BASE62) for _ in range(24))
    secret = f"sk_{mode}_" + "".join(secrets.choice(BASE62) for _ in range(48))
    return public, secret


class InvalidApiKey(exceptions.AuthenticationFailed):
    default_code = "invalid_api_key"
    default_detail = "Invalid API key."


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        pair = self._credentials(request)
        if pair is None:
            return None
        public_key, secret_key = pair
        try:
            key = ApiKey.objects.select_related("merchant").get(public_key=public_key, revoked_at__isnull=True)
        except ApiKey.DoesNotExist:
            raise InvalidApiKey() from None
        if not hmac.compare_digest(key.secret_digest, secret_digest(secret_key)):
            raise InvalidApiKey()
        merchant = key.merchant
        if merchant.suspended:
            raise exceptions.PermissionDenied("The account is suspended.", code="account_suspended")
        if key.livemode and merchant.kyc_status != merchant.KycStatus.APPROVED:
            raise exceptions.PermissionDenied("KYC is not approved.", code="kyc_not_approved")
        now = timezone.now()
        if key.last_used_at is None or now - key.last_used_at > timedelta(minutes=1):
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return merchant, key

    def _credentials(self, request):
        basic = None
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "basic":
                raise InvalidApiKey()
            try:
                public, _, secret = base64.b64decode(token, validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                raise InvalidApiKey() from None
            basic = (public, secret)
        headers = None
        if "HTTP_X_API_KEY" in request.META or "HTTP_X_API_SECRET" in request.META:
            headers = (request.META.get("HTTP_X_API_KEY", ""), request.META.get("HTTP_X_API_SECRET", ""))
        if basic and headers and basic != headers:
            raise InvalidApiKey()
        pair = basic or headers
        if pair is not None and not (pair[0] and pair[1]):
            raise InvalidApiKey()
        return pair

    def authenticate_header(self, request):
        return 'Basic realm="api"'


class HasApiKey(BasePermission):
    def has_permission(self, request, view):
        return request.auth is not None
