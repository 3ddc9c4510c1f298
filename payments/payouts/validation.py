"""The body of POST /payout, checked and normalized (SPEC §4.1), as payments.payins.validation checks a charge's.

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

PayoutRequestSerializer is the one declaration of the body: it validates every request, and the OpenAPI request
variants (payments.payouts.schema, by payments.openapi) are derived from its fields. Each field's rules are in its
class's `to_internal_value`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from accounts.models import Merchant
from core.api import StrictCharField, StrictIntegerField, StrictSerializer
from core.errors import as_domain_error, lazy_format
from core.formats import documents
from core.schema import Const, Documented
from payments import policy
from payments.fields import (
    EMAIL_PATTERN,
    DocumentField,
    ExactCharField,
    MetadataField,
    ReferenceIdField,
    StrictChoiceField,
    WebhookUrlField,
    problem,
    request_body,
)
from payments.formats import pix_keys
from payments.formats.pix_keys import EMAIL_MAX_LENGTH, PIX_KEY_TYPES, normalize_pix_key

BENEFICIARY_NAME_MAX_LENGTH = 120
DESCRIPTION_MAX_LENGTH = 140

# What is wrong with a key that does not fit its type, by type and fault (payments.formats.pix_keys.pix_key_fault):
# each message names exactly that, and none repeats the key.
PIX_KEY_MESSAGES = {
    "CPF": {
        documents.CHARACTERS: _("Must be digits only, without punctuation or spaces, for pixKeyType CPF."),
        documents.LENGTH: _("Must be 11 digits, for pixKeyType CPF."),
        documents.REPEATED: _("Must not be one digit repeated: no CPF is."),
        documents.CHECK_DIGITS: _("The CPF's check digits (its last two) are wrong."),
    },
    "CNPJ": {
        documents.CHARACTERS: _("Must be digits and uppercase letters only, without punctuation or spaces, for "
                                "pixKeyType CNPJ."),
        documents.LENGTH: _("Must be 14 characters, for pixKeyType CNPJ."),
        documents.CHECK_DIGIT_CHARACTERS: _("The CNPJ's last two characters, its check digits, must be digits."),
        documents.REPEATED: _("Must not be one character repeated: no CNPJ is."),
        documents.CHECK_DIGITS: _("The CNPJ's check digits (its last two) are wrong."),
    },
    "EMAIL": {
        documents.LENGTH: lazy_format(_("Must be at most %(maximum)s characters, for pixKeyType EMAIL."),
                                      maximum=EMAIL_MAX_LENGTH),
        documents.CHARACTERS: _("Must be ASCII characters only, for pixKeyType EMAIL."),
        pix_keys.FORMAT: _("Must be an email address (a name, @ and a domain with a dot), for pixKeyType EMAIL."),
    },
    "PHONE": {
        documents.CHARACTERS: _("Must be digits only after an optional +, without spaces, dashes or parentheses, "
                                "for pixKeyType PHONE."),
        pix_keys.COUNTRY_CODE: _("Must start with +55, Brazil's country code, for pixKeyType PHONE."),
        pix_keys.FORMAT: _("Must be +55, a two-digit area code without a 0, then 8 digits or 9 starting with 9, "
                           "for pixKeyType PHONE."),
    },
    "EVP": {
        documents.LENGTH: lazy_format(_("Must be %(length)s characters, for pixKeyType EVP."),
                                      length=pix_keys.EVP_LENGTH),
        pix_keys.FORMAT: _("Must be a UUID: hex digits in groups of 8-4-4-4-12 joined by '-', for pixKeyType "
                           "EVP."),
    },
}


def _pix_key_type(body: Mapping) -> str | None:
    """The body's pixKeyType when it is a valid one; with none, the rules that depend on it are not applied."""
    key_type = body.get("pixKeyType")
    return key_type if isinstance(key_type, str) and key_type in PIX_KEY_TYPES else None


class _PayoutAmountField(StrictIntegerField):
    def documented(self, body: Mapping, required: bool) -> serializers.Field:
        return _PayoutAmountField(
            min_value=1, max_value=settings.PAYOUT_MAX_AMOUNT, required=required,
            help_text="Cents; at most the account's maximum per payout (by default the maximum here), and the day's "
                      "payouts at most its daily maximum.")

    def to_internal_value(self, data: Any) -> int:
        amount = super().to_internal_value(data)
        if amount < 1:
            raise problem(gettext("Must be at least 1 cent."), "amount_too_small")
        maximum = policy.payout_max_amount(self.context["merchant"])
        if amount > maximum:
            raise problem(gettext("Must be at most %(maximum)s cents, this account's maximum per payout.") % {
                "maximum": maximum},
                          "payout_limit_exceeded")
        return amount


class _PixKeyTypeField(StrictChoiceField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=PIX_KEY_TYPES, **kwargs)

    def documented(self, body: Mapping, required: bool) -> serializers.Field:
        key_type = _pix_key_type(body)
        if key_type is None:
            return _PixKeyTypeField(required=required)
        return Const(key_type, component=f"{key_type.capitalize()}KeyType")  # CpfKeyType...


class _PixKeyField(ExactCharField):
    """Returns the key's canonical form (the key as sent, untrimmed, is the body's own: see _result)."""

    # What JSON Schema can say of each type's keys (check digits aside), with its description.
    SCHEMAS = {
        "CPF": ("^[0-9]{11}$", "11 digits, check digits valid, no punctuation."),
        "CNPJ": ("^[0-9A-Z]{12}[0-9]{2}$", "14 digits or uppercase letters, check digits valid, no punctuation."),
        "EMAIL": (EMAIL_PATTERN, "An e-mail address (ASCII, a domain with a dot), compared lowercased."),
        "PHONE": ("^\\+?55[1-9]{2}(9[0-9]{8}|[2-9][0-9]{7})$",
                  "+55, the area code and the number, e.g. +5511987654321."),
        "EVP": ("^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$",
                "The random key: a UUID of 36 characters."),
    }

    def documented(self, body: Mapping, required: bool) -> serializers.Field:
        key_type = _pix_key_type(body)
        if key_type is None:
            return _PixKeyField(required=required)
        pattern, help_text = self.SCHEMAS[key_type]
        schema = {"type": "string", "pattern": pattern}
        if key_type == "EMAIL":
            schema = {"type": "string", "maxLength": EMAIL_MAX_LENGTH, "pattern": pattern}
        return Documented(schema, required=required, help_text=help_text)

    def to_internal_value(self, data: Any) -> str:
        key = super().to_internal_value(data)
        key_type = _pix_key_type(request_body(self))
        if key_type is None:
            return key  # the body is refused for its pixKeyType
        canonical = normalize_pix_key(key_type, key)
        if canonical is None:
            raise problem(PIX_KEY_MESSAGES[key_type][pix_keys.pix_key_fault(key_type, key)], "invalid_pix_key")
        return canonical


class _BeneficiaryDocumentField(DocumentField):
    def documented(self, body: Mapping, required: bool) -> serializers.Field:
        key_type = _pix_key_type(body)
        if key_type in ("CPF", "CNPJ"):
            return _BeneficiaryDocumentField(required=required, help_text=f"The key's {key_type}, if sent.")
        return _BeneficiaryDocumentField(required=required)

    def to_internal_value(self, data: Any) -> str:
        document = super().to_internal_value(data)
        body = request_body(self)
        key_type = _pix_key_type(body)
        if key_type in ("CPF", "CNPJ"):
            key = normalize_pix_key(key_type, body.get("pixKey"))
            if key is not None and key != document:  # an invalid key is reported on its own
                raise problem(gettext("Must be the same document as pixKey when pixKeyType is %(type)s.") % {
                    "type": key_type},
                              "beneficiary_mismatch")
        return document


class PayoutRequestSerializer(StrictSerializer):
    """Context: `merchant`."""

    amount = _PayoutAmountField()
    pixKey = _PixKeyField()
    pixKeyType = _PixKeyTypeField()
    referenceId = ReferenceIdField(help_text="Unique per account and mode (409 duplicate_reference_id).")
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
    try:
        body = PayoutRequestSerializer.validated(data, merchant=merchant)
    except ValidationError as exc:
        raise as_domain_error(exc) from exc
    return _result(body, data)


def _result(body: dict, data: dict) -> dict:
    """The result from the validated `body`; `data`, the body as sent, gives the key as sent (ExactCharField: the same
    string the field checked)."""
    return {
        "amount": body["amount"],
        "pix_key": body["pixKey"],
        "pix_key_as_sent": data["pixKey"],
        "pix_key_type": body["pixKeyType"],
        "reference_id": body["referenceId"],
        "beneficiary_name": body.get("beneficiaryName", ""),
        "beneficiary_document": body.get("beneficiaryDocument", ""),
        "webhook_url": body.get("webhookUrl", ""),
        "description": body.get("description", ""),
        "metadata": body.get("metadata", {}),
    }
