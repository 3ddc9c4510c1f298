"""A string field's maxLength is of the JSON string as sent, as the OpenAPI schema says: a value over it with
whitespace at an end is refused, not trimmed to fit (the fuzzing found a 20,001-character evidence text accepted)."""

from __future__ import annotations

import pytest
from rest_framework.exceptions import ValidationError

from core.api import StrictCharField


def test_the_length_is_checked_before_trimming():
    field = StrictCharField(max_length=5)

    with pytest.raises(ValidationError) as refused:
        field.run_validation("abcde ")
    assert refused.value.detail[0].code == "max_length"
    assert field.run_validation(" abc ") == "abc"  # within the length: trimmed as before
