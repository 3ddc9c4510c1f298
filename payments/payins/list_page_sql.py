"""A merchant's charges page by page, newest first, when no filter is given (`GET /payin`, what integrations poll):
literal SQL on the `payin_list` index (merchant, livemode, created_at, id).

The same page as a QuerySet (`core.api.Listing`, which `GET /payin` still uses with a filter) spends more building
and compiling its SQL than PostgreSQL spends running it (ADR 0061 has the figures). The columns are
`PAYIN_COLUMNS`, in order, and each row is read as the ORM reads it (JSON by the field's own `from_db_value`), so
`payin_serialize` writes the same body from either; `tests/payments/payins/test_list_page_sql.py` holds the two equal
on PostgreSQL.
"""

from __future__ import annotations

import uuid
from collections import namedtuple
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from django.db import connections, router

from payments.models import Payin
from payments.payins.serializers import PAYIN_COLUMNS

FIRST_PAGE = """
SELECT id, status, amount, fee, payment_method, reference_id, livemode, description, metadata, customer, items,
       refunded_amount, public_token, created_at, updated_at, paid_at, failure_code, failure_message, pix_payload,
       pix_expires_at, pix_txid, boleto_barcode, boleto_digitable_line, boleto_due_date, boleto_instructions, card,
       authorization_code
FROM payments_payin
WHERE merchant_id = %s AND livemode = %s
ORDER BY created_at DESC, id DESC
LIMIT %s
"""

NEXT_PAGE = """
SELECT id, status, amount, fee, payment_method, reference_id, livemode, description, metadata, customer, items,
       refunded_amount, public_token, created_at, updated_at, paid_at, failure_code, failure_message, pix_payload,
       pix_expires_at, pix_txid, boleto_barcode, boleto_digitable_line, boleto_due_date, boleto_instructions, card,
       authorization_code
FROM payments_payin
WHERE merchant_id = %s AND livemode = %s AND (created_at, id) < (%s, %s)
ORDER BY created_at DESC, id DESC
LIMIT %s
"""

PayinRow = namedtuple("PayinRow", PAYIN_COLUMNS)
# The JSON columns (PostgreSQL's jsonb, which Django's backend reads as text): (position, field).
_JSON = tuple((position, Payin._meta.get_field(name)) for position, name in enumerate(PAYIN_COLUMNS)
              if Payin._meta.get_field(name).get_internal_type() == "JSONField")


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
        return [_row(values, connection) for values in rows]


def _row(values: tuple, connection) -> PayinRow:
    values = list(values)
    for position, field in _JSON:
        values[position] = field.from_db_value(values[position], None, connection)
    return PayinRow._make(values)
