"""The body of POST /payout, checked and normalized (SPEC §4.1), in the manner of the charge's (payments.validation).

Every problem is reported at once, each with its path. The rules that span fields (the key against its type, the
beneficiary's document against a CPF or CNPJ key) read the raw body, so they are checked whatever else is wrong; a
rule whose other field is itself invalid is skipped, that field's own problem being reported. No message repeats a
value sent.

- The Pix key is returned twice: `pix_key_as_sent`, exactly as the merchant sent it, is what the API echoes
  (`pixKey` in the response, SPEC §4.2 "echo of the request"); `pix_key`, the canonical form (`+5511987654321`,
  lowercased e-mail and EVP), is what the rail is sent and what a beneficiary document is compared with.
- `amount` above the per-payout maximum (the merchant's own, else PAYOUT_MAX_AMOUNT) is `payout_limit_exceeded`, the
  top-level code too when it is the only problem. The daily maximum is not checked here: it needs the lock on the
  merchant's balance, so the service checks it.
- `amount` below 1 is `amount_too_small`, as for charges.
- `beneficiaryDocument` takes punctuation and lowercase letters, like `customer.document` of a charge, and is returned
  normalized; an empty string is refused (leave the field out instead).

The serializer costs a tenth of a millisecond of CPU or more a request (DRF deep-copies its fields for every
instance), so a body that is plainly valid takes a hand-written fast path (`_fast_validate`) applying the same rules
and returning the same dict; anything it is not sure of, every invalid body included, goes to the serializer, which
alone writes the errors.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from accounts.models import Merchant
from config.api import StrictCharField, StrictIntegerField, StrictSerializer
from config.errors import as_domain_error
from payments.fields import (
    REFERENCE_ID,
    UNSTORABLE,
    DocumentField,
    ExactCharField,
    MetadataField,
    ReferenceIdField,
    WebhookUrlField,
    fast_metadata,
    fast_text,
    problem,
    request_body,
)
from payments.formats import documents
from payments.formats.pix_keys import EMAIL_MAX_LENGTH, PIX_KEY_TYPES, normalize_pix_key

BENEFICIARY_NAME_MAX_LENGTH = 120
DESCRIPTION_MAX_LENGTH = 140

# What a key of each type looks like, for the message of a key that does not fit (which never repeats the key).
PIX_KEY_SHAPES = {
    "CPF": "a CPF of 11 digits without punctuation, such as 52998224725",
    "CNPJ": "a CNPJ of 14 digits or uppercase letters without punctuation, such as 11222333000181 or 12ABC34501DE35",
    "EMAIL": f"an email address of at most {EMAIL_MAX_LENGTH} characters",
    "PHONE": "+55, the area code and the number, such as +5511987654321",
    "EVP": "a random key: a UUID of 36 characters, such as 123e4567-e89b-42d3-a456-426614174000",
}


def _pix_key_type(field: Any) -> str | None:
    """The body's pixKeyType when it is a valid one; with none, the rules that depend on it are not applied."""
    key_type = request_body(field).get("pixKeyType")
    return key_type if isinstance(key_type, str) and key_type in PIX_KEY_TYPES else None


class _PayoutAmountField(StrictIntegerField):
    def to_internal_value(self, data: Any) -> int:
        amount = super().to_internal_value(data)
        if amount < 1:
            raise problem("Must be at least 1 cent.", "amount_too_small")
        maximum = _payout_max_amount(self.context["merchant"])
        if amount > maximum:
            raise problem(f"Must be at most {maximum} cents, this account's maximum per payout.",
                           "payout_limit_exceeded")
        return amount


def _payout_max_amount(merchant: Merchant) -> int:
    return settings.PAYOUT_MAX_AMOUNT if merchant.payout_max_amount is None else merchant.payout_max_amount


class _PixKeyTypeField(serializers.ChoiceField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=PIX_KEY_TYPES, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in PIX_KEY_TYPES:
            raise problem(f"Must be one of {', '.join(PIX_KEY_TYPES)}.", "invalid_choice")
        return data


class _PixKeyField(ExactCharField):
    """Returns the key as sent; payout_request_validate adds its canonical form."""

    def to_internal_value(self, data: Any) -> str:
        key = super().to_internal_value(data)
        key_type = _pix_key_type(self)
        if key_type is not None and normalize_pix_key(key_type, key) is None:
            raise problem(f"Must be {PIX_KEY_SHAPES[key_type]}, for pixKeyType {key_type}.", "invalid_pix_key")
        return key


class _BeneficiaryDocumentField(DocumentField):
    def to_internal_value(self, data: Any) -> str:
        document = super().to_internal_value(data)
        key_type = _pix_key_type(self)
        if key_type in ("CPF", "CNPJ"):
            key = normalize_pix_key(key_type, request_body(self).get("pixKey"))
            if key is not None and key != document:
                raise problem(f"Must be the same document as pixKey when pixKeyType is {key_type}.",
                               "beneficiary_mismatch")
        return document


class PayoutRequestSerializer(StrictSerializer):
    """Context: `merchant`."""

    amount = _PayoutAmountField()
    pixKey = _PixKeyField()
    pixKeyType = _PixKeyTypeField()
    referenceId = ReferenceIdField()
    beneficiaryName = StrictCharField(max_length=BENEFICIARY_NAME_MAX_LENGTH, required=False, allow_blank=True)
    beneficiaryDocument = _BeneficiaryDocumentField(required=False)
    webhookUrl = WebhookUrlField(required=False)
    description = StrictCharField(max_length=DESCRIPTION_MAX_LENGTH, required=False, allow_blank=True)
    metadata = MetadataField(required=False)


def payout_request_validate(data: Any, *, merchant: Merchant) -> dict:
    """Validated, normalized input of POST /payout, or raise a DomainError carrying every problem at once in details.

    Keys: amount, pix_key (canonical), pix_key_as_sent, pix_key_type, reference_id, beneficiary_name,
    beneficiary_document (normalized), webhook_url, description ("" when absent) and metadata ({} when absent).
    """
    result = _fast_validate(data, merchant=merchant)
    if result is None:
        result = _validate_with_serializer(data, merchant=merchant)
    return result


def _validate_with_serializer(data: Any, *, merchant: Merchant) -> dict:
    """payout_request_validate by PayoutRequestSerializer: any body, every problem reported."""
    try:
        body = PayoutRequestSerializer.validated(data, merchant=merchant)
    except ValidationError as exc:
        raise as_domain_error(exc) from exc
    key_type = body["pixKeyType"]
    return {
        "amount": body["amount"],
        "pix_key": normalize_pix_key(key_type, body["pixKey"]),
        "pix_key_as_sent": body["pixKey"],
        "pix_key_type": key_type,
        "reference_id": body["referenceId"],
        "beneficiary_name": body.get("beneficiaryName", ""),
        "beneficiary_document": body.get("beneficiaryDocument", ""),
        "webhook_url": body.get("webhookUrl", ""),
        "description": body.get("description", ""),
        "metadata": body.get("metadata", {}),
    }


# --- Fast path -------------------------------------------------------------------------------------------------------
# Every field but webhookUrl: its SSRF check resolves the host, which costs far more than the serializer saves.
_FAST_FIELDS = frozenset({"amount", "pixKey", "pixKeyType", "referenceId", "beneficiaryName", "beneficiaryDocument",
                          "description", "metadata"})
# Beyond a bigint (a merchant's maximum is one) the serializer's int(str(amount)) may even fail: let it decide.
_AMOUNT_CEILING = 2**63 - 1


def _fast_validate(data: Any, *, merchant: Merchant) -> dict | None:
    """What _validate_with_serializer returns for `data`, when `data` is a valid body of the common shapes; else None.

    The serializer's rules, field by field, for JSON's own types only (exactly dict, str and int: a subclass, a bool
    or a float goes to the serializer). It never refuses a body: None only means "ask the serializer", which alone
    writes the errors. Each rule below names the field class whose rule it repeats; a change there must be made here
    too (tests/payments/test_payout_validation_fast_path.py compares both paths over a corpus of bodies).
    """
    if type(data) is not dict or not _FAST_FIELDS.issuperset(data):  # StrictSerializer: no unknown field
        return None
    amount = data.get("amount")
    key_type = data.get("pixKeyType")
    key = data.get("pixKey")
    reference_id = data.get("referenceId")
    if type(amount) is not int or type(key_type) is not str or type(key) is not str or type(reference_id) is not str:
        return None
    # _PayoutAmountField
    if amount < 1 or amount > _payout_max_amount(merchant) or amount > _AMOUNT_CEILING:
        return None
    # _PixKeyTypeField, ReferenceIdField
    if key_type not in PIX_KEY_TYPES or not REFERENCE_ID.fullmatch(reference_id):
        return None
    # _PixKeyField: "" never fits a type; NUL and surrogates never do either, but CharField's check is kept.
    pix_key = normalize_pix_key(key_type, key)
    if pix_key is None or UNSTORABLE.search(key):
        return None
    # StrictCharField(allow_blank=True): trimmed, "" when blank
    beneficiary_name = fast_text(data.get("beneficiaryName", ""), BENEFICIARY_NAME_MAX_LENGTH, min_length=0)
    description = fast_text(data.get("description", ""), DESCRIPTION_MAX_LENGTH, min_length=0)
    if beneficiary_name is None or description is None:
        return None
    # _BeneficiaryDocumentField: trimmed, normalized, a valid CPF or CNPJ (so ASCII), the key's own for those types.
    beneficiary_document = ""
    if "beneficiaryDocument" in data:
        document = data["beneficiaryDocument"]
        if type(document) is not str:
            return None
        beneficiary_document = documents.normalize(document.strip())
        if documents.document_type(beneficiary_document) is None:
            return None
        if key_type in ("CPF", "CNPJ") and beneficiary_document != pix_key:
            return None
    metadata = fast_metadata(data.get("metadata", {}))  # MetadataField
    if metadata is None:
        return None
    return {
        "amount": amount,
        "pix_key": pix_key,
        "pix_key_as_sent": key,
        "pix_key_type": key_type,
        "reference_id": reference_id,
        "beneficiary_name": beneficiary_name,
        "beneficiary_document": beneficiary_document,
        "webhook_url": "",
        "description": description,
        "metadata": metadata,
    }
