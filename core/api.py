"""The API's conventions: strict input parsing, keyset pagination and the base view of every authenticated API."""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model, Q, QuerySet
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import NotFound, ValidationFailed, validation_error
from core.formats.text import CODE as HIDDEN_CHARACTERS_CODE
from core.formats.text import hidden_character_message
from core.renderers import ApiJSONRenderer


# --- Strict input ----------------------------------------------------------------------------------------------------
class StrictIntegerField(serializers.IntegerField):
    """A JSON integer and nothing else: 100.0, "100", true and null are refused (no silent coercion of money)."""

    default_error_messages = {"invalid": "Must be a JSON integer."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be a JSON boolean (true or false)."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a JSON string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if self.max_length is not None and len(data) > self.max_length:
            # As sent, not after trimming: the schema's maxLength is of the JSON string, so is this rule.
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class VisibleCharField(StrictCharField):
    """A string a payer reads (core.formats.text): one with an invisible, direction-changing or control character is
    refused, naming the field. Checked on the string as sent, before DRF trims it, as the schema's pattern says."""

    default_error_messages = {HIDDEN_CHARACTERS_CODE: "{message}"}  # the message names the character and where

    def run_validation(self, data: Any = serializers.empty) -> Any:
        message = hidden_character_message(data) if isinstance(data, str) else None
        if message is not None:
            self.fail(HIDDEN_CHARACTERS_CODE, message=message)
        return super().run_validation(data)


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not declare, at every level, and reports them with every other problem at once."""

    def to_internal_value(self, data: Any) -> Any:
        errors: dict = {}
        try:
            value = super().to_internal_value(data)
        except exceptions.ValidationError as exc:
            if not isinstance(exc.detail, dict):
                raise
            errors.update(exc.detail)
            value = None
        if isinstance(data, dict):
            for name in data:
                if name not in self.fields or self.fields[name].read_only:
                    errors[name] = [exceptions.ErrorDetail(f"Unknown field '{name}'.", code="unknown_field")]
        if errors:
            raise exceptions.ValidationError(errors)
        return value

    @classmethod
    def validated(cls, data: Any, **context: Any) -> dict:
        serializer = cls(data=data, context=context)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


# --- Keyset pagination -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Page:
    data: list
    has_more: bool
    next_cursor: str | None

    def as_body(self) -> dict:
        return {"data": self.data, "hasMore": self.has_more, "nextCursor": self.next_cursor}


def _encode_cursor(created_at: datetime, pk: Any) -> str:
    raw = json.dumps([created_at.isoformat(), str(pk)], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, model: type[Model]) -> tuple[datetime, Any]:
    """The position a cursor names, or 400 for anything this API did not write (a forged id must not reach SQL)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, pk = json.loads(raw)
        created_at = datetime.fromisoformat(created_at)
        if created_at.tzinfo is None or not isinstance(pk, str):  # we always write the id as a string
            raise ValueError("not a cursor")
        # In UTC, as written: a forged offset that pushes the year out of 1..9999 fails here, not in the query.
        return created_at.astimezone(UTC), model._meta.pk.to_python(pk)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError, OverflowError, DjangoValidationError,
            RecursionError) as exc:  # RecursionError: a forged cursor of a thousand nested arrays
        raise ValidationFailed(param="cursor", details=[
            {"param": "cursor", "code": "invalid_cursor", "message": "The cursor is not one this API returned."}
        ]) from exc


def parse_limit(value: str | None) -> int:
    if value is None:
        return 20
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= 100:
        raise ValidationFailed(param="limit", details=[
            {"param": "limit", "code": "invalid_limit", "message": "limit must be an integer from 1 to 100."}
        ])
    return int(value)


class Rows(Protocol):
    """What `paginate` reads a page from besides a QuerySet: a `Listing`, or a list's page in literal SQL (such as
    `payments.payins.read_sql`)."""

    model: type[Model]

    def page(self, count: int, position: tuple[datetime, Any] | None) -> list:
        """The first `count` rows, newest first by (created_at, id), of those before `position` ((created_at, id),
        or None from the newest): each with `created_at` and the model's primary key by its attribute name."""


@dataclass(frozen=True)
class Listing:
    """A list for `paginate` as plain values rather than model instances: the rows of `model` matching every filter
    (Django lookups, ANDed), each a named tuple of `columns` (`values_list(..., named=True)`), which is what the
    list's serializer reads. `columns` must hold the primary key and `created_at` (the keyset)."""

    model: type[Model]
    columns: tuple[str, ...]
    filters: dict[str, Any]

    @classmethod
    def of(cls, model: type[Model], columns: tuple[str, ...], *, scope: dict[str, Any], **filters: Any) -> Listing:
        """`scope`: what every row must match (the merchant and mode, or the parent object), never dropped; `filters`:
        the optional ones that were given (None means "not filtered")."""
        if not scope or any(value is None for value in scope.values()):
            raise ValueError(f"a listing of {model.__name__} needs its scope, got {scope!r}")
        return cls(model, columns, {**scope, **{name: value for name, value in filters.items() if value is not None}})

    def queryset(self) -> QuerySet:
        """The same rows as model instances (for the pages that need more than the columns)."""
        return self.model.objects.filter(**self.filters)

    def rows(self) -> QuerySet:
        return self.queryset().values_list(*self.columns, named=True)

    def page(self, count: int, position: tuple[datetime, Any] | None) -> list:
        return list(_keyset_ordered(self.rows(), position)[:count])


def paginate(source: QuerySet | Rows, *, params: dict, serialize: Callable[[Any], dict]) -> Page:
    """Newest first, by (created_at, id) keyset: page N costs what page 1 costs, whatever the table's size.

    The rows must already be scoped to the merchant and mode, and be backed by an index on those columns followed by
    created_at and id.
    """
    limit = parse_limit(params.get("limit"))
    cursor = params.get("cursor")
    position = _decode_cursor(cursor, source.model) if cursor else None
    if isinstance(source, QuerySet):
        rows = list(_keyset_ordered(source, position)[: limit + 1])
    else:
        rows = source.page(limit + 1, position)
    has_more = len(rows) > limit
    rows = rows[:limit]
    # The primary key by its attribute name, which a model instance and a Listing's row both have.
    next_cursor = _encode_cursor(rows[-1].created_at, getattr(rows[-1], source.model._meta.pk.attname)) \
        if has_more else None
    return Page(data=[serialize(row) for row in rows], has_more=has_more, next_cursor=next_cursor)


def _keyset_ordered(queryset: QuerySet, position: tuple[datetime, Any] | None) -> QuerySet:
    if position is not None:
        created_at, pk = position
        # (created_at, id) < (cursor): the `created_at <= cursor` half gives PostgreSQL the index range to start
        # from; the OR alone it would only filter with, reading every row newer than the cursor first.
        queryset = queryset.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk),
                                   created_at__lte=created_at)
    return queryset.order_by("-created_at", "-pk")


def reject_unknown_params(params: Iterable[str], allowed: set[str]) -> None:
    unknown = sorted(set(params) - allowed - {"limit", "cursor"})
    if unknown:
        raise validation_error([
            {"param": name, "code": "unknown_field", "message": f"Unknown query parameter '{name}'."}
            for name in unknown
        ])


def path_uuid(value: str, what: str) -> uuid.UUID:
    """An object id from the URL path; anything that is not a UUID names no object: 404, like an unknown one."""
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise NotFound(f"No such {what}") from exc


# Two- and three-digit fields as strings: a timestamp is put together from them.
_TWO_DIGITS = tuple(f"{number:02d}" for number in range(100))
_THREE_DIGITS = tuple(f"{number:03d}" for number in range(1000))


def timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds and Z, as every API timestamp is written: 2026-11-20T21:39:00.123Z.

    Put together from the fields, which costs a third of `isoformat(timespec="milliseconds")` (a list page writes 80
    of these; `tests/config/test_timestamp.py` holds the two equal). A year before 1000 is written by strftime, as
    it always was (unpadded)."""
    if value is None:
        return None
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    if value.year < 1000:
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return (f"{value.year}-{_TWO_DIGITS[value.month]}-{_TWO_DIGITS[value.day]}T{_TWO_DIGITS[value.hour]}:"
            f"{_TWO_DIGITS[value.minute]}:{_TWO_DIGITS[value.second]}.{_THREE_DIGITS[value.microsecond // 1000]}Z")


# --- Base view -------------------------------------------------------------------------------------------------------
class ApiView(APIView):
    """Base of every authenticated API view: the RateLimit-* headers of the key pair's rate limit (counted during
    authentication), JSON only, and Idempotency-Key on every POST: each POST handler is decorated with
    `integrations.idempotency.idempotent`, and a view whose `post` is not is refused when its class is defined (this
    app imports no other, so it checks the mark the decorator leaves rather than applying it)."""

    renderer_classes = [ApiJSONRenderer]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "post" in cls.__dict__ and not getattr(cls.__dict__["post"], "idempotent", False):
            raise ImproperlyConfigured(f"{cls.__qualname__}.post is not decorated with "
                                       "integrations.idempotency.idempotent (Idempotency-Key on every POST)")

    def freshness_key(self, **kwargs: Any) -> str | None:
        """The `core.readcache` token key of the object this request reads, fetched by the authentication's round
        trip: a view that serves cached bodies names it."""
        return None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        request.freshness_key = self.freshness_key(**kwargs) if request.method == "GET" else None
        super().initial(request, *args, **kwargs)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[ApiJSONRenderer, str]:
        # The API speaks JSON whatever the Accept header says: no negotiation to run on every request.
        return ApiJSONRenderer(), ApiJSONRenderer.media_type

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        state = getattr(request, "rate_limit", None)
        if state is not None:
            response["RateLimit-Limit"] = str(state.limit)
            response["RateLimit-Remaining"] = str(state.remaining)
            response["RateLimit-Reset"] = str(state.reset)
        return response

