"""Text a payer reads: no character that hides itself or reorders what is around it.

An order "Pedido <U+202E>1234 gpj.exe" reads "Pedido exe.jpg 4321" on the payer's screen; a zero-width space makes two
names that look alike differ; a control character has no business in a name. Every field a payer sees (a charge's
description, its items, the customer's name and address, the boleto's instructions, the merchant's name and trading
name) refuses such text with its field named, through this one rule: the API with 400
`invisible_characters_not_allowed`, the dashboard's and the admin's forms with the error beside the field. Refused,
not stripped: text silently changed between what the merchant sent and what the payer sees is the same defect.
(docs/decisions/0076-text-a-payer-reads-refuses-hidden-characters.md)
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.utils.translation import gettext

from core.errors import DomainError

# C0 controls and DEL, C1 controls, the Arabic letter mark, zero-width space/non-joiner/joiner and the LRM/RLM marks,
# the word joiner and invisible operators, the bidi embeddings/overrides (LRE RLE PDF LRO RLO) and isolates
# (LRI RLI FSI PDI), and the zero-width no-break space (BOM).
HIDDEN_RANGES = ("\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200b-\\u200f\\u2060-\\u2064\\u202a-\\u202e\\u2066-\\u2069"
                 "\\ufeff")
HIDDEN = re.compile(f"[{HIDDEN_RANGES}]")  # the same escapes serve Python's re and the OpenAPI schema's patterns
CODE = "invisible_characters_not_allowed"


class InvisibleCharacters(DomainError):
    """A request whose only problems are hidden characters answers with this code at the top (core.errors)."""

    code = CODE
    message = "The request has text with invisible or control characters"
    validation_kind = True


def hidden_character_message(text: str) -> str | None:
    """What is wrong with `text` (its first hidden character, by code point and 1-based position), or None."""
    found = HIDDEN.search(text)
    if found is None:
        return None
    return gettext("Must not contain invisible, direction-changing or control characters (U+%(code)04X at "
                   "character %(position)s): payers would read something else than what was sent.") % {
        "code": ord(found.group()), "position": found.start() + 1}


def refuse_hidden_characters(value: object) -> None:
    """The rule as a Django validator, for model fields (the admin's forms) and form fields (the dashboard's)."""
    message = hidden_character_message(value) if isinstance(value, str) else None
    if message is not None:
        raise ValidationError(message, code=CODE)
