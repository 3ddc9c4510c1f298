"""The API's representation of disputes: a plain function building the dict that GET /disputes/{id} returns and the
dispute.* events carry, documented for OpenAPI by `payments.disputes.schema`."""

from __future__ import annotations

from core.api import timestamp
from payments.models import Dispute


def dispute_serialize(dispute: Dispute) -> dict:
    return {
        "id": str(dispute.id),
        "payinId": str(dispute.payin_id),
        "kind": dispute.kind,
        "reason": dispute.reason or None,
        "amount": dispute.amount,
        "status": dispute.status,
        "evidenceDueBy": timestamp(dispute.evidence_due_by),
        "evidence": {"text": dispute.evidence_text or None, "submittedAt": timestamp(dispute.evidence_submitted_at)},
        "createdAt": timestamp(dispute.created_at),
        "closedAt": timestamp(dispute.closed_at),
        "livemode": dispute.livemode,
    }
