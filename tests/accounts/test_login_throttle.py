"""Brute-force limits on the dashboard's log-in and password-reset forms (accounts/throttle.py)."""

import time

import pytest
from django.core import mail
from django.test import Client
from redis.exceptions import ConnectionError as RedisConnectionError

from accounts import throttle
from accounts.models import KycStatus
from tests.factories import MerchantFactory, totp_code

LOGIN = "/dashboard/login/"
RESET = "/dashboard/password-reset/"
PASSWORD = "correct-horse-battery"
INVALID_LOGIN = "Please enter a correct email and password. Note that both fields may be case-sensitive."
LOCKED = "Too many failed attempts; try again in 15 minutes or reset your password."


@pytest.fixture
def owner(db):
    return MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED).owner


def log_in(client, email: str, password: str, ip: str = "198.51.100.7"):
    return client.post(LOGIN, {"username": email, "password": password}, REMOTE_ADDR=ip)


def errors_of(response) -> list[str]:
    return list(response.context["form"].non_field_errors())


def logged_in(client) -> bool:
    return client.get("/dashboard/").status_code == 200


@pytest.fixture
def password_checks(monkeypatch) -> list[str]:
    """Every password the log-in form checks."""
    import django.contrib.auth.forms as auth_forms

    checked = []
    real = auth_forms.authenticate

    def spy(request=None, **credentials):
        checked.append(credentials["password"])
        return real(request, **credentials)

    monkeypatch.setattr(auth_forms, "authenticate", spy)
    return checked


def test_the_fifth_failure_is_answered_and_the_sixth_attempt_is_refused_even_with_the_right_password(
        client, owner, password_checks):
    failures = [log_in(client, owner.email, f"wrong-{i}") for i in range(5)]

    refused = log_in(client, owner.email, PASSWORD)

    assert [(r.status_code, errors_of(r)) for r in failures] == [(200, [INVALID_LOGIN])] * 5
    assert refused.status_code == 429
    assert refused["Retry-After"] == "900"
    assert errors_of(refused) == [LOCKED]
    assert LOCKED in refused.content.decode()
    assert password_checks == [f"wrong-{i}" for i in range(5)]  # the sixth password was never checked
    assert not logged_in(client)


def test_the_lock_is_per_email_and_ip_and_ignores_case(client, owner):
    """Issue 15: knowing an e-mail is not enough to lock its owner out. (It was per e-mail, from every address.)"""
    other = MerchantFactory().owner
    for i in range(5):
        log_in(client, owner.email.upper(), f"wrong-{i}")

    same_ip = log_in(client, owner.email, PASSWORD)
    same_email_elsewhere = log_in(Client(), owner.email, PASSWORD, ip="203.0.113.9")
    other_email = log_in(client, other.email, PASSWORD)

    assert same_ip.status_code == 429
    assert same_email_elsewhere.status_code == 302  # the owner, from their own address, still signs in
    assert other_email.status_code == 302


def test_a_successful_login_clears_the_email_counter(client, owner):
    for i in range(4):
        log_in(client, owner.email, f"wrong-{i}")
    assert log_in(client, owner.email, PASSWORD).status_code == 302
    client.post("/dashboard/logout/")

    again = [log_in(client, owner.email, f"again-{i}").status_code for i in range(5)]
    sixth = log_in(client, owner.email, PASSWORD)

    assert again == [200] * 5
    assert sixth.status_code == 429


def test_the_lock_ends_after_15_minutes(client, owner, monkeypatch, settings):
    # The local-memory cache reads the clock this test moves; Redis expires keys on its own clock.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    for i in range(6):
        log_in(client, owner.email, f"wrong-{i}")
    start = time.time()
    monkeypatch.setattr(time, "time", lambda: start + 14 * 60)
    still_locked = log_in(client, owner.email, PASSWORD)

    monkeypatch.setattr(time, "time", lambda: start + 15 * 60 + 1)
    response = log_in(client, owner.email, PASSWORD)

    assert still_locked.status_code == 429
    assert errors_of(still_locked) == ["Too many failed attempts; try again in 1 minute or reset your password."]
    assert response.status_code == 302


def test_twenty_failures_from_one_ip_lock_that_ip_for_every_email(client, owner, password_checks):
    failures = [log_in(client, f"nobody{i}@example.com", "guess").status_code for i in range(20)]

    refused = log_in(client, owner.email, PASSWORD)
    elsewhere = log_in(Client(), owner.email, PASSWORD, ip="203.0.113.9")

    assert failures == [200] * 20
    assert refused.status_code == 429
    assert errors_of(refused) == [LOCKED]
    assert len(password_checks) == 21  # 20 failures + the other address; the locked IP's attempt was not checked
    assert elsewhere.status_code == 302


def test_successful_logins_do_not_count_against_the_ip(owner):
    for _ in range(25):
        client = Client()
        assert log_in(client, owner.email, PASSWORD).status_code == 302


def test_a_password_reset_unlocks_the_email(client, owner):
    import re

    for i in range(6):
        log_in(client, owner.email, f"wrong-{i}")
    client.post(RESET, {"email": owner.email}, REMOTE_ADDR="203.0.113.9")
    link = re.search(r"https?://[^/]+(/dashboard/password-reset/\S+/)", mail.outbox[0].body).group(1)
    form_page = client.get(link, follow=True)
    client.post(form_page.redirect_chain[-1][0], {"new_password1": "a-new-long-passphrase",
                                                  "new_password2": "a-new-long-passphrase"})

    response = log_in(client, owner.email, "a-new-long-passphrase")

    assert response.status_code == 302
    assert owner.owned_merchants.get().account_events.values_list("action", "reason").first() == (
        "password_changed", "with a reset link sent by email")


def test_password_reset_is_limited_to_five_an_hour_per_ip(client, owner):
    sent = [client.post(RESET, {"email": f"someone{i}@example.com"}, REMOTE_ADDR="198.51.100.7").status_code
            for i in range(5)]

    refused = client.post(RESET, {"email": owner.email}, REMOTE_ADDR="198.51.100.7")
    elsewhere = Client().post(RESET, {"email": owner.email}, REMOTE_ADDR="203.0.113.9")

    assert sent == [302] * 5
    assert refused.status_code == 429
    assert refused["Retry-After"] == "3600"
    assert list(refused.context["form"].non_field_errors()) == ["Too many reset requests; try again in 60 minutes."]
    assert elsewhere.status_code == 302
    assert len(mail.outbox) == 1  # only the address that exists gets an email, and only from the allowed request


def test_password_reset_is_limited_to_three_an_hour_per_email(owner):
    sent = [Client().post(RESET, {"email": owner.email}, REMOTE_ADDR=f"198.51.100.{i}").status_code
            for i in range(3)]

    refused = Client().post(RESET, {"email": owner.email}, REMOTE_ADDR="198.51.100.99")

    assert sent == [302] * 3
    assert refused.status_code == 429
    assert len(mail.outbox) == 3


def test_a_blank_password_neither_counts_nor_clears_the_counter(client, owner):
    for i in range(5):
        log_in(client, owner.email, f"wrong-{i}")
        client.post(LOGIN, {"username": owner.email, "password": ""}, REMOTE_ADDR="198.51.100.7")

    response = log_in(client, owner.email, PASSWORD)

    assert response.status_code == 429


def test_a_login_form_with_errors_is_not_counted(client, owner):
    for _ in range(10):
        client.post(LOGIN, {"username": "not-an-email", "password": "x"})

    assert log_in(client, owner.email, PASSWORD).status_code == 302


def test_the_dashboard_still_logs_in_when_the_cache_is_away(client, owner, monkeypatch):
    from django.core.cache import cache

    def down(*args, **kwargs):
        raise RedisConnectionError("cache down")

    monkeypatch.setattr(cache, "get_many", down)
    monkeypatch.setattr(cache, "delete", down)

    response = log_in(client, owner.email, PASSWORD)

    assert response.status_code == 302


def test_counters_hold_no_email_address(monkeypatch):
    from django.core.cache import cache

    keys = []
    real_add = cache.add
    monkeypatch.setattr(cache, "add", lambda key, *args, **kwargs: keys.append(key) or real_add(key, *args, **kwargs))

    throttle.login_attempt(email="Ana@Example.com", ip="198.51.100.7")

    assert len(keys) == 3  # the e-mail from this IP, the e-mail, the IP
    assert not any("example" in key.lower() for key in keys)


def test_a_new_session_starts_in_test_mode(client, owner):
    client.force_login(owner)
    client.post("/dashboard/mode/", {"mode": "live"})
    assert client.session["livemode"] is True
    client.post("/dashboard/logout/")

    log_in(client, owner.email, PASSWORD)
    client.post("/dashboard/login/verify/", {"code": totp_code(owner)})

    assert client.session["livemode"] is False
    assert "Test mode: sandbox data, no money moves." in client.get("/dashboard/kyc/").content.decode()
