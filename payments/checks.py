"""Deployment checks of the rails (`manage.py check --deploy`), registered in PaymentsConfig.ready."""

from __future__ import annotations

import re
import ssl

from django.conf import settings
from django.core.checks import Error, Tags, register

from core.modes import live_mode_simulated
from payments.formats.pix_keys import PIX_KEY_TYPES, normalize_pix_key
from payments.rails.simulator import SANDBOX_PIX_KEY


@register(Tags.security, deploy=True)
def simulated_live_mode_check(app_configs, **kwargs) -> list:
    """Live mode on the simulator moves no money: a deployment must say it means it (a demo, a staging)."""
    if settings.DEBUG or not live_mode_simulated() or settings.ALLOW_SIMULATED_LIVE_MODE:
        return []
    return [Error(
        f"Live mode runs on the simulator rail (PAYMENTS_RAIL={settings.PAYMENTS_RAIL}): live charges and payouts "
        "would move no money.",
        hint="Set PAYMENTS_RAIL to a real rail, or ALLOW_SIMULATED_LIVE_MODE=true for a demo or staging deployment "
             "(live API responses then carry `Pagamentos-Simulated: true` and the dashboard's live mode a banner).",
        id="payments.E001")]


@register(Tags.security, deploy=True)
def efi_settings_check(app_configs, **kwargs) -> list:
    """With PAYMENTS_RAIL=efi, every setting the rail needs is there and readable: a deployment fails here, not on
    its first payment."""
    if settings.PAYMENTS_RAIL != "efi":
        return []
    errors = []
    for name in ("EFI_BASE_URL", "EFI_CLIENT_ID", "EFI_CLIENT_SECRET", "EFI_CERT_FILE", "PIX_KEY",
                 "EFI_CHARGES_BASE_URL", "EFI_PAYEE_CODE"):
        if not getattr(settings, name):
            errors.append(Error(f"PAYMENTS_RAIL=efi needs {name}.", id="payments.E002"))
    if settings.PIX_KEY and settings.PIX_KEY.lower() == SANDBOX_PIX_KEY:
        errors.append(Error(
            f"PIX_KEY is {SANDBOX_PIX_KEY}, the Central Bank's example key that test-mode codes carry: no bank "
            "resolves it, so no live payer could pay.",
            hint="Set PIX_KEY to a Pix key of the Efí account (Efí's app: Pix > Minhas chaves; a random key is best).",
            id="payments.E008"))
    elif settings.PIX_KEY and not any(normalize_pix_key(kind, settings.PIX_KEY) for kind in PIX_KEY_TYPES):
        errors.append(Error(
            f"PIX_KEY ({settings.PIX_KEY}) is not a Pix key: a CPF or CNPJ (digits), an e-mail, a phone "
            "(+55 and the number) or a random key (a UUID).", id="payments.E009"))
    for name in ("EFI_BASE_URL", "EFI_CHARGES_BASE_URL", "EFI_TOKENIZER_SCRIPT_URL"):
        url = getattr(settings, name)
        if url and not url.startswith("https://"):
            errors.append(Error(f"{name} must be https:// (it is {url}).", id="payments.E003"))
    if settings.EFI_CERT_FILE:
        problem = _certificate_problem(settings.EFI_CERT_FILE)
        if problem:
            errors.append(Error(f"EFI_CERT_FILE ({settings.EFI_CERT_FILE}): {problem}",
                                hint="One PEM with the client certificate and its unencrypted key; from Efí's .p12: "
                                     "openssl pkcs12 -in cert.p12 -out cert.pem -nodes -password pass:",
                                id="payments.E004"))
    if settings.EFI_CA_FILE:
        try:
            ssl.create_default_context(cafile=settings.EFI_CA_FILE)
        except (OSError, ssl.SSLError) as exc:
            errors.append(Error(f"EFI_CA_FILE ({settings.EFI_CA_FILE}) is not a readable CA bundle: {exc}",
                                id="payments.E005"))
    if not WEBHOOK_SECRET.fullmatch(settings.EFI_WEBHOOK_SECRET):
        errors.append(Error("EFI_WEBHOOK_SECRET must be at least 16 URL-safe characters (letters, digits, - and _): "
                            "it is the secret in the notification URL, without which a notification moves nothing.",
                            hint="python -c 'import secrets; print(secrets.token_urlsafe(32))'", id="payments.E006"))
    if not settings.PUBLIC_BASE_URL.startswith("https://"):
        errors.append(Error("PAYMENTS_RAIL=efi needs an https:// PUBLIC_BASE_URL: Efí only notifies https URLs.",
                            id="payments.E007"))
    return errors


WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{16,}")


def _certificate_problem(path: str) -> str:
    """Why the file cannot serve as the client certificate, or ""."""
    context = ssl.create_default_context()
    try:
        context.load_cert_chain(path)
    except FileNotFoundError:
        return "no such file"
    except PermissionError:
        return "not readable by this user"
    except (OSError, ssl.SSLError) as exc:
        return f"not a PEM with a certificate and its unencrypted key ({exc})"
    return ""
