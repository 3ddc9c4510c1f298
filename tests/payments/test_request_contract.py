"""One declaration per request body: the request serializer alone validates the body, so a field or a rule added to it
in any of DRF's ways (a field, `validators=[...]`, `validate_<field>`, `validate`) is checked with no other edit, and
reaches the OpenAPI request variants, which say what the declaration says."""

from datetime import date

import pytest
from drf_spectacular.plumbing import ComponentRegistry
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.views import APIView

from accounts.models import Merchant
from core.api import StrictCharField, StrictIntegerField
from core.errors import DomainError
from core.schema import AutoSchema
from payments.openapi import request_variant
from payments.payins import schema as payin_schema
from payments.payins import validation as payin_validation
from payments.payins.validation import PayinRequestSerializer
from payments.payouts import schema as payout_schema
from payments.payouts import validation as payout_validation
from payments.payouts.validation import PayoutRequestSerializer

TODAY = date(2026, 11, 20)
PIX_BODY = {"paymentMethod": "PIX", "amount": 5000, "payerIp": "203.0.113.9", "isPhysicalProduct": False,
            "referenceId": "order-1", "items": [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}],
            "customer": {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}}
PAYOUT_BODY = {"amount": 1000, "pixKey": "52998224725", "pixKeyType": "CPF", "referenceId": "r1"}


class _ExtendedPayin(PayinRequestSerializer):
    channel = StrictCharField(max_length=5)
    priority = StrictIntegerField(min_value=1, max_value=3, required=False)


class _ExtendedPayout(PayoutRequestSerializer):
    channel = StrictCharField(max_length=5, required=False, allow_blank=True)


def _codes(serializer_class, body: dict, **context) -> dict:
    """{field: [codes]} of the problems `serializer_class` finds in `body`."""
    with pytest.raises(ValidationError) as refused:
        serializer_class.validated(body, **context)
    return {name: [detail.code for detail in details] for name, details in refused.value.detail.items()}


def test_a_payin_field_is_validated_with_no_other_edit(settings):
    settings.CHARGE_MAX_AMOUNT = 10_000_000
    context = {"merchant": Merchant(), "livemode": False, "today": TODAY}
    body = {**PIX_BODY, "channel": " web ", "priority": 2}

    accepted = _ExtendedPayin.validated(body, **context)

    assert (accepted["channel"], accepted["priority"]) == ("web", 2)
    assert accepted["customer"]["document"] == "52998224725"
    assert _codes(_ExtendedPayin, {**body, "channel": "toolong"}, **context) == {"channel": ["max_length"]}
    assert _codes(_ExtendedPayin, {**body, "priority": 4}, **context) == {"priority": ["max_value"]}
    assert _codes(_ExtendedPayin, {**body, "priority": True}, **context) == {"priority": ["invalid"]}
    assert _codes(_ExtendedPayin, {k: v for k, v in body.items() if k != "channel"}, **context) == {
        "channel": ["required"]}


def test_a_payout_field_is_validated_with_no_other_edit():
    accepted = _ExtendedPayout.validated({**PAYOUT_BODY, "channel": "  "}, merchant=Merchant())

    assert accepted["channel"] == ""
    assert accepted["pixKey"] == "52998224725"


class _RuledPayout(PayoutRequestSerializer):
    """Rules added in each of DRF's ways: the review's probe found a compiled step that skipped the first two."""

    channel = StrictCharField(required=False, validators=[lambda value: _refuse(value == "fax", "no_fax")])

    def validate_referenceId(self, value: str) -> str:
        _refuse(value.startswith("test-"), "no_test_reference")
        return value

    def validate(self, attrs: dict) -> dict:
        _refuse(attrs.get("channel") == "pager" and attrs["amount"] > 100, "pager_limit")
        return attrs


def _refuse(condition: bool, code: str) -> None:
    if condition:
        raise ValidationError("Refused by a rule of the declaration.", code=code)


def _problems(validate, body: dict, **kwargs) -> list[tuple]:
    with pytest.raises(DomainError) as refused:
        validate(body, **kwargs)
    return [(detail["param"], detail["code"]) for detail in refused.value.details]


@pytest.mark.parametrize(("changes", "problems"), [
    ({"channel": "fax"}, [("channel", "no_fax")]),
    ({"referenceId": "test-1"}, [("referenceId", "no_test_reference")]),
    ({"channel": "pager"}, [(None, "pager_limit")]),
    ({"channel": "fax", "referenceId": "test-1", "amount": 0}, [
        ("amount", "amount_too_small"), ("referenceId", "no_test_reference"), ("channel", "no_fax")]),
])
def test_validators_and_validate_methods_of_the_payout_declaration_are_honoured(monkeypatch, changes, problems):
    monkeypatch.setattr(payout_validation, "PayoutRequestSerializer", _RuledPayout)

    accepted = payout_validation.payout_request_validate({**PAYOUT_BODY, "channel": "web"}, merchant=Merchant())

    assert accepted["reference_id"] == "r1"
    assert _problems(payout_validation.payout_request_validate, {**PAYOUT_BODY, **changes},
                     merchant=Merchant()) == problems


def test_validators_and_validate_methods_of_the_payin_declaration_are_honoured(monkeypatch, settings):
    settings.CHARGE_MAX_AMOUNT = 10_000_000

    class RuledPayin(PayinRequestSerializer):
        note = serializers.CharField(required=False, validators=[lambda value: _refuse(value == "x", "no_x")])

        def validate_payerIp(self, value: str) -> str:
            _refuse(value.startswith("203."), "no_documentation_range")
            return value

    monkeypatch.setattr(payin_validation, "PayinRequestSerializer", RuledPayin)
    context = {"merchant": Merchant(), "livemode": False, "today": TODAY}

    accepted = payin_validation.payin_request_validate({**PIX_BODY, "payerIp": "198.51.100.7", "note": "y"},
                                                       **context)

    assert accepted["payer_ip"] == "198.51.100.7"
    assert _problems(payin_validation.payin_request_validate, {**PIX_BODY, "note": "x"}, **context) == [
        ("payerIp", "no_documentation_range"), ("note", "no_x")]


def _component(variant) -> dict:
    """The request schema that core.schema.AutoSchema writes for `variant`."""
    auto = AutoSchema()
    auto.registry = ComponentRegistry()
    auto.method = "POST"
    auto.view = APIView()
    auto.view.request = None
    return auto._map_serializer(variant(), "request")


def test_a_field_reaches_the_request_variants():
    pix = request_variant(_ExtendedPayin, "ExtendedPixPayin", body={"paymentMethod": "PIX", "isPhysicalProduct": False})
    cpf = request_variant(_ExtendedPayout, "ExtendedCpfPayout", body={"pixKeyType": "CPF"})

    assert {"channel", "priority"} <= set(pix._declared_fields)
    assert "card" not in pix._declared_fields and "boleto" not in pix._declared_fields  # refused with PIX
    assert pix().fields["channel"].required and not pix().fields["priority"].required
    component = _component(pix)
    assert component["properties"]["channel"]["maxLength"] == 5
    assert (component["properties"]["priority"]["minimum"], component["properties"]["priority"]["maximum"]) == (1, 3)
    assert "channel" in component["required"] and "priority" not in component["required"]
    assert "channel" in cpf._declared_fields and not cpf().fields["channel"].required


def test_the_variants_have_the_declared_fields_and_no_other():
    # Each variant is the declaration as its method (or key type) has it: card, pix and boleto only with theirs.
    declared = set(PayinRequestSerializer._declared_fields)
    options = {"card", "pix", "boleto"}
    expected = {"PixPayin": "pix", "PixShippedPayin": "pix", "CardPayin": "card", "CardShippedPayin": "card",
                "BoletoPayin": "boleto"}
    for variant in payin_schema.PayinRequest.serializers:
        assert set(variant._declared_fields) == declared - options | {expected[variant.__name__]}
    for variant in payout_schema.PayoutRequest.serializers.values():
        assert set(variant._declared_fields) == set(PayoutRequestSerializer._declared_fields)
