"""The API's representation of a statement line."""

from __future__ import annotations

from core.api import timestamp
from payments.models import LedgerEntry


def statement_line_serialize(entry: LedgerEntry) -> dict:
    movement = entry.transaction
    return {
        "id": str(entry.id),
        "type": entry.line_type,
        "amount": entry.amount,
        "balanceAfter": entry.balance_after,
        "balance": entry.account.kind,
        "objectType": movement.object_type,
        "objectId": movement.object_id,
        "referenceId": movement.reference_id or None,
        "description": movement.description,
        "createdAt": timestamp(entry.created_at),
    }
