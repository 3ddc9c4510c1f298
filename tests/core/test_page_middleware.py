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


SECURITY_HEADERS = ("Strict-Transport-Security", "X-Content-Type-Options", "Referrer-Policy",
                    "Cross-Origin-Opener-Policy", "X-Frame-Options")


def test_every_api_error_carries_the_security_headers_of_every_other_answer(settings):
    """Issue 37, item 17: the JSON error put in place of Django's 404 page, and the API's own refusals before any view
    (415, 413), used to be built outside SecurityMiddleware and lost nosniff and HSTS."""
    settings.SECURE_HSTS_SECONDS, settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = 31536000, True
    browser = Client()
    expected = {name: browser.get("/ping", secure=True).get(name) for name in SECURITY_HEADERS}
    assert expected["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert expected["X-Content-Type-Options"] == "nosniff" and expected["X-Frame-Options"] == "DENY"

    answers = {
        "unknown path": browser.get("/no-such-endpoint", secure=True),
        "unknown nested path": browser.post("/payin/x/y/z", "{}", content_type="application/json", secure=True),
        "not JSON": browser.post("/payin", "amount=1", content_type="application/x-www-form-urlencoded",
                                 secure=True),
        "too large": browser.post("/payin", "x" * (settings.API_MAX_BODY_BYTES + 1), content_type="application/json",
                                  secure=True),
    }

    assert {name: response.status_code for name, response in answers.items()} == {
        "unknown path": 404, "unknown nested path": 404, "not JSON": 415, "too large": 413}
    for name, response in answers.items():
        assert response["Content-Type"] == "application/json", name
        assert {header: response.get(header) for header in SECURITY_HEADERS} == expected, name
