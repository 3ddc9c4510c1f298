"""Django's session, user and message middleware run for the pages people read and are skipped on the JSON API's paths
(core.middleware.PagesOnly), which authenticate every request by its key; the API's answers are unchanged by it."""

from django.core import checks
from django.test import Client

from tests.factories import UserFactory


def test_an_api_request_gets_no_session_user_or_messages(api, test_key):
    response = api.get("/account")

    request = response.wsgi_request
    assert response.status_code == 200
    assert not hasattr(request, "session") and not hasattr(request, "_messages")
    assert "Set-Cookie" not in response and "Cookie" not in response.get("Vary", "")
    # DRF puts the key's owner on the Django request itself as it authenticates, with no AuthenticationMiddleware.
    assert str(request.user) == f"api:{test_key[0].public_key}"


def test_an_api_request_keeps_the_headers_every_response_gets(api):
    response = api.get("/ping")

    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"  # XFrameOptionsMiddleware runs on every path, as before
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.wsgi_request.LANGUAGE_CODE == "en"


def test_an_unknown_api_path_is_the_api_error_without_a_session():
    response = Client().get("/no-such-endpoint", HTTP_COOKIE="sessionid=whatever")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert not hasattr(response.wsgi_request, "session")


def test_a_page_gets_its_session_user_and_messages(db):
    user = UserFactory()
    browser = Client()
    browser.force_login(user)

    response = browser.get("/dashboard/login/")

    request = response.wsgi_request
    assert request.session.session_key and request.user == user
    assert hasattr(request, "_messages")


def test_the_dashboard_still_refuses_a_post_without_its_csrf_token(db):
    browser = Client(enforce_csrf_checks=True)

    response = browser.post("/dashboard/login/", {"username": "a@example.com", "password": "x"})

    assert response.status_code == 403


def test_django_checks_find_the_middleware_the_admin_needs():
    errors = [message.id for message in checks.run_checks() if message.id.startswith("admin.")]

    assert errors == []
