"""What the API modules of charges, payouts and the ledger share: list filters parsed from the query string, the
body of a body-less action, and the refusal of a sandbox control called with live keys."""

from __future__ import annotations

from datetime import UTC, datetime

from core.api import (
    StrictSerializer,
)
from core.errors import DomainError
from payments.fields import REFERENCE_ID


class EmptyRequest(StrictSerializer):
    """A body-less action: an empty body or `{}`; any field is unknown (a typo must not pass silently)."""


class TestModeOnly(DomainError):
    status_code = 403
    type = "permission_error"
    code = "test_mode_only"
    message = "Sandbox controls work with test keys only"


def datetime_param(params, name: str, problems: list) -> datetime | None:
    value = params.get(name)
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.upper())  # RFC 3339 allows a lowercase t and z
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        problems.append({"param": name, "code": "invalid_datetime",
                         "message": f"{name} must be an ISO 8601 timestamp with a time zone, e.g. "
                                    "2026-11-20T00:00:00Z."})
        return None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        # A valid timestamp whose UTC time is outside the years 1 to 9999 (9999-12-31T23:59:59-03:00): no row can be on
        # the other side of the nearest representable instant, so that instant selects exactly the same rows.
        return datetime.min.replace(tzinfo=UTC) if parsed.year == 1 else datetime.max.replace(tzinfo=UTC)


def reference_id_param(params, problems: list) -> str | None:
    # Only a referenceId that a charge or payout can have: anything else (an empty or NUL-carrying value) is refused
    # like any unknown filter value, not sent to the database.
    value = params.get("referenceId")
    if value is not None and not REFERENCE_ID.fullmatch(value):
        problems.append({"param": "referenceId", "code": "invalid_reference_id", "message": "referenceId must be 1 to "
                         "64 characters of letters, digits, '.', '_', ':' and '-'."})
    return value


def choice_param(params, name: str, choices: list[str], problems: list) -> str | None:
    value = params.get(name)
    if value is not None and value not in choices:
        problems.append({"param": name, "code": "invalid_choice",
                         "message": f"{name} must be one of {', '.join(choices)}."})
    return value
