"""Request-wide plumbing: the request id, the Api-Version header, and the SPEC's error body for errors that never
reach a DRF view (unknown paths, oversized or non-JSON bodies, crashes outside a view)."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.locale import LocaleMiddleware
from django.urls import Resolver404, resolve
from django.utils import translation

from core import errors as api
from core.logging import ACCESS_LOG_PATH, loggable_path, request_id_var

logger = logging.getLogger("api.request")

REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,64}")
# Paths that serve HTML to people; everything else is the JSON API and answers errors in the SPEC's shape.
HTML_PREFIXES = ("/dashboard/", "/admin/", "/static/", "/media/", "/pay/", "/docs")
BODY_METHODS = {"POST", "PUT", "PATCH"}
API_LANGUAGE = "en"


def is_api_path(path: str) -> bool:
    return path != "/" and not path.startswith(HTML_PREFIXES)


def json_error_response(error: api.DomainError) -> HttpResponse:
    response = HttpResponse(json.dumps(api.error_body(error), separators=(",", ":")), status=error.status_code,
                            content_type="application/json")
    for name, value in error.headers.items():
        response[name] = value
    return response


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-Id", "")
        request_id = incoming if REQUEST_ID_PATTERN.fullmatch(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-Id"] = request_id
            response["Api-Version"] = settings.API_VERSION
            path = loggable_path(request)  # never a credential the URL carries (the hosted page's token)
            request.META[ACCESS_LOG_PATH] = path  # the same path for the web server's access log (gunicorn.conf.py)
            if logger.isEnabledFor(logging.INFO):  # off in production-like runs (LOG_LEVEL=WARNING)
                logger.info("%s %s %s", request.method, path, response.status_code, extra={
                    "method": request.method, "path": path, "status": response.status_code,
                    "durationMs": round((time.perf_counter() - started) * 1000, 2),
                })
            return response
        finally:
            request_id_var.reset(token)


_ERROR_FOR_STATUS: dict[int, type[api.DomainError]] = {
    401: api.AuthenticationRequired,
    403: api.PermissionRefused,
    404: api.NotFound,
    405: api.MethodNotAllowed,
    413: api.PayloadTooLarge,
    415: api.UnsupportedMediaType,
    429: api.RateLimited,
    500: api.InternalError,
    503: api.ServiceUnavailable,
}


def body_limit(path: str) -> int:
    """The most bytes a request to `path` may send: API_MAX_BODY_BYTES, or more where a view's largest valid body can
    take more as JSON (its `max_body_bytes`: the dispute evidence's 20,000 characters are up to 240 KB written as
    \\u escapes). Looked up only for a body over the default limit."""
    try:
        view = resolve(path).func
    except Resolver404:
        return settings.API_MAX_BODY_BYTES
    return getattr(getattr(view, "cls", None), "max_body_bytes", settings.API_MAX_BODY_BYTES)


class ApiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api_path(request.path):
            return self.get_response(request)
        refusal = self.refuse_body(request)
        if refusal is not None:
            return json_error_response(refusal)
        response = self.get_response(request)
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith("application/json"):
            error_class = _ERROR_FOR_STATUS.get(response.status_code)
            error = error_class() if error_class else api.DomainError("Bad request")
            error.status_code = response.status_code
            replacement = json_error_response(error)
            # Only the body changes: every header the inner middleware gave the page (X-Frame-Options, Allow,
            # Retry-After, Vary, ...) stays, but those that describe the HTML it replaces.
            for header, value in response.items():
                if not header.lower().startswith("content-"):
                    replacement[header] = value
            return replacement
        return response

    def refuse_body(self, request: HttpRequest) -> api.DomainError | None:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return api.DomainError("Invalid Content-Length")
        if length > settings.API_MAX_BODY_BYTES:
            limit = body_limit(request.path_info)
            if length > limit:
                return api.PayloadTooLarge(f"Request bodies are limited to {limit // 1024} KiB")
        if request.method in BODY_METHODS and length > 0:
            content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
            form_allowed = request.path_info.startswith(tuple(settings.API_FORM_BODY_PREFIXES))
            if content_type != "application/json" and not (
                    form_allowed and content_type in ("application/x-www-form-urlencoded", "multipart/form-data")):
                return api.UnsupportedMediaType()
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_path(request.path):
            return None
        if isinstance(exception, Http404 | PermissionDenied):  # a plain Django view's 404/403, not a crash
            return json_error_response(api.as_domain_error(exception))
        logger.exception("api.unhandled_exception", extra={"exception_type": type(exception).__name__})
        return json_error_response(api.InternalError())


class LanguageMiddleware(LocaleMiddleware):
    """Django's LocaleMiddleware (the language switch's cookie, then the browser's Accept-Language, then pt-BR) for
    the pages people read. The JSON API is a contract in English whatever the client's locale: DRF's and Django's
    own messages must not change with an Accept-Language header."""

    def process_request(self, request: HttpRequest) -> None:
        if is_api_path(request.path):
            translation.activate(API_LANGUAGE)
            request.LANGUAGE_CODE = API_LANGUAGE
            return
        super().process_request(request)

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if is_api_path(request.path):
            return response
        return super().process_response(request, response)


class PagesOnly:
    """For Django's middleware that only the pages people read use: the session, the signed-in user and the flash
    messages. The JSON API authenticates every request by its key and keeps no session, so its requests go straight
    through. Each class below is a subclass of Django's own, in its place in MIDDLEWARE, so Django's checks still
    find it (admin.E408-E410). CSRF stays Django's own on every path: it costs little where views are exempt (DRF's
    are), and a view on an API path that is not exempt is still refused a POST without a token."""

    get_response: Callable[[HttpRequest], HttpResponse]

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api_path(request.path):
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]


class SessionMiddleware(PagesOnly, sessions.SessionMiddleware):
    pass


class AuthenticationMiddleware(PagesOnly, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(PagesOnly, messages.MessageMiddleware):
    pass
