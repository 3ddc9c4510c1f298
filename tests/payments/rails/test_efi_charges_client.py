"""Issue 38 (a): the Charges API's client against the fake over HTTPS, and the settings `check --deploy` names.
Basic credentials buy a Bearer token, fetched again once on a 401; Efí's envelope is unwrapped; a 4xx is a refusal
with Efí's error body, a 5xx or a cut connection an unknown outcome."""

from __future__ import annotations

import pytest

from payments import rails
from payments.checks import efi_settings_check
from payments.rails.base import InvalidNotification, RailRefused, RailTimeout


def client():
    return rails.by_name("efi").rail.charges_client


def test_basic_credentials_buy_a_bearer_token_used_until_a_401(charges):
    charge_id = rails.by_name("efi").card_charge_open(key="0190e2c4-0000-7000-8000-000000000001", amount=2500,
                                                      items=[{"title": "Livro"}], description="",
                                                      notification_url="https://pay.example.com/n")
    charges.expire_tokens()
    state = rails.by_name("efi").charge_get(charge_ref=charge_id)

    assert [(entry["method"], entry["path"], entry["authorization_scheme"], entry["status"])
            for entry in charges.requests_log] == [
        ("POST", "/v1/authorize", "Basic", 200), ("POST", "/v1/charge", "Bearer", 200),
        ("GET", f"/v1/charge/{charge_id}", "Bearer", 401), ("POST", "/v1/authorize", "Basic", 200),
        ("GET", f"/v1/charge/{charge_id}", "Bearer", 200)]
    assert charges.requests_log[1]["body"] == {
        "items": [{"name": "Livro", "value": 2500, "amount": 1}],
        "metadata": {"custom_id": "0190e2c4-0000-7000-8000-000000000001",
                     "notification_url": "https://pay.example.com/n"}}
    assert (state.charge_ref, state.status, state.rail_status, state.total) == (charge_id, "PENDING", "new", 2500)


def test_wrong_credentials_are_a_rail_error_not_a_refusal_of_the_charge(charges, settings):
    settings.EFI_CLIENT_SECRET = "wrong"

    with pytest.raises(Exception, match="refused our credentials"):
        client().call("GET", "/charge/1")


def test_a_4xx_is_a_refusal_with_efis_error_body_and_a_404_of_a_lookup_is_none(charges):
    assert rails.by_name("efi").charge_get(charge_ref="123") is None

    with pytest.raises(RailRefused) as refused:
        rails.by_name("efi").charge_cancel(charge_ref="123")

    assert refused.value.status == 404
    assert refused.value.problem == {"code": 3500010, "error": "charge_not_found",
                                     "error_description": "Cobrança não encontrada."}


@pytest.mark.parametrize("mode", ["before", "drop"])
def test_a_5xx_or_a_cut_connection_is_an_unknown_outcome(charges, mode):
    charges.fail_next("POST", "/v1/charge", mode=mode)

    with pytest.raises(RailTimeout):
        rails.by_name("efi").card_charge_open(key="0190e2c4-0000-7000-8000-000000000002", amount=100,
                                              items=[], description="x", notification_url="")


def test_a_slow_answer_past_the_timeout_is_an_unknown_outcome(charges, settings):
    settings.EFI_TIMEOUT_SECONDS = 0.3
    charges.fail_next("GET", "/v1/installments", mode="hang", seconds=1.0)

    with pytest.raises(RailTimeout):
        rails.by_name("efi").installments(brand="visa", amount=10_000)


def test_the_installments_table_in_our_words(charges):
    table = rails.by_name("efi").installments(brand="visa", amount=10_000)

    assert table[:4] == [
        {"installments": 1, "installmentValue": 10_000, "hasInterest": False, "interestPercentage": 0},
        {"installments": 2, "installmentValue": 5_000, "hasInterest": False, "interestPercentage": 0},
        {"installments": 3, "installmentValue": 3_334, "hasInterest": False, "interestPercentage": 0},
        {"installments": 4, "installmentValue": 2_699, "hasInterest": True, "interestPercentage": 199}]
    assert len(table) == 12


def test_a_token_efi_does_not_know_has_no_history_and_a_malformed_one_is_refused_before_any_call(charges):
    assert rails.by_name("efi").charge_history(token="0c1d2e3f-0000-4000-8000-000000000000") == []

    with pytest.raises(InvalidNotification):
        rails.by_name("efi").charge_history(token="../charge/1")
    assert [entry["path"] for entry in charges.requests_log] == [
        "/v1/authorize", "/v1/notification/0c1d2e3f-0000-4000-8000-000000000000"]


def test_check_deploy_names_each_missing_charges_setting(settings):
    settings.PAYMENTS_RAIL = "efi"
    settings.EFI_BASE_URL, settings.EFI_CLIENT_ID, settings.EFI_CLIENT_SECRET = "https://pix", "id", "secret"
    settings.EFI_CERT_FILE, settings.PIX_KEY, settings.EFI_CA_FILE = "", "loja@example.com", ""
    settings.EFI_WEBHOOK_SECRET = "a" * 32
    settings.PUBLIC_BASE_URL = "https://pay.example.com"
    settings.EFI_CHARGES_BASE_URL = ""
    settings.EFI_PAYEE_CODE = ""

    messages = [(error.id, error.msg) for error in efi_settings_check(None)]

    assert messages == [("payments.E002", "PAYMENTS_RAIL=efi needs EFI_CERT_FILE."),
                        ("payments.E002", "PAYMENTS_RAIL=efi needs EFI_CHARGES_BASE_URL."),
                        ("payments.E002", "PAYMENTS_RAIL=efi needs EFI_PAYEE_CODE.")]
    settings.EFI_CHARGES_BASE_URL = "http://cobrancas.api.efipay.com.br/v1"
    assert ("payments.E003", "EFI_CHARGES_BASE_URL must be https:// (it is http://cobrancas.api.efipay.com.br/v1).") \
        in [(error.id, error.msg) for error in efi_settings_check(None)]
