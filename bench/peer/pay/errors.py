"""The SPEC's error body for every DRF exception: {"error": {type, code, message, param, details, requestId}}."""

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found",
         405: "invalid_request_error", 409: "conflict", 415: "invalid_request_error", 422: "idempotency_error",
         429: "rate_limit_error"}
CODES = {"not_authenticated": "authentication_required", "authentication_failed": "invalid_api_key",
         "parse_error": "malformed_json", "method_not_allowed": "method_not_allowed",
         "unsupported_media_type": "unsupported_media_type"}


class ApiError(exceptions.APIException):
    """A domain error with its own status and code: insufficient_balance, duplicate_reference_id, ..."""

    def __init__(self, status_code: int, code: str, message: str, details: list | None = None):
        super().__init__(message, code)
        self.status_code = status_code
        self.details = details or []


def _flatten(detail, prefix=""):
    """DRF's nested error dict/list into the SPEC's details: one item per problem, param as a dotted path."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = prefix if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            yield from _flatten(value, name)
    elif isinstance(detail, list):
        if all(isinstance(item, exceptions.ErrorDetail) for item in detail):
            for item in detail:
                yield {"param": prefix or None, "code": item.code, "message": str(item)}
        else:
            for index, item in enumerate(detail):
                if item:
                    yield from _flatten(item, f"{prefix}.{index}" if prefix else str(index))
    else:
        yield {"param": prefix or None, "code": getattr(detail, "code", "invalid"), "message": str(detail)}


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    request = context["request"]
    request_id = getattr(request._request, "request_id", None)
    code_status = response.status_code
    if isinstance(exc, ApiError):
        code, message, details = exc.detail.code, str(exc.detail), exc.details
    elif isinstance(exc, exceptions.ValidationError):
        details = list(_flatten(exc.detail))
        codes = {item["code"] for item in details}
        code = "unknown_field" if codes == {"unknown_field"} else "validation_error"
        message = "The request is invalid." if len(details) != 1 else details[0]["message"]
    else:
        detail = exc.detail
        raw = getattr(detail, "code", None) or exc.default_code
        code, message, details = CODES.get(raw, raw), str(detail), []
    param = details[0]["param"] if len(details) == 1 else None
    body = {"error": {"type": TYPES.get(code_status, "api_error"), "code": code, "message": message,
                      "param": param, "details": details, "requestId": request_id}}
    if code_status == status.HTTP_403_FORBIDDEN and isinstance(exc, exceptions.NotAuthenticated):
        code_status = status.HTTP_401_UNAUTHORIZED
    return Response(body, status=code_status, headers=dict(response.items()))
