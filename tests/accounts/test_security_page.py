"""The Security page (issue 37, items 6-8): changes to one's own sign-in need a proof beyond the session, the turn-off
form is throttled like the sign-in's second step, sessions are named by an opaque id, and right second-factor codes
never spend the per-IP limit."""

from __future__ import annotations

import re
import time

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from accounts import reauth, throttle, twofactor
from accounts.models import AccountEvent, RecoveryCode, UserSession
from accounts.usersessions import session_public_id
from tests.factories import MerchantFactory, UserFactory, totp_code

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"
SECURITY = "/dashboard/security/"
RECOVERY = "/dashboard/security/recovery-codes/"
DISABLE = "/dashboard/security/two-factor/disable/"
SETTINGS = "/dashboard/settings/"
NEW_PASSWORD = "a-new-long-passphrase"
PROOF_REQUIRED = "Confirm it is you: enter your password, or the code your authenticator app shows now."
PROOF_REFUSED = "That is neither your password nor a current code from your app."
CODES = re.compile(r"<li><code>([a-z0-9]{5}-[a-z0-9]{5})</code></li>")


def signed_in(user) -> Client:
    """A browser with a signed-in session of `user` (listed on the Security page, as a real sign-in's is)."""
    browser = Client(HTTP_ACCEPT_LANGUAGE="en")
    browser.force_login(user)
    assert UserSession.objects.filter(session_key=browser.session.session_key).exists()
    return browser


@pytest.fixture
def owner():
    return MerchantFactory().owner  # with a confirmed authenticator


@pytest.fixture
def browser(owner) -> Client:
    return signed_in(owner)


def recovery_hashes(user) -> set[str]:
    return set(RecoveryCode.objects.filter(user=user).values_list("code_hash", flat=True))


def errors_of(response, name: str) -> dict:
    return {field: [str(e) for e in errors] for field, errors in response.context[f"{name}_form"].errors.items()}


# --- Item 6: a session alone changes nothing ---------------------------------------------------------------------
def test_a_session_alone_cannot_make_new_recovery_codes(browser, owner):
    twofactor.recovery_codes_regenerate(None, user=owner)
    before = recovery_hashes(owner)

    response = browser.post(RECOVERY, {})

    assert response.status_code == 400
    assert errors_of(response, "recovery") == {"__all__": [PROOF_REQUIRED]}
    assert not CODES.search(response.content.decode())
    assert recovery_hashes(owner) == before


def test_a_wrong_code_makes_no_recovery_codes_and_is_audited(browser, owner):
    before = recovery_hashes(owner)

    response = browser.post(RECOVERY, {"code": "000000"})

    assert response.status_code == 400
    assert errors_of(response, "recovery") == {"code": [PROOF_REFUSED]}
    assert recovery_hashes(owner) == before
    assert AccountEvent.objects.filter(
        actor=owner, action=AccountEvent.Action.SIGN_IN_FAILED,
        reason="wrong password or code to confirm a change to the sign-in").count() == 1


@pytest.mark.parametrize("proof", ["code", "password"])
def test_a_current_code_or_the_password_makes_new_recovery_codes(browser, owner, proof):
    before = recovery_hashes(owner)

    response = browser.post(RECOVERY, {"code": totp_code(owner)} if proof == "code" else {"password": PASSWORD})

    codes = CODES.findall(response.content.decode())
    assert response.status_code == 200
    assert len(set(codes)) == 10
    assert recovery_hashes(owner).isdisjoint(before) and len(recovery_hashes(owner)) == 10


def test_a_proof_counts_for_five_minutes_on_its_session_only(browser, owner):
    browser.post(RECOVERY, {"password": PASSWORD})
    other = signed_in(owner)

    again = browser.post(RECOVERY, {})
    elsewhere = other.post(RECOVERY, {})
    session = browser.session
    session[reauth.SESSION_KEY] = time.time() - reauth.REAUTH_SECONDS - 1
    session.save()
    later = browser.post(RECOVERY, {})

    assert again.status_code == 200 and len(CODES.findall(again.content.decode())) == 10
    assert elsewhere.status_code == 400
    assert later.status_code == 400
    assert errors_of(later, "recovery") == {"__all__": [PROOF_REQUIRED]}


def test_a_session_alone_cannot_turn_two_factor_off(browser, owner):
    response = browser.post(DISABLE, {})

    assert response.status_code == 400
    assert errors_of(response, "disable") == {"__all__": [PROOF_REQUIRED]}
    assert twofactor.user_has_second_factor(type(owner).objects.get(pk=owner.pk))


@pytest.mark.parametrize("proof", ["code", "password"])
def test_a_current_code_or_the_password_turns_two_factor_off(browser, owner, proof):
    response = browser.post(DISABLE, {"code": totp_code(owner)} if proof == "code" else {"password": PASSWORD},
                            follow=True)

    assert response.redirect_chain == [(SECURITY, 302)]
    assert "Two-factor sign-in is off." in response.content.decode()
    assert not twofactor.user_has_second_factor(type(owner).objects.get(pk=owner.pk))
    assert RecoveryCode.objects.filter(user=owner).count() == 0


def test_the_turn_off_form_is_throttled_like_the_sign_in_second_step(browser, owner):
    wrong = [browser.post(DISABLE, {"code": f"{n:06d}"}).status_code for n in range(5)]

    locked = browser.post(DISABLE, {"code": totp_code(owner)})

    assert wrong == [400] * 5
    assert locked.status_code == 429
    assert int(locked["Retry-After"]) > 0
    assert errors_of(locked, "disable") == {"__all__": ["Too many wrong codes; try again in 15 minutes."]}
    assert twofactor.user_has_second_factor(type(owner).objects.get(pk=owner.pk))


def test_wrong_passwords_on_the_turn_off_form_are_throttled_too(browser, owner):
    wrong = [browser.post(DISABLE, {"password": f"guess-{n}"}).status_code for n in range(5)]

    locked = browser.post(DISABLE, {"password": PASSWORD})

    assert (wrong, locked.status_code) == ([400] * 5, 429)
    assert twofactor.user_has_second_factor(type(owner).objects.get(pk=owner.pk))


def test_the_password_change_needs_the_password_or_a_current_code(browser, owner):
    without = browser.post(SETTINGS, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    owner.refresh_from_db()
    unchanged = owner.check_password(PASSWORD)

    with_code = browser.post(SETTINGS, {"code": totp_code(owner), "new_password1": NEW_PASSWORD,
                                        "new_password2": NEW_PASSWORD})

    assert without.status_code == 400
    assert [str(e) for e in without.context["form"].non_field_errors()] == [PROOF_REQUIRED]
    assert unchanged
    assert with_code.status_code == 302
    owner.refresh_from_db()
    assert owner.check_password(NEW_PASSWORD)


def test_the_password_change_of_a_person_without_a_second_factor_asks_for_the_password():
    owner = MerchantFactory(owner_two_factor=False).owner
    browser = signed_in(owner)

    page = browser.get(SETTINGS).content.decode()
    without = browser.post(SETTINGS, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    wrong = browser.post(SETTINGS, {"password": "not-it", "new_password1": NEW_PASSWORD,
                                    "new_password2": NEW_PASSWORD})

    assert 'name="code"' not in page
    assert without.context["form"].errors == {"password": ["Enter your password to confirm it is you."]}
    assert wrong.context["form"].errors == {"password": ["That is not your password."]}
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)


def test_wrong_passwords_on_the_settings_page_are_throttled(browser, owner):
    body = {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    wrong = [browser.post(SETTINGS, {**body, "password": f"guess-{n}"}).status_code for n in range(5)]

    locked = browser.post(SETTINGS, {**body, "password": PASSWORD})

    assert (wrong, locked.status_code) == ([400] * 5, 429)
    assert int(locked["Retry-After"]) > 0
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)


# --- Item 7: sessions by an opaque id ----------------------------------------------------------------------------
def test_no_session_key_of_any_session_is_in_the_security_page(owner):
    browsers = [signed_in(owner) for _ in range(3)]
    someone_else = signed_in(UserFactory())

    html = browsers[0].get(SECURITY).content.decode()

    keys = list(Session.objects.values_list("session_key", flat=True))
    assert len(keys) == 4 and someone_else.session.session_key in keys
    assert [key for key in keys if key in html] == []
    ids = re.findall(r'<input type="hidden" name="session" value="([0-9a-f]{32})">', html)
    assert sorted(ids) == sorted(session_public_id(b.session.session_key) for b in browsers[1:])


def test_signing_out_another_session_by_its_opaque_id(owner):
    mine, other, third = signed_in(owner), signed_in(owner), signed_in(owner)
    html = mine.get(SECURITY).content.decode()
    other_id = session_public_id(other.session.session_key)
    assert f'value="{other_id}"' in html

    response = mine.post("/dashboard/security/sessions/end/", {"session": other_id})

    assert response.status_code == 302
    assert other.get("/dashboard/").status_code == 302  # signed out
    assert third.get("/dashboard/").status_code == 200
    assert mine.get("/dashboard/").status_code == 200
    assert not UserSession.objects.filter(session_key=other.session.session_key).exists()


def test_a_raw_session_key_or_another_persons_id_ends_nothing(owner):
    mine, other = signed_in(owner), signed_in(owner)
    stranger = signed_in(UserFactory())

    by_key = mine.post("/dashboard/security/sessions/end/", {"session": other.session.session_key})
    by_foreign_id = mine.post("/dashboard/security/sessions/end/",
                              {"session": session_public_id(stranger.session.session_key)})

    assert (by_key.status_code, by_foreign_id.status_code) == (302, 302)
    assert other.get("/dashboard/").status_code == 200
    assert stranger.get("/dashboard/security/").status_code == 200
    assert UserSession.objects.count() == 3


# --- Item 8: only wrong codes count toward the per-IP limit ------------------------------------------------------
def second_step(user, code: str | None = None) -> int:
    browser = Client()
    browser.post("/dashboard/login/", {"username": user.email, "password": PASSWORD})
    return browser.post("/dashboard/login/verify/", {"code": code or totp_code(user)}).status_code


def test_right_codes_never_spend_the_per_ip_limit():
    users = [MerchantFactory().owner for _ in range(throttle.SECOND_FACTOR_PER_IP.attempts + 5)]

    first = [second_step(user) for user in users[:19]]
    wrong = second_step(users[19], code="000000")
    rest = [second_step(user) for user in users[19:]]

    assert first == [302] * 19
    assert wrong == 400
    assert rest == [302] * 6


def test_wrong_codes_still_lock_the_address():
    users = [MerchantFactory().owner for _ in range(5)]
    wrong = [second_step(user, code=f"{n:06d}") for user in users[:4] for n in range(5)]

    locked = second_step(users[4])

    assert wrong == [400] * 20
    assert locked == 429
