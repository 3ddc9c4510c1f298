"""The error types of the API and the one body they are rendered in (SPEC §1.1).

Every error the public API returns, from a service, from DRF or from Django itself, leaves through `error_body`.
This module imports nothing of DRF's views, so authentication classes can use it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.utils.functional import Promise, lazy
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.settings import api_settings

from core.logging import request_id_var

logger = logging.getLogger(__name__)


# A request whose every problem is of one kind gets that kind's error class (and so its top-level code), so a client
# can branch on `code` alone; any mix is a plain `validation_error`, with each problem's own code in `details`. Filled
# by the classes that set `validation_kind` (each app's errors sit beside its services; its AppConfig imports them).
_SINGLE_KIND_ERRORS: dict[str, type[DomainError]] = {}


# --- Errors ----------------------------------------------------------------------------------------------------------
class DomainError(exceptions.APIException):
    """A business rule said no. Subclasses declare the stable `code`, the human `message` and the HTTP status.

    A subclass that sets `validation_kind = True` names a kind of field problem: a request whose every problem has
    its code is reported as that error (see `validation_error`)."""

    status_code = 400
    type = "invalid_request_error"
    code = "invalid_request"
    message = "Invalid request"
    validation_kind = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("validation_kind"):
            _SINGLE_KIND_ERRORS[cls.code] = cls

    def __init__(self, message: str | None = None, *, param: str | None = None, details: list | None = None,
                 headers: dict | None = None):
        self.message = message or self.message
        self.param = param
        self.details = details or []
        self.headers = headers or {}
        super().__init__(detail=self.message, code=self.code)


class ValidationFailed(DomainError):
    code = "validation_error"
    message = "The request has invalid fields"


class UnknownField(DomainError):
    code = "unknown_field"
    message = "The request has unknown fields"
    validation_kind = True


class MalformedJson(DomainError):
    code = "malformed_json"
    message = "The request body is not valid JSON"


class AuthenticationRequired(DomainError):
    status_code = 401
    type = "authentication_error"
    code = "authentication_required"
    message = "Authentication required: send your API key pair with HTTP Basic or x-api-key and x-api-secret"


class InvalidApiKey(DomainError):
    status_code = 401
    type = "authentication_error"
    code = "invalid_api_key"
    message = "Invalid API key"


class ApiKeyRevoked(DomainError):
    """The right secret of a key pair that was revoked: told apart from a mistyped pair, so the integrator looks for
    the new pair instead of for a typo. Only a request that proves the secret hears it (a guess stays
    invalid_api_key)."""

    status_code = 401
    type = "authentication_error"
    code = "api_key_revoked"
    message = "This API key pair was revoked"


class KycNotApproved(DomainError):
    status_code = 403
    type = "permission_error"
    code = "kyc_not_approved"
    message = "Live keys work once the account's KYC is approved; use your test keys until then"


class AccountSuspended(DomainError):
    status_code = 403
    type = "permission_error"
    code = "account_suspended"
    message = "This account is suspended; contact support"


class PermissionRefused(DomainError):
    status_code = 403
    type = "permission_error"
    code = "permission_denied"
    message = "You do not have permission to do this"


class NotFound(DomainError):
    status_code = 404
    type = "not_found"
    code = "not_found"
    message = "Not found"


class MethodNotAllowed(DomainError):
    status_code = 405
    code = "method_not_allowed"
    message = "Method not allowed"


class InvalidState(DomainError):
    status_code = 409
    type = "conflict"
    code = "invalid_state"
    message = "The object is not in a state that allows this"


class PayloadTooLarge(DomainError):
    status_code = 413
    code = "payload_too_large"
    message = "Request bodies are limited to 64 KiB"


class UnsupportedMediaType(DomainError):
    status_code = 415
    code = "unsupported_media_type"
    message = "Send the body as Content-Type: application/json"


class RateLimited(DomainError):
    status_code = 429
    type = "rate_limit_error"
    code = "rate_limited"
    message = "Too many requests"


class InternalError(DomainError):
    status_code = 500
    type = "api_error"
    code = "internal_error"
    message = "Something went wrong on our side; it has been logged"


class ServiceUnavailable(DomainError):
    status_code = 503
    type = "api_error"
    code = "service_unavailable"
    message = "The service is unavailable"


def _plain(value: Any) -> Any:
    """`value` with every lazy translation rendered as a str (in the active language: English in the API), so that
    the body can be stored as JSON (an idempotent response) as well as sent."""
    if isinstance(value, Promise):
        return str(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def lazy_format(message: str, **values: Any) -> str:
    """`message % values`, translated when it is used rather than now: for messages built at import time from a
    `gettext_lazy` msgid with named placeholders (formatting a lazy string with % would translate it at once)."""
    return _lazy_percent(message, values)


_lazy_percent = lazy(lambda message, values: str(message) % values, str)


def error_body(error: DomainError) -> dict:
    return {
        "error": {
            "type": error.type,
            "code": error.code,
            "message": _plain(error.message),
            "param": error.param,
            "details": _plain(error.details),
            "requestId": request_id_var.get(),
        }
    }


def flatten_errors(errors: Any, path: str = "") -> list[dict]:
    """DRF's nested error structure as the SPEC's flat `details`: one item per problem, dotted `param` paths."""
    if isinstance(errors, dict):
        items = []
        for key, value in errors.items():
            sub = path if key in ("non_field_errors", api_settings.NON_FIELD_ERRORS_KEY) else (
                f"{path}.{key}" if path else str(key))
            items.extend(flatten_errors(value, sub))
        return items
    if isinstance(errors, list):
        if all(isinstance(e, exceptions.ErrorDetail | str) for e in errors):
            return [{"param": path or None, "code": getattr(e, "code", "invalid"), "message": str(e)} for e in errors]
        items = []
        for index, value in enumerate(errors):
            if value:
                items.extend(flatten_errors(value, f"{path}.{index}" if path else str(index)))
        return items
    return [{"param": path or None, "code": getattr(errors, "code", "invalid"), "message": str(errors)}]


def validation_error(details: list[dict]) -> DomainError:
    codes = {d["code"] for d in details}
    single_kind = _SINGLE_KIND_ERRORS.get(codes.pop()) if len(codes) == 1 else None
    error_class = single_kind or ValidationFailed
    return error_class(param=details[0]["param"] if len(details) == 1 else None, details=details)


def as_domain_error(exc: Exception) -> DomainError:
    """Translate whatever was raised into the one error type the API renders."""
    if isinstance(exc, DomainError):
        return exc
    if isinstance(exc, exceptions.ValidationError):
        return validation_error(flatten_errors(exc.detail))
    if isinstance(exc, exceptions.ParseError):
        return MalformedJson()
    if isinstance(exc, exceptions.NotAuthenticated):
        return AuthenticationRequired()
    if isinstance(exc, exceptions.AuthenticationFailed):
        return InvalidApiKey()
    if isinstance(exc, exceptions.PermissionDenied | DjangoPermissionDenied):
        return PermissionRefused()
    if isinstance(exc, exceptions.NotFound | Http404):
        return NotFound()
    if isinstance(exc, exceptions.MethodNotAllowed):
        return MethodNotAllowed()
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return UnsupportedMediaType()
    if isinstance(exc, exceptions.Throttled):
        return RateLimited(headers={"Retry-After": str(int(exc.wait or 1))})
    if isinstance(exc, exceptions.APIException):
        error = DomainError(str(exc.detail))
        error.status_code = exc.status_code
        return error
    return InternalError()


def exception_handler(exc: Exception, context: dict) -> Response:
    error = as_domain_error(exc)
    if isinstance(error, InternalError) and not isinstance(exc, InternalError):
        logger.exception("api.unhandled_exception", extra={"exception_type": type(exc).__name__})
    headers = dict(error.headers)
    if isinstance(error, AuthenticationRequired | InvalidApiKey | ApiKeyRevoked):
        headers.setdefault("WWW-Authenticate", 'Basic realm="api"')
    return Response(error_body(error), status=error.status_code, headers=headers)
