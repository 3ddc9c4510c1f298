"""OpenAPI generation: every authenticated operation documents the SPEC's error body for each status it can answer,
the headers every response carries, and every POST its Idempotency-Key header.

The schema is the contract that `tests/fuzz` holds the running service to, so it says what the code does: request
bodies are closed (`additionalProperties: false`, as `StrictSerializer` refuses unknown fields), strings refuse the NUL
character (as every DRF CharField does), and a property that takes one value only is its own named component.
"""

from __future__ import annotations

import inspect
from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer
from rest_framework import serializers

from core.api import ApiView, StrictSerializer, VisibleCharField
from core.formats.text import HIDDEN_RANGES


class ErrorDetailSerializer(serializers.Serializer):
    param = serializers.CharField(allow_null=True)
    code = serializers.CharField()
    message = serializers.CharField()


class ErrorBodySerializer(serializers.Serializer):
    type = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()
    param = serializers.CharField(allow_null=True)
    details = ErrorDetailSerializer(many=True)
    requestId = serializers.CharField()


class ErrorResponseSerializer(serializers.Serializer):
    error = ErrorBodySerializer()

    class Meta:
        ref_name = "Error"


# 503: the rate-limit counters (Redis) do not answer, on any authenticated request.
AUTHENTICATED_ERRORS = ("400", "401", "403", "404", "405", "429", "500", "503")
POST_ERRORS = ("409", "413", "415", "422")
# 502: the payment network did not answer an operation that needs it within the request (SPEC §1.1 rail_error).
RAIL_ERRORS = {502: ErrorResponseSerializer}

# DRF's CharField refuses "\0" (PostgreSQL text cannot hold it): every request string says so. One or more
# characters, as drf-spectacular documents a blank-allowed string as `oneOf` this and the empty string.
NO_NUL_PATTERN = "^[^\\u0000]+$"
# And it trims what str.strip() trims before it checks for blank: a non-blank string has another character too.
def _character_ranges(codes: list[int]) -> str:
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)


_WHITESPACE = _character_ranges([code for code in range(0x3001) if chr(code).isspace()])
NON_BLANK_PATTERN = f"^[^\\u0000]*[^\\u0000{_WHITESPACE}][^\\u0000]*$"
# Text a payer reads (core.api.VisibleCharField) refuses every hidden character, not only NUL.
VISIBLE_PATTERN = f"^[^{HIDDEN_RANGES}]+$"
VISIBLE_NON_BLANK_PATTERN = f"^[^{HIDDEN_RANGES}]*[^{HIDDEN_RANGES}{_WHITESPACE}][^{HIDDEN_RANGES}]*$"

# What `integrations.idempotency` accepts once the HTTP layer has stripped the value's surrounding spaces.
IDEMPOTENCY_KEY_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]([ -~]*[!-~])?$"}


# --- List parameters (SPEC §1.4), as `core.api.paginate` and the list views read them ------------------------------
LIMIT_PARAMETER = OpenApiParameter(
    "limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, description="1 to 100, default 20.")
CURSOR_PARAMETER = OpenApiParameter(
    "cursor", str, description="nextCursor of the previous page, as returned: it is opaque, and any other value is "
                               "400 invalid_cursor. Empty or absent: the first page.")


def timestamp_parameter(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(
        name, {"type": "string", "format": "date-time"},
        description=f"RFC 3339 timestamp with a time zone, e.g. 2026-11-20T00:00:00Z; {description}")


# --- Documentation fields --------------------------------------------------------------------------------------------
class Const(serializers.Field):
    """Documentation only: a property that takes exactly `value`, described by a schema component of its own (so
    that variants of one body, each fixing its discriminating property, name their values instead of repeating
    anonymous one-value enums)."""

    def __init__(self, value: Any, *, component: str, **kwargs: Any):
        self.value = value
        self.component = component
        super().__init__(**kwargs)


# A request field may also describe itself: `openapi_schema()`, its JSON schema where DRF's mapping of its base class
# says less than its rule (a pattern); `documented(body, required)`, the field that documents it in a body of variant
# `body` (payments.openapi.request_variant), where its rule depends on another field of the body.


class Documented(serializers.Field):
    """Documentation only: a field described by `schema`, a JSON schema or a serializer (a component, such as a
    `PolymorphicProxySerializer`). Kept through DRF's copying of declared fields, unlike an instance annotation."""

    def __init__(self, schema: dict | serializers.Serializer, **kwargs: Any):
        self.schema = schema
        super().__init__(**kwargs)


def _json_type(value: Any) -> str:
    return "boolean" if isinstance(value, bool) else "integer" if isinstance(value, int) else "string"


# --- Response headers ------------------------------------------------------------------------------------------------
def _header(schema: dict, description: str, *, required: bool = True) -> dict:
    return {"schema": schema, "description": description, "required": required}


ALWAYS_HEADERS = {
    "X-Request-Id": _header({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
                            "The request's id: the X-Request-Id sent, if valid, else a new one."),
    "Api-Version": _header({"type": "string"}, "The API version that answered, e.g. 2026-11-20."),
}
RATE_LIMIT_HEADERS = {
    "RateLimit-Limit": _header({"type": "integer"}, "Requests per second allowed to this key pair."),
    "RateLimit-Remaining": _header({"type": "integer"}, "Requests left in the current second."),
    "RateLimit-Reset": _header({"type": "integer"}, "Seconds until the window resets."),
}


class AutoSchema(SpectacularAutoSchema):
    def _authenticated(self) -> bool:
        return bool(getattr(self.view, "authentication_classes", None)) and bool(
            getattr(self.view, "permission_classes", None))

    def get_auth(self) -> list:
        # An open endpoint (health) takes no credentials: documenting the API's security on it would promise a 401.
        return super().get_auth() if self._authenticated() else []

    def _get_response_bodies(self, direction: str = "response") -> dict:
        responses = super()._get_response_bodies(direction)
        statuses = ("400", "404", "405", "500", "503")  # an open endpoint: health answers 503 naming what is down
        if self._authenticated():
            statuses = AUTHENTICATED_ERRORS + (POST_ERRORS if self.method == "POST" else ())
        for status in statuses:
            responses.setdefault(status, self._get_response_for_code(ErrorResponseSerializer, status))
        return dict(sorted(responses.items()))

    def _get_response_headers_for_code(self, status_code: str, direction: str = "response") -> dict:
        headers = dict(ALWAYS_HEADERS)
        authenticated = self._authenticated()
        if authenticated and status_code.startswith("2"):
            headers.update(RATE_LIMIT_HEADERS)
            if self.method == "POST":
                headers["Idempotent-Replayed"] = _header(
                    {"type": "string", "enum": ["true"]},
                    "Present when the response is the stored one of an earlier request with this Idempotency-Key.",
                    required=False)
        if status_code == "429":
            headers["Retry-After"] = _header({"type": "integer", "minimum": 1}, "Seconds to wait before retrying.")
        if status_code == "401" and authenticated:
            headers["WWW-Authenticate"] = _header({"type": "string"}, 'Basic realm="api"')
        headers.update(super()._get_response_headers_for_code(status_code, direction))
        return headers

    def _resolve_path_parameters(self, variables: list[str]) -> list[dict]:
        parameters = super()._resolve_path_parameters(variables)
        for parameter in parameters:
            # Every object is identified by a UUID; any other value in its place is answered 404.
            if parameter["name"].endswith("_id"):
                parameter["schema"] = {"type": "string", "format": "uuid"}
        return parameters

    def get_override_parameters(self) -> list:
        parameters = list(super().get_override_parameters())
        if self.method == "POST" and self._authenticated():
            parameters.append(OpenApiParameter(
                "Idempotency-Key", IDEMPOTENCY_KEY_SCHEMA, OpenApiParameter.HEADER, required=False,
                description="1 to 255 printable ASCII characters. Retrying with the same key and body replays the "
                            "first response (with Idempotent-Replayed: true) instead of acting twice. Kept 24 hours."))
        return parameters

    def _map_serializer_field(self, field: serializers.Field, direction: str, bypass_extensions: bool = False) -> dict:
        schema = self._own_schema(field, direction)
        if schema is not None:
            # DRF's mapping adds the field's help_text; a schema of the field's own must carry it too.
            return {**schema, "description": field.help_text} if field.help_text else schema
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if isinstance(field, serializers.ListSerializer):  # `items = Item(many=True, min_length=1, max_length=100)`
            if field.min_length is not None:
                schema = {**schema, "minItems": field.min_length}
            if field.max_length is not None:
                schema = {**schema, "maxItems": field.max_length}
        if (direction == "request" and isinstance(field, serializers.CharField) and schema.get("type") == "string"
                and not {"pattern", "format", "enum"} & set(schema)):
            blank_refused = field.trim_whitespace and not field.allow_blank
            if isinstance(field, VisibleCharField):
                schema = {**schema, "pattern": VISIBLE_NON_BLANK_PATTERN if blank_refused else VISIBLE_PATTERN}
            else:
                schema = {**schema, "pattern": NON_BLANK_PATTERN if blank_refused else NO_NUL_PATTERN}
        return schema

    def _own_schema(self, field: serializers.Field, direction: str) -> dict | None:
        """The schema a documentation field or a request field's class gives itself, None for DRF's mapping."""
        if isinstance(field, Const):
            component = ResolvedComponent(name=field.component, type=ResolvedComponent.SCHEMA, object=field.component,
                                          schema={"type": _json_type(field.value), "enum": [field.value]})
            self.registry.register_on_missing(component)
            return component.ref
        if isinstance(field, Documented):
            if isinstance(field.schema, dict):
                return dict(field.schema)
            return self.resolve_serializer(field.schema, direction).ref
        openapi_schema = getattr(field, "openapi_schema", None)
        if openapi_schema is not None:  # a request field whose class says what JSON Schema can say of its rule
            return openapi_schema()
        return None

    def _map_basic_serializer(self, serializer: serializers.Serializer, direction: str) -> dict:
        schema = super()._map_basic_serializer(serializer, direction)
        # A class's own docstring describes it; one inherited (StrictSerializer's) is about parsing, not this body.
        own = serializer.__class__.__dict__.get("__doc__")
        if own:
            schema["description"] = inspect.cleandoc(own)
        else:
            schema.pop("description", None)
        if direction == "request" and isinstance(serializer, StrictSerializer):
            schema["additionalProperties"] = False
        return schema

    def _get_request_for_media_type(self, serializer: Any, direction: str = "request") -> tuple:
        schema, required = super()._get_request_for_media_type(serializer, direction)
        # A body of variants (oneOf) is required when every variant has required fields, as all of ours do.
        if isinstance(serializer, PolymorphicProxySerializer):
            required = True
        return schema, required

    def get_description(self) -> str:
        # Only an operation's own text: the docstring every view inherits from ApiView is about the plumbing.
        description = super().get_description()
        return "" if description == inspect.cleandoc(ApiView.__doc__ or "") else description
