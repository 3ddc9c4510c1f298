"""The API's representation of an unmatched payment (the body of its endpoints and of its events)."""

from __future__ import annotations

from core.api import timestamp
from payments.models import UnmatchedPayment


def unmatched_serialize(unmatched: UnmatchedPayment) -> dict:
    return {
        "id": str(unmatched.id),
        "kind": unmatched.kind,
        "status": unmatched.status,
        "payinId": str(unmatched.payin_id) if unmatched.payin_id else None,
        "amount": unmatched.amount,
        "fee": unmatched.fee,
        "currency": "BRL",
        "payer": {"name": unmatched.payer_name or None, "document": unmatched.payer_document or None},
        "endToEndId": unmatched.end_to_end_id,
        "failureCode": unmatched.failure_code or None,
        "livemode": unmatched.livemode,
        "createdAt": timestamp(unmatched.created_at),
        "updatedAt": timestamp(unmatched.updated_at),
        "resolvedAt": timestamp(unmatched.resolved_at),
    }


def unmatched_brief(unmatched: UnmatchedPayment) -> dict:
    """What names an unmatched payment where another answer mentions it (a sandbox payment that settled nothing)."""
    return {"id": str(unmatched.id), "kind": unmatched.kind, "amount": unmatched.amount, "status": unmatched.status}
