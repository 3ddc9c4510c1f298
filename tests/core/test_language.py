"""Languages: the dashboard follows the language switch, then the browser, then pt-BR; the JSON API is English
whatever the client asks; e-mails go out in the request's language, pt-BR by default."""

import re

from django.conf import settings
from django.core import mail
from django.test import Client

from tests.factories import UserFactory


def test_dashboard_defaults_to_portuguese(db):
    browser = Client()  # no Accept-Language

    response = browser.get("/dashboard/login/")

    html = response.content.decode()
    assert response["Content-Language"] == "pt-br"
    assert '<html lang="pt-br">' in html
    assert "Pular para o conteúdo" in html and "Skip to content" not in html


def test_dashboard_follows_the_browser(db):
    browser = Client(HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9,pt;q=0.5")

    response = browser.get("/dashboard/login/")

    html = response.content.decode()
    assert response["Content-Language"] == "en"
    assert '<html lang="en">' in html
    assert "Skip to content" in html and "Pular para o conteúdo" not in html


def test_language_switch_overrides_the_browser(db):
    browser = Client(HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9")
    page = browser.get("/dashboard/login/").content.decode()
    assert re.search(r'<form method="post" action="/dashboard/language/" class="language-switch">', page)
    assert '<button type="submit" name="language" value="pt-br" lang="pt-br" aria-pressed="false">' in page

    response = browser.post("/dashboard/language/", {"language": "pt-br", "next": "/dashboard/login/"})

    assert response.status_code == 302 and response["Location"] == "/dashboard/login/"
    assert browser.cookies[settings.LANGUAGE_COOKIE_NAME].value == "pt-br"
    html = browser.get("/dashboard/login/").content.decode()
    assert "Pular para o conteúdo" in html
    assert '<button type="submit" name="language" value="pt-br" lang="pt-br" aria-pressed="true">' in html


def test_logged_in_dashboard_in_portuguese_shows_translated_navigation(db, merchant):
    browser = Client()
    browser.force_login(merchant.owner)

    html = browser.get("/dashboard/", follow=True).content.decode()

    for words in ("Visão geral", "Cobranças", "Saques", "Extrato", "Integrações", "Configurações", "Sair"):
        assert words in html


def test_api_answers_in_english_whatever_the_client_asks(db):
    english = Client().get("/payin", HTTP_AUTHORIZATION="Basic bm8tc3VjaDprZXk=")

    response = Client(HTTP_ACCEPT_LANGUAGE="pt-BR,pt;q=0.9").get("/payin", HTTP_AUTHORIZATION="Basic bm8tc3VjaDprZXk=")

    assert response.status_code == english.status_code == 401
    assert "Content-Language" not in response
    assert response.json()["error"]["message"] == english.json()["error"]["message"]
    assert response.json()["error"]["message"].isascii()


def test_password_reset_email_is_portuguese_by_default(db):
    UserFactory(email="maria@example.com")
    browser = Client()

    browser.post("/dashboard/password-reset/", {"email": "maria@example.com"})

    assert len(mail.outbox) == 1
    assert "Alguém pediu para redefinir a senha da sua conta Pagamentos (maria@example.com)." in mail.outbox[0].body
    assert "Se não foi você, ignore este e-mail" in mail.outbox[0].body


def test_password_reset_email_follows_the_browser(db):
    UserFactory(email="john@example.com")
    browser = Client(HTTP_ACCEPT_LANGUAGE="en")

    browser.post("/dashboard/password-reset/", {"email": "john@example.com"})

    assert "Someone asked to reset the password of your Pagamentos account (john@example.com)." in mail.outbox[0].body
