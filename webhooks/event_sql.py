"""An event and its deliveries as the tail of one literal SQL statement, after a caller's data-modifying `WITH` clause
(`payments.payins.charge_insert`: a new charge). The webhooks app owns these tables, so their columns are named here.

The event is one `INSERT … VALUES`; the deliveries (none, one or a few) come from one JSON array through
`jsonb_to_recordset`. The rows are the instances' own values, built by `webhooks.services.event_build`, so their
defaults and rules stay in one place. docs/decisions/0062 lists every literal statement of the code.
"""

from __future__ import annotations

import json

from django.db import connection
from django.db.models import Model

from webhooks.models import Delivery, Event

# Follows a caller's `WITH <its rows> AS (…),`.
EVENT_AND_DELIVERIES_SQL = """
event AS (
    INSERT INTO webhooks_event (id, merchant_id, livemode, type, object_id, payload, created_at)
    VALUES (%(event_id)s, %(event_merchant_id)s, %(event_livemode)s, %(event_type)s, %(event_object_id)s,
            %(event_payload)s::jsonb, %(event_created_at)s)
)
INSERT INTO webhooks_delivery (
    id, event_id, merchant_id, livemode, endpoint_id, url, status, attempts, failures, next_attempt_at, locked_until,
    enqueued_at, last_status_code, last_error, created_at, completed_at)
SELECT * FROM jsonb_to_recordset(%(deliveries)s::jsonb) AS delivery(
    id uuid, event_id uuid, merchant_id uuid, livemode boolean, endpoint_id uuid, url text, status text,
    attempts integer, failures integer, next_attempt_at timestamptz, locked_until timestamptz, enqueued_at timestamptz,
    last_status_code smallint, last_error text, created_at timestamptz, completed_at timestamptz)
"""

# The columns of each delivery, in the statement's order.
DELIVERY_COLUMNS = ("id", "event_id", "merchant_id", "livemode", "endpoint_id", "url", "status", "attempts",
                    "failures", "next_attempt_at", "locked_until", "enqueued_at", "last_status_code", "last_error",
                    "created_at", "completed_at")


def as_json(value: object) -> str | None:
    """A JSON column's parameter: the value as JSON text (None stays SQL NULL)."""
    return None if value is None else json.dumps(value)


def rows_json(rows: list[Model], columns: tuple[str, ...]) -> str:
    """Rows as one JSON array of objects, for `jsonb_to_recordset` (UUIDs and instants as text)."""
    return json.dumps([{column: getattr(row, column) for column in columns} for row in rows], default=str)


def event_params(event: Event, deliveries: list[Delivery]) -> dict:
    """The parameters of EVENT_AND_DELIVERIES_SQL."""
    return {
        "event_id": event.id, "event_merchant_id": event.merchant_id, "event_livemode": event.livemode,
        "event_type": str(event.type), "event_object_id": event.object_id, "event_payload": as_json(event.payload),
        "event_created_at": event.created_at, "deliveries": rows_json(deliveries, DELIVERY_COLUMNS),
    }


def marked_saved(*instances: Model) -> None:
    """Instances a literal statement wrote: from now on `save()` updates them, as after `save(force_insert=True)`."""
    for instance in instances:
        instance._state.adding = False
        instance._state.db = connection.alias
