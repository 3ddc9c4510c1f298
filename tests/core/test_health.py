import pytest
from django.core import checks


@pytest.mark.django_db
def test_health_reports_database_and_broker(client):
    response = client.get("/health")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}
    assert response["Api-Version"] == "2026-11-20"


@pytest.mark.django_db
def test_health_names_what_is_down(client, monkeypatch):
    monkeypatch.setattr("core.views._broker_ok", lambda: False)

    response = client.get("/health")

    assert response.status_code == 503
    body = response.json()
    assert body["error"]["code"] == "service_unavailable"
    assert body["error"]["details"] == [
        {"param": "broker", "code": "unavailable", "message": "The broker does not answer."}
    ]


def test_env_example_lists_every_setting_read_from_the_environment():
    import re

    from django.conf import settings

    read = set(re.findall(r'env\.\w+\("([A-Z_]+)"', (settings.BASE_DIR / "config" / "settings.py").read_text()))
    listed = set(re.findall(r"^([A-Z_]+)=", (settings.BASE_DIR / ".env.example").read_text(), re.M))

    assert read - listed == set()


def test_deploy_check_refuses_a_machine_local_secret_key(settings):
    from core.checks import keys_check

    settings.SECRET_KEY_FROM_ENVIRONMENT = False
    settings.API_KEY_DIGEST_KEY = ""
    settings.WEBHOOK_SECRET_ENCRYPTION_KEY = "set"
    settings.TOTP_SECRET_ENCRYPTION_KEY = "set"

    assert [problem.id for problem in keys_check(None)] == ["pagamentos.E001", "pagamentos.W001"]


def test_deploy_check_warns_when_the_two_factor_seeds_key_is_derived_from_secret_key(settings):
    """Issue 37, item 15: rotating SECRET_KEY would otherwise make every stored TOTP seed unreadable."""
    from core.checks import keys_check

    settings.SECRET_KEY_FROM_ENVIRONMENT = True
    settings.API_KEY_DIGEST_KEY = settings.WEBHOOK_SECRET_ENCRYPTION_KEY = "set"
    settings.TOTP_SECRET_ENCRYPTION_KEY = ""

    [warning] = keys_check(None)

    assert (warning.level, warning.id, warning.msg) == (
        checks.WARNING, "pagamentos.W003",
        "TOTP_SECRET_ENCRYPTION_KEY is not set: the dashboard users' two-factor seeds are encrypted under a key "
        "derived from SECRET_KEY, so rotating SECRET_KEY would lock every user out of their second factor.")
    settings.TOTP_SECRET_ENCRYPTION_KEY = "set"
    assert keys_check(None) == []
