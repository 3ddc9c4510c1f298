"""The error codes of the API: every `code` a `DomainError` subclass declares, with what it means and what to do.
Rendered into the OpenAPI info description and into docs/errors.md (tests/payments/test_reference.py holds both to
the code: a new DomainError without a meaning here, or a guide that drifts, fails the suite)."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import serializers

from core.api import StrictSerializer
from core.errors import DomainError

# code -> what it means and what to do. Every code of a DomainError subclass must be here.
MEANINGS: dict[str, str] = {
    "validation_error": "One or more fields are invalid; `details` lists every problem (param, code, message).",
    "unknown_field": "The body or query has a field this endpoint does not know (a typo?); `details` names them.",
    "malformed_json": "The body is not valid JSON.",
    "insufficient_balance": "The available balance does not cover the payout (amount + fee) or the refund.",
    "amount_too_small": "Below the minimum: 100 cents for PIX and CREDIT_CARD, 500 for BOLETO, 1 for payouts.",
    "amount_too_large": "Above the account's maximum per charge (R$ 100.000,00 unless agreed otherwise).",
    "payout_limit_exceeded": "Above the account's maximum per payout, or the day's payouts would pass the daily "
                             "maximum (São Paulo day).",
    "live_card_in_test_mode": "Test keys accept only the test card numbers (docs/sandbox.md).",
    "beneficiary_mismatch": "beneficiaryDocument is not the CPF or CNPJ of the Pix key.",
    "invalid_webhook_url": "webhookUrl is not https://, has credentials, or its host resolves to a private, loopback "
                           "or otherwise reserved address.",
    "authentication_required": "No API key pair was sent: use HTTP Basic or x-api-key and x-api-secret.",
    "invalid_api_key": "The key pair is unknown, its secret is wrong, or the two forms sent name different pairs.",
    "api_key_revoked": "The key pair was revoked (the message says when): use an active pair. Only a request with the "
                       "pair's right secret hears this; a wrong secret is invalid_api_key.",
    "kyc_not_approved": "Live keys work once the account's KYC is approved; use test keys until then.",
    "account_suspended": "The account is suspended by staff: every request is refused; contact support.",
    "permission_denied": "The key pair may not do this.",
    "test_mode_only": "Sandbox controls work with test keys only.",
    "not_found": "No such object for this key pair's account and mode (another account's objects are not found "
                 "either), or no such path.",
    "method_not_allowed": "The path exists but not with this HTTP method.",
    "invalid_state": "The object's status does not allow this (e.g. canceling a PAID charge); read it again.",
    "duplicate_reference_id": "A payout with this referenceId exists; `details[0].existingId` is its id.",
    "idempotency_key_in_use": "A request with this Idempotency-Key is still running; retry shortly with the same key.",
    "refund_not_supported": "BOLETO charges cannot be refunded.",
    "payload_too_large": "Request bodies are limited to 64 KiB (256 KiB for dispute evidence).",
    "unsupported_media_type": "Send the body as Content-Type: application/json.",
    "idempotency_key_reused": "This Idempotency-Key was used with another body or path; use a new key.",
    "rate_limited": "Too many requests for this key pair (or failed authentications from this address); wait "
                    "Retry-After seconds.",
    "internal_error": "A failure on our side, logged with the requestId; nothing of it is shown. Retry with the same "
                      "Idempotency-Key.",
    "request_interrupted": "The first request with this Idempotency-Key stopped after it took effect; it is not run "
                           "again: find its result (list by referenceId) instead of retrying.",
    "service_unavailable": "A service the API needs (database, broker, rate-limit counters) does not answer; retry.",
    "rail_unavailable": "The payment network did not answer; nothing was charged or sent. Retry with the same "
                        "Idempotency-Key.",
    "payment_method_unavailable": "Live mode on a real rail that does not carry this method yet; nothing was "
                                  "created. Test mode has every method.",
    "raw_card_data_not_allowed": "Live mode on a rail that takes cards only as its browser token (with "
                                 "PAYMENTS_RAIL=efi): send card.token, the payment_token Efí's library made in the "
                                 "payer's browser, or no card (the payer pays on the hosted page). Card numbers and "
                                 "CVVs are never read; nothing was created.",
    "invalid_notification": "The public route of a rail's notifications got a body the rail does not send (not an "
                            "API error).",
    "notification_too_large": "The public route of a rail's notifications got one naming more than 100 distinct "
                              "payments: refused whole, with no call to the bank; reconciliation finds them (not an "
                              "API error).",
    "owner_only": "Dashboard: only the account's owner may change the owner's rights or hand ownership over (not an "
                  "API error).",
    "already_member": "Dashboard: the invited e-mail already belongs to a member of this account (not an API error).",
    "invitation_invalid": "Dashboard: the invitation link is unknown, used, revoked or older than 72 hours (not an "
                          "API error).",
    "invitation_other_email": "Dashboard: the invitation was sent to another e-mail than the signed-in user's (not an "
                              "API error).",
    "invalid_code": "Dashboard: a two-factor code or recovery code that is wrong or already used (not an API error).",
    "reauth_required": "Dashboard: new recovery codes, turning two-factor sign-in off and a new password need the "
                       "password or a current code, given within 5 minutes (not an API error).",
    "email_taken": "Dashboard sign-up: an account with this e-mail exists (not an API error).",
    "reason_required": "Admin: a KYC rejection needs a reason (not an API error).",
    "items_total_mismatch": "The items' quantity × unitPrice do not add up to amount; the detail's message gives both "
                            "figures.",
    "invisible_characters_not_allowed": "Every problem of the request is text a payer reads with an invisible, "
                                        "direction-changing or control character; `details` names each field.",
}

# details[].code of validation errors: the field-level problems, by field rule.
DETAIL_CODES: dict[str, str] = {
    "required": "The field is missing (or required by another field: an address for BOLETO).",
    "null": "null is not accepted here.",
    "invalid": "The wrong JSON type: a float, string, boolean or null where an integer belongs, and so on.",
    "not_a_list": "Not a JSON array where one belongs (items).",
    "blank": "An empty string where text is required.",
    "null_characters_not_allowed / surrogate_characters_not_allowed": "Text with a NUL character (`\\u0000`) or a "
                                                                      "lone surrogate (`\\ud800` to `\\udfff`): it "
                                                                      "cannot be stored.",
    "min_value / max_value": "An integer out of its range.",
    "min_length / max_length": "A string or list of the wrong length.",
    "invalid_choice": "Not one of the allowed values (paymentMethod, pixKeyType, status, action, ...).",
    "not_allowed": "A field not allowed with this paymentMethod (card with PIX, pix with BOLETO, ...).",
    "unknown_field": "A field or query parameter the endpoint does not know.",
    "invalid_document": "Not a valid CPF or CNPJ (check digits, or one digit repeated).",
    "invalid_email / invalid_phone / invalid_zip_code / invalid_state": "A contact field in the wrong form.",
    "invalid_ip_address": "payerIp is not an IPv4 or IPv6 address.",
    "invalid_reference_id": "referenceId is not 1 to 64 of letters, digits and . _ : -.",
    "invalid_card_number / unsupported_card_brand": "Not 13 to 19 digits with a valid Luhn check digit, or a brand "
                                                    "we do not take.",
    "invalid_cvv / invalid_expiration_month / invalid_expiration_year / expired_card": "Card data in the wrong form, "
                                                                                       "or the card has expired.",
    "invalid_token / token_with_card_data": "No card token of this account and mode has this value, or both a token "
                                            "and card data were sent.",
    "invalid_date / invalid_due_date": "boleto.dueDate is not YYYY-MM-DD, or not from today to 365 days ahead.",
    "invalid_datetime": "A list filter (createdFrom, createdTo) that is not an ISO 8601 timestamp with its offset.",
    "refund_exceeds_remaining": "A refund's amount is more than what is left to refund of the charge.",
    "invalid_idempotency_key": "The Idempotency-Key header is not 1 to 255 printable ASCII characters.",
    "unavailable": "GET /health: the database or the broker named in `param` does not answer (with 503).",
    "invalid_pix_key": "The Pix key does not fit its pixKeyType.",
    "invalid_metadata": "metadata breaks its limits (20 keys, keys 1 to 40, string values up to 500).",
    "items_total_mismatch": "On `items`: the items add up to another amount than `amount` (both figures in the "
                            "message).",
    "invisible_characters_not_allowed": "Text a payer reads (description, items, customer name and address, boleto "
                                        "instructions) has an invisible, direction-changing or control character "
                                        "(U+202A-202E, U+2066-2069, U+200B-200F, U+FEFF, C0 and C1 controls...); the "
                                        "message names it and its position.",
    "invalid_amount": "GET /payin/installments: `amount` is not an integer of cents from 100.",
    "invalid_limit / invalid_cursor / invalid_object_id": "A list parameter that this API did not write or that is "
                                                          "out of range.",
}


# Codes a field's class declares that the API's fields never raise: StrictIntegerField takes JSON integers only (the
# string-length guard of DRF's IntegerField is never reached), and JSON has no datetime a date field could refuse.
UNREACHABLE_FIELD_CODES = {"max_string_length", "datetime"}
# The packages whose serializers read the API's requests.
API_PACKAGES = ("core", "integrations", "payments", "webhooks")
# Raised by a field's validators (Django's and DRF's: max_length, NUL and surrogate characters...), not by the field.
_VALIDATED_CODES = {"max_length", "min_length", "max_value", "min_value"}


def _field_codes(field: serializers.Field) -> set[str]:
    """The `details[].code`s a request field can give: the problems its class fails with that apply to it (`required`
    only if it is required, `blank` only if blank is refused...), its validators' codes, and its children's."""
    codes = {getattr(validator, "code", None) for validator in field.validators} - {None}
    for code in set(field.error_messages) - _VALIDATED_CODES - UNREACHABLE_FIELD_CODES:
        applies = {"required": field.required, "null": not field.allow_null,
                   "blank": not getattr(field, "allow_blank", True), "empty": not getattr(field, "allow_empty", True)}
        if applies.get(code, True):
            codes.add(code)
    if isinstance(field, serializers.ListField | serializers.DictField):
        codes |= _field_codes(field.child)
    elif isinstance(field, serializers.ListSerializer):
        codes |= _field_codes(field.child)
    elif isinstance(field, serializers.Serializer):
        for child in field.fields.values():
            codes |= _field_codes(child)
    return codes


def request_field_codes() -> set[str]:
    """Every `details[].code` the fields of the API's request serializers (StrictSerializer's subclasses, loaded with
    the URLconf) can give. Codes a serializer's own rules raise (invalid_document, ...) are in DETAIL_CODES by hand."""
    codes: set[str] = set()
    for cls in _subclasses(StrictSerializer):
        if cls.__module__.partition(".")[0] in API_PACKAGES:  # not a test's own serializer
            codes |= _field_codes(cls())
    return codes


@dataclass(frozen=True)
class ErrorCode:
    code: str
    http_status: int
    type: str
    meaning: str


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.extend([sub, *_subclasses(sub)])
    return found


def error_catalog() -> list[ErrorCode]:
    """Every code of the DomainError subclasses loaded (all of them, once the URLconf is), by HTTP status then code.

    A code two classes share (kyc_not_approved, service_unavailable) is listed once, with the API's class."""
    codes: dict[str, ErrorCode] = {}
    for cls in _subclasses(DomainError):
        if cls.code not in codes:
            codes[cls.code] = ErrorCode(cls.code, cls.status_code, cls.type, MEANINGS.get(cls.code, ""))
    return sorted(codes.values(), key=lambda error: (error.http_status, error.code))


def errors_markdown() -> str:
    """The error codes as Markdown tables: the top-level `error.code`, then the `details[].code` of validation."""
    lines = ["| HTTP | type | code | meaning |", "|---|---|---|---|"]
    lines += [f"| {e.http_status} | {e.type} | `{e.code}` | {e.meaning} |" for e in error_catalog()]
    lines += ["", "Field problems (`error.details[].code` of a `validation_error`):", "",
              "| code | meaning |", "|---|---|"]
    lines += ["| {} | {} |".format(" / ".join(f"`{c}`" for c in codes.split(" / ")), meaning)
              for codes, meaning in DETAIL_CODES.items()]
    return "\n".join(lines) + "\n"
