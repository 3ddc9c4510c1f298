"""Request fields that charges and payouts share (reference ids, documents, webhook URLs, metadata), with their
OpenAPI descriptions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from config.api import StrictCharField
from config.errors import DomainError
from config.schema import Documented
from payments.formats import documents
from payments.formats.contact import UF_CODES
from webhooks.ssrf import webhook_url_validate


def pattern_field(pattern: str, **kwargs) -> serializers.Field:
    return Documented({"type": "string", "pattern": pattern}, **kwargs)


REFERENCE_ID_PATTERN = "^[A-Za-z0-9._:-]{1,64}$"


# `.`, `-`, `/` and spaces are dropped, letters upper-cased; then a CPF (11 digits) or a CNPJ (12 letters or digits
# and 2 check digits).
DOCUMENT_PATTERN = "^[-./ ]*(([0-9][-./ ]*){11}|([0-9A-Za-z][-./ ]*){12}([0-9][-./ ]*){2})$"


DOCUMENT_HELP = ("CPF (11 digits) or CNPJ (14 characters, alphanumeric allowed), check digits valid and not one digit "
                 "repeated; '.', '-', '/' and spaces are dropped first.")


_EMAIL_ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"


_EMAIL_LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"


_EMAIL_TLD = "([A-Za-z][A-Za-z-]{0,61}[A-Za-z]|[Xx][Nn]--[A-Za-z0-9]{1,59})"


# Django's EmailValidator in its common form: a dot-atom, a DNS domain whose last label has letters only (or is an
# A-label). It also takes quoted local parts, address literals and IDN domains, which this pattern leaves out.
EMAIL_PATTERN = f"^{_EMAIL_ATOM}(\\.{_EMAIL_ATOM})*@({_EMAIL_LABEL}\\.)+{_EMAIL_TLD}$"


PHONE_PATTERN = "^[-+() ]*([0-9][-+() ]*){10,13}$"


ZIP_CODE_PATTERN = "^[-.]*([0-9][-.]*){8}$"


# One of the 27 UF codes, in any case (upper-cased when stored).
STATE_PATTERN = "^({})$".format("|".join("".join(f"[{c}{c.lower()}]" for c in code) for code in UF_CODES))


def webhook_url_schema() -> dict:
    scheme = "[Hh][Tt][Tt][Pp][Ss]?" if settings.WEBHOOKS_ALLOW_HTTP else "[Hh][Tt][Tt][Pp][Ss]"
    label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    port = "(:0*([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])?)?"
    h16 = "[0-9A-Fa-f]{1,4}"
    ipv6 = "|".join([f"({h16}:){{7}}{h16}", f"({h16}:){{1,7}}:", f"({h16}:){{1,6}}:{h16}",
                     *(f"({h16}:){{1,{5 - n}}}(:{h16}){{1,{n + 2}}}" for n in range(4)), f"{h16}:(:{h16}){{1,6}}",
                     f":((:{h16}){{1,7}}|:)"])
    host = f"(({label}\\.)*{label}\\.?|\\[({ipv6})\\])"
    # After the host: no space, control character or backslash (the delivery client would read those differently).
    rest = "([/?#][^\\s\\\\\\u0000-\\u001f]*)?"
    return {"type": "string", "format": "uri", "maxLength": 2048, "pattern": f"^{scheme}://{host}{port}{rest}$"}


def webhook_url_doc() -> serializers.Field:
    return Documented(webhook_url_schema(), required=False,
                      help_text="https:// (no credentials in it) to a host that resolves only to public addresses: "
                                "loopback, private, link-local and other reserved addresses are refused.")


def metadata_doc() -> serializers.Field:
    values = {"type": "string", "maxLength": METADATA_VALUE_MAX_LENGTH, "pattern": "^[^\\u0000]*$"}
    return Documented(
        {"type": "object", "maxProperties": METADATA_MAX_KEYS, "additionalProperties": values}, required=False,
        help_text=f"At most {METADATA_MAX_KEYS} keys of 1 to {METADATA_KEY_MAX_LENGTH} characters, string values of at "
                  f"most {METADATA_VALUE_MAX_LENGTH}; echoed back and in webhooks.")


METADATA_MAX_KEYS = 20


METADATA_KEY_MAX_LENGTH = 40


METADATA_VALUE_MAX_LENGTH = 500


REFERENCE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def problem(message: str, code: str) -> ValidationError:
    return ValidationError(message, code=code)


def request_body(field: serializers.Field) -> Mapping:
    """The raw body being validated, for the rules that depend on another field."""
    body = getattr(field.root, "initial_data", None)
    return body if isinstance(body, Mapping) else {}


# --- Fields ----------------------------------------------------------------------------------------------------------
class ExactCharField(StrictCharField):
    """A string taken as sent: identifiers, card data and URLs are not silently trimmed into something else."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)


class ReferenceIdField(ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not REFERENCE_ID.fullmatch(value):
            raise problem("Must be 1 to 64 characters of letters, digits, '.', '_', ':' and '-'.",
                           "invalid_reference_id")
        return value


class WebhookUrlField(ExactCharField):
    def to_internal_value(self, data: Any) -> str:
        url = super().to_internal_value(data)
        try:
            return webhook_url_validate(url, param=self.field_name)
        except DomainError as exc:
            # Turned into a field error so that it is reported with the body's other problems.
            raise ValidationError([ErrorDetail(d["message"], code=d["code"]) for d in exc.details]
                                  or [ErrorDetail(exc.message, code=exc.code)]) from None


class MetadataField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, dict):
            raise problem("Must be a JSON object.", "invalid_metadata")
        problems = []
        if len(data) > METADATA_MAX_KEYS:
            problems.append(f"Must have at most {METADATA_MAX_KEYS} keys.")
        if not all(isinstance(key, str) and 1 <= len(key) <= METADATA_KEY_MAX_LENGTH for key in data):
            problems.append(f"Keys must be 1 to {METADATA_KEY_MAX_LENGTH} characters.")
        if not all(isinstance(value, str) for value in data.values()):
            problems.append("Values must be strings.")
        elif any(len(value) > METADATA_VALUE_MAX_LENGTH for value in data.values()):
            problems.append(f"Values must be at most {METADATA_VALUE_MAX_LENGTH} characters.")
        # As for every other string of the API (DRF's CharField): PostgreSQL cannot store them (they were a 500).
        if any(UNSTORABLE.search(text) for item in data.items() for text in item if isinstance(text, str)):
            problems.append("Keys and values must not contain NUL or surrogate characters.")
        if problems:
            raise ValidationError([ErrorDetail(message, code="invalid_metadata") for message in problems])
        return dict(data)


class DocumentField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        document = documents.normalize(super().to_internal_value(data))
        if documents.document_type(document) is None:
            raise problem("Must be a valid CPF (11 digits) or CNPJ (14 characters), check digits included.",
                           "invalid_document")
        return document


def fast_text(value: Any, max_length: int, *, min_length: int = 1) -> str | None:
    """A StrictCharField's value: trimmed, within its lengths (min_length=0 where it allows blanks), storable."""
    if type(value) is not str:
        return None
    value = value.strip()
    return value if min_length <= len(value) <= max_length and not UNSTORABLE.search(value) else None


def fast_metadata(data: Any) -> dict | None:
    if type(data) is not dict or len(data) > METADATA_MAX_KEYS:
        return None
    for key, value in data.items():
        if (type(key) is not str or type(value) is not str or not 1 <= len(key) <= METADATA_KEY_MAX_LENGTH
                or len(value) > METADATA_VALUE_MAX_LENGTH or UNSTORABLE.search(key) or UNSTORABLE.search(value)):
            return None
    return dict(data)
