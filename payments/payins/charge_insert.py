"""A new PIX charge or boleto, its payin.created event and the event's deliveries, written by one SQL statement.

`POST /payin` writes three tables. With `Model.save()` and `bulk_create()` in `transaction.atomic()` that is four or
five round trips to PostgreSQL (BEGIN, one INSERT per table, COMMIT), each INSERT compiled by the ORM on every
request. Here it is one literal statement: the charge and the event in data-modifying WITH clauses, the deliveries
(none, one or a few) from one JSON array by `jsonb_to_recordset` (that part is `webhooks.event_sql`'s). One
statement is atomic on its own, so no transaction is opened for it; the foreign keys between its rows (deferred)
are checked when it commits. Inside a caller's transaction it is simply part of it. It has at most 50 parameters
and 4 KB, so psycopg parses it once per process. docs/decisions has the measured gain;
tests/payments/payins/test_charge_insert.py holds its rows equal to what the ORM writes.

The rows are the instances' own values, built as for the ORM (`Payin(...)`, `webhooks.services.event_build`), so
their defaults and rules stay in one place: the models and the webhooks app. No save() runs and no pre_save or
post_save signal is sent for these rows (none is connected to these models); the instances are marked saved.
"""

from __future__ import annotations

from django.db import connection

from payments.models import Payin
from webhooks.event_sql import EVENT_AND_DELIVERIES_SQL, as_json, event_params, marked_saved
from webhooks.models import Delivery, Event

# Two literal texts joined (no input reaches either): this write's own clauses, then the event's.
CHARGE_INSERT_SQL = """
WITH charge AS (
    INSERT INTO payments_payin (
        id, merchant_id, livemode, status, payment_method, amount, fee, refunded_amount, reference_id, description,
        metadata, customer, items, payer_ip, is_physical_product, webhook_url, public_token,
        pix_txid, pix_end_to_end_id, pix_payload, pix_expires_at,
        boleto_nosso_numero, boleto_barcode, boleto_digitable_line, boleto_due_date, boleto_instructions,
        card, authorization_code, settle_at, failure_code, failure_message, paid_at, created_at, updated_at,
        rail_charge_id, boleto_pdf_url)
    VALUES (
        %(id)s, %(merchant_id)s, %(livemode)s, %(status)s, %(payment_method)s, %(amount)s, %(fee)s,
        %(refunded_amount)s, %(reference_id)s, %(description)s,
        %(metadata)s::jsonb, %(customer)s::jsonb, %(items)s::jsonb, %(payer_ip)s::inet, %(is_physical_product)s,
        %(webhook_url)s, %(public_token)s,
        %(pix_txid)s, %(pix_end_to_end_id)s, %(pix_payload)s, %(pix_expires_at)s,
        %(boleto_nosso_numero)s, %(boleto_barcode)s, %(boleto_digitable_line)s, %(boleto_due_date)s::date,
        %(boleto_instructions)s,
        %(card)s::jsonb, %(authorization_code)s, %(settle_at)s, %(failure_code)s, %(failure_message)s, %(paid_at)s,
        %(created_at)s, %(updated_at)s, %(rail_charge_id)s, %(boleto_pdf_url)s)
),
""" + EVENT_AND_DELIVERIES_SQL  # noqa: S608


def charge_insert(payin: Payin, *, event: Event, deliveries: list[Delivery]) -> None:
    """Write a new charge (PENDING PIX or boleto), its event and the event's deliveries: all or none, one round
    trip. The caller enqueues the deliveries once this commits (`webhooks.services.deliveries_enqueue_on_commit`)."""
    params = {
        "id": payin.id, "merchant_id": payin.merchant_id, "livemode": payin.livemode, "status": str(payin.status),
        "payment_method": str(payin.payment_method), "amount": payin.amount, "fee": payin.fee,
        "refunded_amount": payin.refunded_amount, "reference_id": payin.reference_id,
        "description": payin.description, "metadata": as_json(payin.metadata), "customer": as_json(payin.customer),
        "items": as_json(payin.items), "payer_ip": payin.payer_ip, "is_physical_product": payin.is_physical_product,
        "webhook_url": payin.webhook_url, "public_token": payin.public_token,
        "pix_txid": payin.pix_txid, "pix_end_to_end_id": payin.pix_end_to_end_id, "pix_payload": payin.pix_payload,
        "pix_expires_at": payin.pix_expires_at,
        "boleto_nosso_numero": payin.boleto_nosso_numero, "boleto_barcode": payin.boleto_barcode,
        "boleto_digitable_line": payin.boleto_digitable_line, "boleto_due_date": payin.boleto_due_date,
        "boleto_instructions": payin.boleto_instructions,
        "card": as_json(payin.card), "authorization_code": payin.authorization_code, "settle_at": payin.settle_at,
        "failure_code": payin.failure_code, "failure_message": payin.failure_message, "paid_at": payin.paid_at,
        "created_at": payin.created_at, "updated_at": payin.updated_at,
        "rail_charge_id": payin.rail_charge_id, "boleto_pdf_url": payin.boleto_pdf_url,
        **event_params(event, deliveries),
    }
    with connection.cursor() as cursor:
        cursor.execute(CHARGE_INSERT_SQL, params)
    marked_saved(payin, event, *deliveries)
