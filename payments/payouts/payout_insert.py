"""A new payout, its audit entry, its payout.created event and the event's deliveries, written by one SQL statement.

`POST /payout` writes four tables before its balance decision (`payments.payouts.reserve`). With `Model.save()` and
`bulk_create()` that is a round trip per table, each INSERT compiled by the ORM on every request. Here it is one
literal statement, in the payout's transaction: the payout, the audit entry (none or one, from a JSON array by
`jsonb_to_recordset`) and the event in data-modifying WITH clauses, the deliveries from one JSON array
(`webhooks.event_sql`). A referenceId already taken fails the whole statement on the payout's unique constraint, as
the payout's own INSERT did. docs/decisions/0062 has the measured gain; tests/payments/payouts/test_payout_insert.py
holds its rows equal to what the ORM writes.

The rows are the instances' own values, built as for the ORM (`Payout(...)`, `accounts.audit.audit_build`,
`webhooks.services.event_build`), so their defaults and rules stay in one place. No save() runs (the audit entry's
append-only `save()` has nothing to refuse on a new row) and no pre_save or post_save signal is sent for these rows
(none is connected to these models); the payout, event and deliveries are marked saved. The audit entry's id is the
database's (an identity column): the instance does not learn it.
"""

from __future__ import annotations

from django.db import connection

from accounts.models import AccountEvent
from payments.models import Payout
from webhooks.event_sql import EVENT_AND_DELIVERIES_SQL, as_json, event_params, marked_saved, rows_json
from webhooks.models import Delivery, Event

# Two literal texts joined (no input reaches either): this write's own clauses, then the event's.
PAYOUT_INSERT_SQL = """
WITH payout AS (
    INSERT INTO payments_payout (
        id, merchant_id, livemode, status, amount, fee, pix_key, pix_key_normalized, pix_key_type, reference_id,
        external_id, beneficiary_name, beneficiary_document, description, metadata, webhook_url, failure_code,
        failure_message, local_date, completed_at, created_at, updated_at)
    VALUES (
        %(id)s, %(merchant_id)s, %(livemode)s, %(status)s, %(amount)s, %(fee)s, %(pix_key)s, %(pix_key_normalized)s,
        %(pix_key_type)s, %(reference_id)s, %(external_id)s, %(beneficiary_name)s, %(beneficiary_document)s,
        %(description)s, %(metadata)s::jsonb, %(webhook_url)s, %(failure_code)s, %(failure_message)s,
        %(local_date)s::date, %(completed_at)s, %(created_at)s, %(updated_at)s)
), audit AS (
    INSERT INTO accounts_accountevent (
        merchant_id, actor_id, actor_key, action, obj_type, obj_id, from_status, to_status, before, after, reason,
        details, ip, user_agent, created_at)
    SELECT * FROM jsonb_to_recordset(%(audit)s::jsonb) AS entry(
        merchant_id uuid, actor_id bigint, actor_key text, action text, obj_type text, obj_id text, from_status text,
        to_status text, before jsonb, after jsonb, reason text, details jsonb, ip inet, user_agent text,
        created_at timestamptz)
),
""" + EVENT_AND_DELIVERIES_SQL  # noqa: S608

# The columns of the audit entry, in the statement's order.
AUDIT_COLUMNS = ("merchant_id", "actor_id", "actor_key", "action", "obj_type", "obj_id", "from_status", "to_status",
                 "before", "after", "reason", "details", "ip", "user_agent", "created_at")


def payout_insert(payout: Payout, *, audit: AccountEvent | None, event: Event, deliveries: list[Delivery]) -> None:
    """Write a new payout (PENDING), its audit entry if any, its event and the event's deliveries: all or none, in
    the caller's transaction, which then takes the balance decision. The caller enqueues the deliveries on commit."""
    if not connection.in_atomic_block:
        raise RuntimeError("payout_insert belongs in the payout's transaction")
    params = {
        "id": payout.id, "merchant_id": payout.merchant_id, "livemode": payout.livemode, "status": str(payout.status),
        "amount": payout.amount, "fee": payout.fee, "pix_key": payout.pix_key,
        "pix_key_normalized": payout.pix_key_normalized, "pix_key_type": str(payout.pix_key_type),
        "reference_id": payout.reference_id, "external_id": payout.external_id,
        "beneficiary_name": payout.beneficiary_name, "beneficiary_document": payout.beneficiary_document,
        "description": payout.description, "metadata": as_json(payout.metadata), "webhook_url": payout.webhook_url,
        "failure_code": payout.failure_code, "failure_message": payout.failure_message,
        "local_date": payout.local_date, "completed_at": payout.completed_at, "created_at": payout.created_at,
        "updated_at": payout.updated_at,
        "audit": rows_json([audit] if audit is not None else [], AUDIT_COLUMNS),
        **event_params(event, deliveries),
    }
    with connection.cursor() as cursor:
        cursor.execute(PAYOUT_INSERT_SQL, params)
    marked_saved(payout, event, *deliveries)
