"""Deployment checks (`manage.py check --deploy`): keys that must be the same on every machine."""

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


@register(Tags.security, deploy=True)
def keys_check(app_configs, **kwargs) -> list:
    problems = []
    if not settings.SECRET_KEY_FROM_ENVIRONMENT:
        problems.append(Error(
            "SECRET_KEY is not set in the environment, so each machine generated its own under .local/: sessions, API "
            "key digests and webhook secrets would differ between machines.", id="pagamentos.E001"))
    if not settings.API_KEY_DIGEST_KEY:
        problems.append(Warning(
            "API_KEY_DIGEST_KEY is not set: API secrets are digested under a key derived from SECRET_KEY, so rotating "
            "SECRET_KEY would invalidate every API key.", id="pagamentos.W001"))
    if not settings.WEBHOOK_SECRET_ENCRYPTION_KEY:
        problems.append(Warning(
            "WEBHOOK_SECRET_ENCRYPTION_KEY is not set: signing secrets are encrypted under a key derived from "
            "SECRET_KEY, so rotating SECRET_KEY would make them unreadable.", id="pagamentos.W002"))
    if not settings.TOTP_SECRET_ENCRYPTION_KEY:
        problems.append(Warning(
            "TOTP_SECRET_ENCRYPTION_KEY is not set: the dashboard users' two-factor seeds are encrypted under a key "
            "derived from SECRET_KEY, so rotating SECRET_KEY would lock every user out of their second factor.",
            hint="Set it to a long random value, the same on every machine (python -c 'import secrets; "
                 "print(secrets.token_urlsafe(32))'), before users enrol: a seed stored under the derived key does "
                 "not open under a new one, and its user has to enrol again.", id="pagamentos.W003"))
    return problems
