"""A merchant's charges page by page, newest first, when no filter is given (`GET /payin`, what integrations poll):
literal SQL on the `payin_list` index (merchant, livemode, created_at, id).

The same page as a QuerySet (`core.api.Listing`, which `GET /payin` still uses with a filter) spends more building
and compiling its SQL than PostgreSQL spends running it (ADR 0061 has the figures). Each row is a `PayinRow` of
`PAYIN_COLUMNS` holding what the ORM reads, so `payin_serialize` writes the same body from either
(`tests/payments/payins/test_list_page_sql.py` holds the two equal on PostgreSQL):

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

FIRST_PAGE = """
SELECT id, status, amount, fee, payment_method, reference_id, livemode, description, refunded_amount, public_token,
       created_at AT TIME ZONE 'UTC' AS created_at, updated_at AT TIME ZONE 'UTC' AS updated_at,
       paid_at AT TIME ZONE 'UTC' AS paid_at, failure_code, failure_message, pix_payload,
       pix_expires_at AT TIME ZONE 'UTC' AS pix_expires_at, pix_txid, boleto_barcode, boleto_digitable_line,
       boleto_due_date, boleto_instructions, authorization_code,
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
       boleto_due_date, boleto_instructions, authorization_code,
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
