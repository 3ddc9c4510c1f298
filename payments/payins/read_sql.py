"""The two charge reads the API serves most, in literal SQL: a merchant's charges page by page, newest first, when no
filter is given (`GET /payin`, what integrations poll), and one charge of a merchant and mode (`payin_get`, behind
`GET /payin/{id}` when its body is not cached, and every action on a charge).

Built as QuerySets, each spent more building and compiling its SQL than PostgreSQL spent running it (their ADR in
docs/decisions/ has the figures). What they give is what the ORM gives: `payin_scoped` a `Payin` read by
`Manager.raw()`; `PayinPages` rows of `PAYIN_COLUMNS` (named tuples, as `core.api.Listing` reads them, which
`GET /payin` still uses with a filter), so `payin_serialize` writes the same body from either. Its
`tests/payments/payins/test_read_sql.py` holds both equal to the ORM's on PostgreSQL. The page reads:

- the JSON columns (last in `PAYIN_COLUMNS`) as one array, `documents`, decoded by one `json.loads` as
  `JSONField.from_db_value` decodes each (the fields have no decoder of their own): a decode costs more to start
  than to read a charge's customer and items;
- instants as UTC wall-clock times (`AT TIME ZONE 'UTC'`, a `timestamp`) made aware in UTC here: the ORM's instants,
  in the zone Django gives them (UTC). Django reads a `timestamptz` with a parser in Python, 4 µs a value, and a page
  has 60 of them: more than everything else in the page; psycopg reads a `timestamp` in C. (ORDER BY names the
  table's columns: a bare `created_at` there would be the selected wall-clock time, which no index holds.)
"""

from __future__ import annotations

import json
import uuid
from collections import namedtuple
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar

from django.db import connections, router

from payments.models import Payin
from payments.payins.serializers import PAYIN_COLUMNS

# `*`: every column, which raw() makes the model's fields, whatever fields the model has.
SCOPED_GET = """
SELECT * FROM payments_payin
WHERE id = %s AND merchant_id = %s AND livemode = %s
"""

FIRST_PAGE = """
SELECT id, status, amount, fee, payment_method, reference_id, livemode, description, refunded_amount, public_token,
       created_at AT TIME ZONE 'UTC' AS created_at, updated_at AT TIME ZONE 'UTC' AS updated_at,
       paid_at AT TIME ZONE 'UTC' AS paid_at, failure_code, failure_message, pix_payload,
       pix_expires_at AT TIME ZONE 'UTC' AS pix_expires_at, pix_txid, boleto_barcode, boleto_digitable_line,
       boleto_due_date, boleto_instructions, authorization_code, paid_amount, boleto_pdf_url,
       jsonb_build_array(metadata, customer, items, card) AS documents
FROM payments_payin
WHERE merchant_id = %s AND livemode = %s
ORDER BY payments_payin.created_at DESC, payments_payin.id DESC
LIMIT %s
"""

NEXT_PAGE = """
SELECT id, status, amount, fee, payment_method, reference_id, livemode, description, refunded_amount, public_token,
       created_at AT TIME ZONE 'UTC' AS created_at, updated_at AT TIME ZONE 'UTC' AS updated_at,
       paid_at AT TIME ZONE 'UTC' AS paid_at, failure_code, failure_message, pix_payload,
       pix_expires_at AT TIME ZONE 'UTC' AS pix_expires_at, pix_txid, boleto_barcode, boleto_digitable_line,
       boleto_due_date, boleto_instructions, authorization_code, paid_amount, boleto_pdf_url,
       jsonb_build_array(metadata, customer, items, card) AS documents
FROM payments_payin
WHERE merchant_id = %s AND livemode = %s AND (created_at, id) < (%s, %s)
ORDER BY payments_payin.created_at DESC, payments_payin.id DESC
LIMIT %s
"""

PayinRow = namedtuple("PayinRow", PAYIN_COLUMNS)
DOCUMENTS = ("metadata", "customer", "items", "card")  # the JSON columns, in `documents` and last in PayinRow
# The positions of the instants (DateTimeField) in a row.
_INSTANTS = tuple(position for position, name in enumerate(PAYIN_COLUMNS)
                  if Payin._meta.get_field(name).get_internal_type() == "DateTimeField")


def payin_scoped(*, merchant_id: uuid.UUID, livemode: bool, payin_id: uuid.UUID) -> Payin | None:
    """The charge `payin_id` if it is the merchant's, in that mode; else None."""
    for payin in Payin.objects.raw(SCOPED_GET, [payin_id, merchant_id, livemode]):
        return payin
    return None


@dataclass(frozen=True)
class PayinPages:
    """The charges of one merchant and mode, for `core.api.paginate`."""

    merchant_id: uuid.UUID
    livemode: bool
    model: ClassVar[type[Payin]] = Payin

    def page(self, count: int, position: tuple[datetime, object] | None) -> list[PayinRow]:
        connection = connections[router.db_for_read(Payin)]
        with connection.cursor() as cursor:
            if position is None:
                cursor.execute(FIRST_PAGE, [self.merchant_id, self.livemode, count])
            else:
                cursor.execute(NEXT_PAGE, [self.merchant_id, self.livemode, *position, count])
            rows = cursor.fetchall()
        return [_row(values) for values in rows]


def _row(values: tuple) -> PayinRow:
    *columns, documents = values
    for position in _INSTANTS:
        if columns[position] is not None:
            columns[position] = columns[position].replace(tzinfo=UTC)
    return PayinRow._make(columns + json.loads(documents))
