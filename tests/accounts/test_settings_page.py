"""The account settings page (password change), the banners and mode switch on every page, labelled form inputs,
and the session cookie's flags."""

import importlib.util
import re

import pytest
from django.contrib.auth import authenticate
from django.test import Client

from accounts.models import AccountEvent, KycStatus, Merchant
from tests.factories import MerchantFactory

PAGE = "/dashboard/settings/"
PASSWORD = "correct-horse-battery"
NEW_PASSWORD = "a-new-long-passphrase"
TEST_BANNER = "Test mode: sandbox data, no money moves."
SIMULATOR_BANNER = "Live mode runs on the simulator rail: no money moves."
DASHBOARD_PAGES = ["/dashboard/", "/dashboard/kyc/", "/dashboard/settings/", "/dashboard/integrations/",
                   "/dashboard/webhooks/deliveries/", "/dashboard/charges/", "/dashboard/payouts/",
                   "/dashboard/statement/"]


@pytest.fixture
def merchant(db):
    return MerchantFactory(name="Café da Ana", kyc_status=KycStatus.NOT_SUBMITTED)


@pytest.fixture
def dashboard(client, merchant):
    client.force_login(merchant.owner)
    return client


def change(client, old=PASSWORD, new=NEW_PASSWORD, confirm=None, **extra):
    return client.post(PAGE, {"password": old, "new_password1": new, "new_password2": confirm or new}, **extra)


# --- Settings page --------------------------------------------------------------------------------------------------
def test_the_page_shows_the_account_and_is_linked_from_the_header(dashboard, merchant):
    html = dashboard.get(PAGE).content.decode()
    overview = dashboard.get("/dashboard/kyc/").content.decode()

    assert merchant.owner.email in html
    assert "Café da Ana" in html
    assert '<a href="/dashboard/settings/" aria-current="page">Settings</a>' in html
    assert '<a href="/dashboard/settings/">Settings</a>' in overview


def test_the_page_needs_a_login(client, db):
    response = client.get(PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith("/dashboard/login/")


def test_a_wrong_current_password_is_shown_beside_that_field(dashboard, merchant):
    response = change(dashboard, old="not-my-password")

    assert response.status_code == 400
    assert response.context["form"].errors == {
        "password": ["That is neither your password nor a current code from your app."]}
    html = response.content.decode()
    field = re.search(r'<div class="field has-error">(.*?)</div>\s*</div>', html, re.S).group(1)
    assert 'for="id_password"' in field
    assert 'aria-invalid="true"' in field
    assert 'aria-describedby="id_password_error"' in field
    assert '<div class="errors" id="id_password_error"><small class="error" role="alert">That is neither' in field
    merchant.owner.refresh_from_db()
    assert merchant.owner.check_password(PASSWORD)


def test_a_weak_or_mismatched_new_password_is_refused(dashboard, merchant):
    weak = change(dashboard, new="12345678")
    mismatched = change(dashboard, confirm="something-else-entirely")

    assert set(weak.context["form"].errors) == {"new_password2"}
    assert mismatched.context["form"].errors == {"new_password2": ["The two password fields didn’t match."]}
    merchant.owner.refresh_from_db()
    assert merchant.owner.check_password(PASSWORD)


def test_changing_the_password_keeps_this_session_and_ends_the_others(dashboard, merchant):
    other_device = Client()
    other_device.force_login(merchant.owner)

    response = change(dashboard, follow=True)

    assert response.redirect_chain == [(PAGE, 302)]
    assert "Password changed. Other devices where you were logged in are logged out." in response.content.decode()
    assert dashboard.get("/dashboard/").status_code == 200
    assert other_device.get("/dashboard/").status_code == 302
    assert authenticate(username=merchant.owner.email, password=PASSWORD) is None
    assert authenticate(username=merchant.owner.email, password=NEW_PASSWORD) == merchant.owner
    event = merchant.account_events.get(action=AccountEvent.Action.PASSWORD_CHANGED)
    assert (event.actor, event.reason) == (merchant.owner, "on the settings page")


def test_the_old_password_no_longer_logs_in(client, merchant):
    client.force_login(merchant.owner)
    change(client)
    client.post("/dashboard/logout/")

    old = client.post("/dashboard/login/", {"username": merchant.owner.email, "password": PASSWORD})
    new = client.post("/dashboard/login/", {"username": merchant.owner.email, "password": NEW_PASSWORD})

    assert old.status_code == 200
    assert new.status_code == 302


def test_the_settings_form_is_csrf_protected(merchant):
    client = Client(enforce_csrf_checks=True)
    client.force_login(merchant.owner)

    response = change(client)

    assert response.status_code == 403
    merchant.owner.refresh_from_db()
    assert merchant.owner.check_password(PASSWORD)


def test_the_settings_form_works_with_its_csrf_token(merchant):
    client = Client(enforce_csrf_checks=True)
    client.force_login(merchant.owner)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', client.get(PAGE).content.decode()).group(1)

    response = client.post(PAGE, {"csrfmiddlewaretoken": token, "password": PASSWORD,
                                  "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})

    assert response.status_code == 302
    merchant.owner.refresh_from_db()
    assert merchant.owner.check_password(NEW_PASSWORD)


def test_a_suspended_merchant_can_still_change_the_password(dashboard, merchant):
    Merchant.objects.filter(pk=merchant.pk).update(is_suspended=True)

    response = change(dashboard)

    assert response.status_code == 302
    merchant.owner.refresh_from_db()
    assert merchant.owner.check_password(NEW_PASSWORD)


# --- Banners and the mode switch ------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", DASHBOARD_PAGES)
def test_every_page_shows_the_test_banner_in_test_mode(dashboard, page):
    html = dashboard.get(page).content.decode()

    assert TEST_BANNER in html
    assert SIMULATOR_BANNER not in html


@pytest.mark.parametrize("page", DASHBOARD_PAGES)
def test_every_page_says_no_money_moves_in_live_mode_on_the_simulator(dashboard, page, settings):
    settings.PAYMENTS_RAIL = "simulator"
    dashboard.post("/dashboard/mode/", {"mode": "live"})

    html = dashboard.get(page).content.decode()

    assert SIMULATOR_BANNER in html
    assert TEST_BANNER not in html


def test_live_mode_on_a_real_rail_has_no_banner(dashboard, settings):
    settings.PAYMENTS_RAIL = "realbank"
    dashboard.post("/dashboard/mode/", {"mode": "live"})

    html = dashboard.get("/dashboard/kyc/").content.decode()

    assert SIMULATOR_BANNER not in html
    assert TEST_BANNER not in html


def test_public_pages_have_no_mode_banner(client, db):
    assert TEST_BANNER not in client.get("/dashboard/login/").content.decode()


def test_the_mode_switch_is_a_labelled_toggle_showing_the_current_mode(dashboard):
    test_html = dashboard.get("/dashboard/kyc/").content.decode()
    dashboard.post("/dashboard/mode/", {"mode": "live", "next": "/dashboard/kyc/"})
    live_html = dashboard.get("/dashboard/kyc/").content.decode()

    assert '<span class="segmented" role="group" aria-labelledby="mode-label">' in test_html
    assert '<span class="mode-label" id="mode-label">Mode</span>' in test_html
    assert re.search(r'name="mode" value="test" aria-pressed="true">Test<', test_html)
    assert re.search(r'name="mode" value="live" aria-pressed="false">Live<', test_html)
    assert re.search(r'name="mode" value="test" aria-pressed="false">Test<', live_html)
    assert re.search(r'name="mode" value="live" aria-pressed="true">Live<', live_html)


def test_switching_back_to_test(dashboard):
    dashboard.post("/dashboard/mode/", {"mode": "live"})

    response = dashboard.post("/dashboard/mode/", {"mode": "test", "next": "/dashboard/settings/"})

    assert response["Location"] == "/dashboard/settings/"
    assert dashboard.session["livemode"] is False


# --- Labelled inputs and autocomplete -------------------------------------------------------------------------------
def inputs_of(html: str) -> list[str]:
    """The <input>, <select> and <textarea> tags a person fills in."""
    tags = re.findall(r"<(?:input|select|textarea)\b[^>]*>", html)
    return [tag for tag in tags if not re.search(r'type="(hidden|submit)"', tag)]


def assert_every_input_is_labelled(html: str) -> None:
    fields = inputs_of(html)
    assert fields
    for tag in fields:
        field_id = re.search(r'id="([^"]+)"', tag).group(1)
        assert f'<label for="{field_id}">' in html, tag


@pytest.mark.parametrize("page", ["/dashboard/login/", "/dashboard/signup/", "/dashboard/password-reset/"])
def test_public_forms_label_every_input(client, db, page):
    assert_every_input_is_labelled(client.get(page).content.decode())


@pytest.mark.parametrize("page", ["/dashboard/kyc/", "/dashboard/settings/"])
def test_dashboard_forms_label_every_input(dashboard, page):
    assert_every_input_is_labelled(dashboard.get(page).content.decode())


@pytest.mark.parametrize(("page", "expected"), [
    ("/dashboard/login/", {"id_username": "email", "id_password": "current-password"}),
    ("/dashboard/signup/", {"id_name": "organization", "id_email": "email", "id_password": "new-password",
                            "id_password_confirm": "new-password"}),
    ("/dashboard/password-reset/", {"id_email": "email"}),
])
def test_public_forms_tell_password_managers_what_each_field_is(client, db, page, expected):
    assert autocomplete_of(client.get(page).content.decode()) == expected


def test_settings_and_kyc_forms_have_autocomplete(dashboard):
    settings_fields = autocomplete_of(dashboard.get(PAGE).content.decode())
    kyc_fields = autocomplete_of(dashboard.get("/dashboard/kyc/").content.decode())

    assert settings_fields == {"id_password": "current-password", "id_code": "one-time-code",
                               "id_new_password1": "new-password", "id_new_password2": "new-password"}
    assert (kyc_fields["id_zip_code"], kyc_fields["id_phone"], kyc_fields["id_street"]) == (
        "postal-code", "tel", "address-line1")


def autocomplete_of(html: str) -> dict[str, str]:
    found = {}
    for tag in inputs_of(html):
        field_id = re.search(r'id="([^"]+)"', tag).group(1)
        token = re.search(r'autocomplete="([^"]+)"', tag)
        if token:
            found[field_id] = token.group(1)
    return found


def test_help_text_is_tied_to_its_input(dashboard):
    html = dashboard.get("/dashboard/kyc/").content.decode()

    assert re.search(r'<input[^>]*aria-describedby="id_document_helptext"[^>]*id="id_document"', html)
    assert '<div class="help" id="id_document_helptext">' in html


# --- Cookies --------------------------------------------------------------------------------------------------------
def settings_under(monkeypatch, **environment):
    """config/settings.py evaluated afresh under the given environment, beside the settings in use."""
    from django.conf import settings

    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("settings_under_test", settings.BASE_DIR / "config" / "settings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cookies_are_secure_under_an_https_public_url(monkeypatch):
    production = settings_under(monkeypatch, PUBLIC_BASE_URL="https://pagamentos.example.com")

    assert production.SESSION_COOKIE_SECURE is True
    assert production.CSRF_COOKIE_SECURE is True
    assert production.SESSION_COOKIE_HTTPONLY is True
    assert production.SESSION_COOKIE_SAMESITE == "Lax"
    assert production.SESSION_COOKIE_AGE == 12 * 60 * 60


def test_cookies_are_not_secure_on_a_plain_http_laptop(monkeypatch):
    laptop = settings_under(monkeypatch, PUBLIC_BASE_URL="http://127.0.0.1:8000")

    assert laptop.SESSION_COOKIE_SECURE is False
    assert laptop.CSRF_COOKIE_SECURE is False
    assert laptop.SESSION_COOKIE_HTTPONLY is True


def test_the_session_cookie_is_sent_secure_and_http_only(client, merchant, settings):
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True

    response = client.post("/dashboard/login/", {"username": merchant.owner.email, "password": PASSWORD})
    csrf = Client().get("/dashboard/login/").cookies["csrftoken"]

    cookie = response.cookies["sessionid"]
    assert (cookie["secure"], cookie["httponly"], cookie["samesite"]) == (True, True, "Lax")
    assert cookie["max-age"] == 12 * 60 * 60
    assert csrf["secure"] is True
