"""Request fields that charges and payouts share (reference ids, documents, webhook URLs, metadata), each with its rule
(in its `to_internal_value`, as DRF fields have them) and its OpenAPI schema."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from core.api import StrictCharField
from core.errors import DomainError
from core.formats import documents
from core.formats.contact import UF_CODES
from webhooks.ssrf import webhook_url_validate

REFERENCE_ID_PATTERN = "^[A-Za-z0-9._:-]{1,64}$"


# `.`, `-`, `/` and spaces are dropped, letters upper-cased; then a CPF (11 digits) or a CNPJ (12 letters or digits
# and 2 check digits).
DOCUMENT_PATTERN = "^[-./ ]*(([0-9][-./ ]*){11}|([0-9A-Za-z][-./ ]*){12}([0-9][-./ ]*){2})$"


DOCUMENT_HELP = ("CPF (11 digits) or CNPJ (14 characters, alphanumeric allowed), check digits valid and not one digit "
                 "repeated; '.', '-', '/' and spaces are dropped first.")


# What is wrong with a document, by (the document its length makes it, fault): each names exactly that.
DOCUMENT_MESSAGES = {
    (None, documents.CHARACTERS): _("Must have only digits, letters (a CNPJ's) and the punctuation '.', '-', '/' "
                                    "or spaces."),
    (None, documents.LENGTH): _("Must be a CPF of 11 digits or a CNPJ of 14 characters, punctuation aside."),
    ("CPF", documents.CHARACTERS): _("A CPF (11 characters) has digits only."),
    ("CPF", documents.REPEATED): _("Must not be one digit repeated: no CPF is."),
    ("CPF", documents.CHECK_DIGITS): _("The CPF's check digits (its last two) are wrong."),
    ("CNPJ", documents.CHECK_DIGIT_CHARACTERS): _("The CNPJ's last two characters, its check digits, must be digits."),
    ("CNPJ", documents.REPEATED): _("Must not be one character repeated: no CNPJ is."),
    ("CNPJ", documents.CHECK_DIGITS): _("The CNPJ's check digits (its last two) are wrong."),
}


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


def metadata_schema() -> dict:
    values = {"type": "string", "maxLength": METADATA_VALUE_MAX_LENGTH, "pattern": "^[^\\u0000]*$"}
    return {"type": "object", "maxProperties": METADATA_MAX_KEYS, "additionalProperties": values}


METADATA_MAX_KEYS = 20


METADATA_KEY_MAX_LENGTH = 40


METADATA_VALUE_MAX_LENGTH = 500


REFERENCE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # NUL and surrogates: PostgreSQL cannot store them in text


def problem(message: str, code: str) -> ValidationError:
    return ValidationError(message, code=code)


def request_body(field: serializers.Field) -> Mapping:
    """The raw body being validated, for the rules that depend on another field."""
    body = getattr(field.root, "initial_data", None)
    return body if isinstance(body, Mapping) else {}


class StrictChoiceField(serializers.ChoiceField):
    """One of `choices`, a JSON string exactly (no coercion of 1 to "1")."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in self.choices:
            raise problem(gettext("Must be one of %(choices)s.") % {"choices": ", ".join(self.choices)},
                          "invalid_choice")
        return data


# --- Fields ----------------------------------------------------------------------------------------------------------
class ExactCharField(StrictCharField):
    """A string taken as sent: identifiers, card data and URLs are not silently trimmed into something else."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)


class ReferenceIdField(ExactCharField):
    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": REFERENCE_ID_PATTERN}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not REFERENCE_ID.fullmatch(value):
            if len(value) > 64:
                raise problem(gettext("Must be at most 64 characters."), "invalid_reference_id")
            raise problem(gettext("Must have only letters, digits, '.', '_', ':' and '-' (no spaces)."),
                          "invalid_reference_id")
        return value


class WebhookUrlField(ExactCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "https:// (no credentials in it) to a host that resolves only to public "
                                       "addresses: loopback, private, link-local and other reserved addresses are "
                                       "refused.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return webhook_url_schema()

    def to_internal_value(self, data: Any) -> str:
        url = super().to_internal_value(data)
        try:
            return webhook_url_validate(url, param=self.field_name)
        except DomainError as exc:
            # Turned into a field error so that it is reported with the body's other problems.
            raise ValidationError([ErrorDetail(d["message"], code=d["code"]) for d in exc.details]
                                  or [ErrorDetail(exc.message, code=exc.code)]) from None


class MetadataField(serializers.Field):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", f"At most {METADATA_MAX_KEYS} keys of 1 to {METADATA_KEY_MAX_LENGTH} "
                                       f"characters, string values of at most {METADATA_VALUE_MAX_LENGTH}; echoed back "
                                       "and in webhooks.")
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return metadata_schema()

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, dict):
            raise problem(gettext("Must be a JSON object."), "invalid_metadata")
        problems = []
        if len(data) > METADATA_MAX_KEYS:
            problems.append(gettext("Must have at most %(maximum)s keys.") % {"maximum": METADATA_MAX_KEYS})
        if not all(isinstance(key, str) and 1 <= len(key) <= METADATA_KEY_MAX_LENGTH for key in data):
            problems.append(gettext("Keys must be 1 to %(maximum)s characters.") % {"maximum": METADATA_KEY_MAX_LENGTH})
        if not all(isinstance(value, str) for value in data.values()):
            problems.append(gettext("Values must be strings."))
        elif any(len(value) > METADATA_VALUE_MAX_LENGTH for value in data.values()):
            problems.append(gettext("Values must be at most %(maximum)s characters.") % {
                "maximum": METADATA_VALUE_MAX_LENGTH})
        # As for every other string of the API (DRF's CharField): PostgreSQL cannot store them (they were a 500).
        if any(UNSTORABLE.search(text) for item in data.items() for text in item if isinstance(text, str)):
            problems.append(gettext("Keys and values must not contain NUL or surrogate characters."))
        if problems:
            raise ValidationError(problems, code="invalid_metadata")
        return dict(data)


class DocumentField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", DOCUMENT_HELP)
        super().__init__(**kwargs)

    def openapi_schema(self) -> dict:
        return {"type": "string", "pattern": DOCUMENT_PATTERN}

    def to_internal_value(self, data: Any) -> str:
        document = documents.normalize(super().to_internal_value(data))
        if documents.document_type(document) is None:
            raise problem(DOCUMENT_MESSAGES[documents.document_fault(document)], "invalid_document")
        return document
