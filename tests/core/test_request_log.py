"""The request log never holds a credential that travels in a URL: the hosted page's token (the payer's only
credential) and a password reset's uid and token are logged as the route's argument names."""

import logging
import re

import pytest
from django.core import mail
from django.test import Client

from accounts.models import KycStatus
from core.logging import JsonFormatter
from payments.models import PaymentMethod
from tests.factories import MerchantFactory
from tests.payments.hosted.test_pages import make_payin

pytestmark = pytest.mark.ledger_unchecked  # charges written as the pages need them, without a ledger movement


@pytest.fixture
def every_log(caplog) -> pytest.LogCaptureFixture:
    """caplog at DEBUG on the root logger and on every logger that exists (Django's "Not Found: …" lines too), but
    django.template, which the settings keep at INFO."""
    caplog.set_level(logging.DEBUG)
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name != "django.template":
            caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def logged_text(records: list[logging.LogRecord]) -> str:
    formatter = JsonFormatter()
    return "\n".join(f"{r.getMessage()}\n{formatter.format(r)}\n{r.args!r}" for r in records)


def request_lines(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if r.name == "api.request"]


def test_hosted_page_token_is_never_logged(every_log, client, merchant):
    token = make_payin(merchant, PaymentMethod.BOLETO).public_token

    statuses = [client.get(path).status_code for path in (
        f"/pay/{token}", f"/pay/{token}/status", f"/pay/{token}/boleto", f"/pay/{token}/nothing-here",
        f"/pay/{token[:-1]}x")]

    assert statuses == [200, 200, 200, 404, 404]
    assert request_lines(every_log.records) == [
        "GET /pay/<token> 200", "GET /pay/<token>/status 200", "GET /pay/<token>/boleto 200",
        "GET /pay/<redacted> 404", "GET /pay/<token> 404",
    ]
    assert [r.getMessage() for r in every_log.records if r.name == "django.request"] == [
        "Not Found: /pay/<redacted>", "Not Found: /pay/<token>"]
    logged = logged_text(every_log.records)
    assert token not in logged
    assert token[:-1] not in logged


def test_password_reset_token_is_never_logged(every_log, db):
    owner = MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED).owner
    client = Client()
    client.post("/dashboard/password-reset/", {"email": owner.email})
    link = re.search(r"https?://[^/]+(/dashboard/password-reset/\S+/)", mail.outbox[0].body).group(1)
    uidb64, token = link.split("/")[3:5]

    page = client.get(link, follow=True)
    set_password = page.redirect_chain[-1][0]
    done = client.post(set_password, {"new_password1": "a-new-long-passphrase",
                                      "new_password2": "a-new-long-passphrase"})

    assert (page.status_code, done.status_code) == (200, 302)
    assert request_lines(every_log.records) == [
        "POST /dashboard/password-reset/ 302",
        "GET /dashboard/password-reset/<uidb64>/<token>/ 302",
        "GET /dashboard/password-reset/<uidb64>/<token>/ 200",
        "POST /dashboard/password-reset/<uidb64>/<token>/ 302",
    ]
    logged = logged_text(every_log.records)
    assert (token in logged, uidb64 in logged) == (False, False)


def test_paths_without_a_credential_are_logged_whole(every_log, api):
    response = api.get("/payin/pi_does_not_exist")

    assert response.status_code == 404
    assert request_lines(every_log.records) == ["GET /payin/pi_does_not_exist 404"]
