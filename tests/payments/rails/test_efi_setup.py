"""Issue 13: what an operator meets connecting Efí. `check --deploy` names every missing or unreadable setting before
the first payment; `rail_setup` registers the notification URL; every call to the bank is logged without secrets."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command, get_commands
from django.core.management.base import CommandError

from payments.checks import efi_settings_check
from tests.payments.rails.conftest import WEBHOOK_SECRET, efi_settings
from tests.payments.rails.efi_fake import FakeEfi


@pytest.fixture
def configured(settings, certificates):
    """Every Efí setting of a production deployment, valid (the files are the test certificates)."""
    with FakeEfi(certificates) as fake:  # the check reads settings and files, it calls nobody
        efi_settings(settings, fake)
    settings.EFI_BASE_URL = "https://pix.api.efipay.com.br"
    settings.PUBLIC_BASE_URL = "https://pay.example.com"
    return settings


def problems(settings) -> list[tuple[str, str]]:
    return [(error.id, error.msg) for error in efi_settings_check(None)]


def test_a_complete_configuration_passes(configured):
    assert problems(configured) == []


def test_the_check_is_silent_on_the_simulator(configured):
    configured.PAYMENTS_RAIL = "simulator"
    configured.EFI_CLIENT_ID = ""
    assert problems(configured) == []


def test_every_missing_setting_is_named(configured):
    for name in ("EFI_CLIENT_ID", "EFI_CLIENT_SECRET", "EFI_CERT_FILE", "PIX_KEY"):
        setattr(configured, name, "")
    assert problems(configured) == [(("payments.E002"), f"PAYMENTS_RAIL=efi needs {name}.")
                                    for name in ("EFI_CLIENT_ID", "EFI_CLIENT_SECRET", "EFI_CERT_FILE", "PIX_KEY")]


def test_an_operator_who_never_set_pix_key_is_told_by_check_deploy(tmp_path):
    """Issue 37, item 15: the settings used to fill a missing PIX_KEY with the Central Bank's example key, so the check
    never named it. A real `manage.py check --deploy` process, its environment as an operator's without PIX_KEY."""
    certificate = tmp_path / "absent.pem"
    environment = {**{k: v for k, v in os.environ.items() if k != "PIX_KEY"}, "PAYMENTS_RAIL": "efi",
                   "EFI_CLIENT_ID": "Client_Id_1", "EFI_CLIENT_SECRET": "Client_Secret_1",
                   "EFI_CERT_FILE": str(certificate), "EFI_WEBHOOK_SECRET": WEBHOOK_SECRET,
                   "PUBLIC_BASE_URL": "https://pay.example.com"}

    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "ERROR"],
                            cwd=django_settings.BASE_DIR, env=environment, capture_output=True, text=True, timeout=120)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "(payments.E002) PAYMENTS_RAIL=efi needs PIX_KEY." in result.stderr
    assert "123e4567-e12b-12d1-a456-426655440000" not in result.stdout + result.stderr


def test_the_example_key_or_a_malformed_key_is_refused(configured):
    configured.PIX_KEY = "123E4567-E12B-12D1-A456-426655440000"
    assert problems(configured) == [("payments.E008", (
        "PIX_KEY is 123e4567-e12b-12d1-a456-426655440000, the Central Bank's example key that test-mode codes carry: "
        "no bank resolves it, so no live payer could pay."))]

    configured.PIX_KEY = "chave da loja"
    assert problems(configured) == [("payments.E009", (
        "PIX_KEY (chave da loja) is not a Pix key: a CPF or CNPJ (digits), an e-mail, a phone (+55 and the number) or "
        "a random key (a UUID)."))]

    for key in ("52998224725", "11222333000181", "pix@loja.example", "+5511987654321",
                "7d9f0335-8dcc-4054-9bf9-0dbd61440091"):
        configured.PIX_KEY = key
        assert problems(configured) == [], key


def test_rail_setup_refuses_without_a_pix_key(settings, efi):
    settings.PIX_KEY = ""
    before = dict(efi.webhooks)
    with pytest.raises(CommandError, match="PIX_KEY must be set first"):
        call_command("rail_setup")
    assert efi.webhooks == before  # nothing asked of the bank


def test_an_unreadable_or_wrong_certificate_is_named(configured, tmp_path, certificates):
    configured.EFI_CERT_FILE = str(tmp_path / "missing.pem")
    assert problems(configured) == [("payments.E004", f"EFI_CERT_FILE ({tmp_path / 'missing.pem'}): no such file")]

    only_certificate = tmp_path / "certificate-only.pem"  # the key left out of the conversion
    only_certificate.write_text(certificates.ca_file.read_text())
    configured.EFI_CERT_FILE = str(only_certificate)
    [(code, message)] = problems(configured)
    assert code == "payments.E004"
    assert message.startswith(f"EFI_CERT_FILE ({only_certificate}): not a PEM with a certificate and its "
                              "unencrypted key")


def test_a_bad_ca_file_an_http_base_url_a_short_secret_and_an_http_public_url_are_named(configured, tmp_path):
    (tmp_path / "ca.pem").write_text("not a certificate")
    configured.EFI_CA_FILE = str(tmp_path / "ca.pem")
    configured.EFI_BASE_URL = "http://pix.api.efipay.com.br"
    configured.EFI_WEBHOOK_SECRET = "short"
    configured.PUBLIC_BASE_URL = "http://pay.example.com"

    assert [code for code, _ in problems(configured)] == [
        "payments.E003", "payments.E005", "payments.E006", "payments.E007"]


def test_check_deploy_fails_on_a_missing_setting(configured):
    configured.EFI_CLIENT_SECRET = ""
    with pytest.raises(Exception, match="PAYMENTS_RAIL=efi needs EFI_CLIENT_SECRET"):
        call_command("check", "--deploy", "--fail-level", "ERROR", stdout=io.StringIO(), stderr=io.StringIO())


def test_rail_setup_registers_the_notification_url_for_the_pix_key(efi, settings):
    settings.PUBLIC_BASE_URL = "https://pay.example.com"
    out = io.StringIO()

    call_command("rail_setup", stdout=out)

    url = f"https://pay.example.com/rails/efi/webhook/{WEBHOOK_SECRET}?ignorar="
    assert efi.webhooks[efi.pix_key]["webhookUrl"] == url
    assert efi.webhook_skip_mtls_checking[efi.pix_key] == "true"  # no mTLS at our front end: the secret guards it
    assert out.getvalue() == ("registered https://pay.example.com/rails/efi/webhook/<EFI_WEBHOOK_SECRET>?ignorar= "
                              f"for Pix key {efi.pix_key}\n")


def test_rail_setup_refuses_without_a_real_rail_or_a_secret(settings, efi):
    settings.EFI_WEBHOOK_SECRET = ""
    with pytest.raises(CommandError, match="EFI_WEBHOOK_SECRET must be set"):
        call_command("rail_setup")
    settings.PAYMENTS_RAIL = "simulator"
    with pytest.raises(CommandError, match="only a real rail"):
        call_command("rail_setup")


@pytest.mark.django_db
def test_every_call_to_the_bank_is_logged_without_secrets(efi, live, caplog):
    with caplog.at_level(logging.INFO, logger="payments.rails.apipix"):
        live.post("/payin", {"paymentMethod": "PIX", "amount": 1000, "referenceId": "r", "payerIp": "203.0.113.9",
                             "isPhysicalProduct": False, "customer": {
                                 "name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"},
                             "items": [{"title": "x", "quantity": 1, "unitPrice": 1000}]}, format="json")

    records = [r for r in caplog.records if r.getMessage() == "rails.call"]
    assert [(r.rail, r.method, r.path.split("/")[1], r.status) for r in records] == [
        ("efi", "POST", "oauth", 200), ("efi", "PUT", "v2", 201)]
    assert all(r.rail_request_id and r.duration_ms >= 0 for r in records)  # the bank's correlation id
    logged = " ".join(str(vars(r)) for r in caplog.records)
    token = [entry for entry in efi.requests_log if entry["authorization_scheme"] == "Bearer"]
    assert token and efi.client_secret not in logged and "Bearer" not in logged and "BEGIN" not in logged


def test_going_live_walks_the_operator_through_every_setting_and_command_it_names(settings):
    """Issue 37, item 20: docs/going-live.md never named Efí. Its operator's part names every setting the Efí check
    asks for (read from the check itself, all of them left empty), and each `manage.py` command it shows exists."""
    guide = (Path(django_settings.BASE_DIR) / "docs" / "going-live.md").read_text()
    operator, _, merchant = guide.partition("## For the merchant: take live payments")
    settings.PAYMENTS_RAIL = "efi"
    for name in ("EFI_BASE_URL", "EFI_CLIENT_ID", "EFI_CLIENT_SECRET", "EFI_CERT_FILE", "PIX_KEY",
                 "EFI_WEBHOOK_SECRET", "PUBLIC_BASE_URL"):
        setattr(settings, name, "")
    required = {name for error in efi_settings_check(None)
                for name in re.findall(r"\b(?:EFI_[A-Z_]+|PIX_KEY|PUBLIC_BASE_URL)\b", error.msg)}
    shown = set(re.findall(r"(?:manage\.py|manage) ([a-z_]+)", guide))

    assert merchant and "## For the operator: connect the service to Efí" in operator
    assert "## A test in Efí's sandbox, step by step" in operator
    assert {"EFI_CLIENT_ID", "PIX_KEY", "EFI_WEBHOOK_SECRET", "PUBLIC_BASE_URL"} <= required
    assert sorted(name for name in required if f"`{name}`" not in operator) == []
    assert {"check", "rail_setup", "createapikey", "rail_reconcile"} <= shown
    assert sorted(shown - set(get_commands())) == []
