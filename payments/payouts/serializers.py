"""The API's representation of a payout (the body of its endpoints and of its events)."""

from __future__ import annotations

from core.api import timestamp
from payments.models import Payout

# The columns payout_serialize reads: a list page fetches exactly these and serializes each row's named tuple with it
# (core.api.Listing).
PAYOUT_COLUMNS = ("id", "status", "amount", "fee", "pix_key", "pix_key_type", "reference_id", "external_id",
                  "beneficiary_name", "beneficiary_document", "description", "metadata", "livemode", "created_at",
                  "updated_at", "completed_at", "failure_code", "failure_message")


def payout_serialize(payout: Payout) -> dict:
    return {
        "id": str(payout.id),
        "status": payout.status,
        "amount": payout.amount,
        "fee": payout.fee,
        "currency": "BRL",
        "pixKey": payout.pix_key,
        "pixKeyType": payout.pix_key_type,
        "referenceId": payout.reference_id,
        "externalId": payout.external_id,
        "beneficiaryName": payout.beneficiary_name or None,
        "beneficiaryDocument": payout.beneficiary_document or None,
        "description": payout.description,
        "metadata": payout.metadata,
        "livemode": payout.livemode,
        "createdAt": timestamp(payout.created_at),
        "updatedAt": timestamp(payout.updated_at),
        "completedAt": timestamp(payout.completed_at),
        "failureCode": payout.failure_code or None,
        "failureMessage": payout.failure_message or None,
    }
