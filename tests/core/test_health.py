import pytest


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

    assert [problem.id for problem in keys_check(None)] == ["pagamentos.E001", "pagamentos.W001"]
