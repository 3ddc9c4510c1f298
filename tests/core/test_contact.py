"""core.formats.contact: the e-mail validator is Django's, with its patterns compiled once."""

from __future__ import annotations

import pytest
from django.core import validators
from django.core.exceptions import ValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from core.formats.contact import EmailValidator

ADDRESSES = [
    "ana@example.com", "Ana.Souza+loja@Example.COM.br", "a@b", "a@localhost", "a@[127.0.0.1]", "a@[::1]",
    "a@[300.1.1.1]", '"quoted name"@example.com', '"bad\x00"@example.com', "a..b@example.com", ".a@example.com",
    "a.@example.com", "a@-example.com", "a@example-.com", "a@example..com", "a@xn--bcher-kva.example",
    "a@exämple.com", "ä@example.com", "a@example.c0m", "a@example.com.", "", "@", "a@", "@example.com",
    "a" * 64 + "@example.com", "a@" + "b" * 64 + ".com", "a@" + ("b" * 60 + ".") * 6 + "com", "a b@example.com",
    "a@example.com\n", "a\n@example.com",
]


def verdict(validator, value: str) -> bool:
    try:
        validator(value)
    except ValidationError:
        return False
    return True


def test_the_patterns_are_djangos():
    for name in ("user_regex", "domain_regex", "literal_regex"):
        ours, django = getattr(EmailValidator, name), getattr(validators.EmailValidator, name)
        assert (ours.pattern, ours.flags) == (django.pattern, django.flags)


@pytest.mark.parametrize("allowlist", [None, []])
def test_every_address_gets_djangos_verdict(allowlist):
    ours, django = EmailValidator(allowlist=allowlist), validators.EmailValidator(allowlist=allowlist)
    verdicts = [verdict(ours, address) for address in ADDRESSES]
    assert verdicts == [verdict(django, address) for address in ADDRESSES]
    assert True in verdicts and False in verdicts


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ09.-_+@[]:\"\\ äx\n"), max_size=40))
def test_drawn_strings_get_djangos_verdict(value):
    assert verdict(EmailValidator(), value) == verdict(validators.EmailValidator(), value)
