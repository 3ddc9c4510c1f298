"""The Sentry scrubber: nothing that opens an account or identifies a card leaves for the error tracker."""

from __future__ import annotations

import json

from core.errortracking import REDACTED, event_scrub

CARD = "4111111111111111"


def an_event() -> dict:
    return {
        "message": f"charge failed for {CARD}",
        "request": {
            "url": "https://pay.example.com/payin",
            "method": "POST",
            "query_string": "token=abc",
            "data": {"card": {"number": CARD, "cvv": "123"}},
            "cookies": {"sessionid": "s3cr3t-session"},
            "headers": {"Authorization": "Basic cGtfdGVzdDpza190ZXN0", "X-Api-Secret": "sk_test_secret",
                        "x-api-key": "pk_test_key", "Cookie": "sessionid=s3cr3t-session", "User-Agent": "curl/8"},
        },
        "exception": {"values": [{"type": "ValueError", "value": "bad card 4111 1111 1111 1111 cvv 123",
                                  "stacktrace": {"frames": [{"function": "f", "vars": {"card_number": CARD}}]}}]},
        "extra": {"secretKey": "sk_live_x", "payin_id": "c1", "nested": {"password": "p", "note": f"n {CARD}"}},
        "logentry": {"message": "card %s", "params": [CARD]},
        "breadcrumbs": {"values": [{"message": f"SELECT {CARD}", "data": {"api_key": "pk"}}]},
    }


def test_the_scrubber_drops_secrets_card_data_and_authorization_headers():
    event = event_scrub(an_event(), {})

    sent = json.dumps(event)
    for secret in (CARD, "4111 1111 1111 1111", "cGtfdGVzdDpza190ZXN0", "sk_test_secret", "pk_test_key",
                   "s3cr3t-session", "sk_live_x", "token=abc"):
        assert secret not in sent
    request = event["request"]
    assert "data" not in request and "cookies" not in request
    assert request["headers"] == {"Authorization": REDACTED, "X-Api-Secret": REDACTED, "x-api-key": REDACTED,
                                  "Cookie": REDACTED, "User-Agent": "curl/8"}
    assert "vars" not in event["exception"]["values"][0]["stacktrace"]["frames"][0]
    assert event["extra"] == {"secretKey": REDACTED, "payin_id": "c1",
                              "nested": {"password": REDACTED, "note": f"n {REDACTED}"}}
    assert event["message"] == f"charge failed for {REDACTED}"


def test_the_scrubber_keeps_what_helps_debugging():
    event = event_scrub({"request": {"url": "https://pay.example.com/payin/c1", "method": "GET"},
                         "exception": {"values": [{"type": "KeyError", "value": "'status'"}]}}, {})

    assert event == {"request": {"url": "https://pay.example.com/payin/c1", "method": "GET"},
                     "exception": {"values": [{"type": "KeyError", "value": "'status'"}]}}


def test_sentry_is_set_up_with_the_scrubber_and_without_personal_data(monkeypatch):
    from core import errortracking

    seen = {}
    monkeypatch.setattr(errortracking.sentry_sdk, "init", lambda **options: seen.update(options))

    errortracking.sentry_init(dsn="https://key@sentry.example.com/1", environment="staging")

    assert seen["before_send"] is event_scrub
    assert (seen["send_default_pii"], seen["include_local_variables"], seen["max_request_body_size"]) == (
        False, False, "never")


def test_a_url_carrying_a_credential_keeps_only_its_prefix():
    token = "Zx9-abcDEFghiJKLmnoPQRstuVWXyz0123456789_ab"
    event = {"request": {"url": f"https://pay.example.com/pay/{token}/boleto?x=1",
                         "headers": {}},
             "breadcrumbs": {"values": []}}
    reset = {"request": {"url": f"https://pay.example.com/dashboard/password-reset/MQ/{token}/", "headers": {}}}
    other = {"request": {"url": "https://pay.example.com/dashboard/charges/", "headers": {}}}

    scrubbed = [event_scrub(e)["request"]["url"] for e in (event, reset, other)]

    assert scrubbed == ["https://pay.example.com/pay/[redacted]", "https://pay.example.com/dashboard/password-reset/"
                        "[redacted]", "https://pay.example.com/dashboard/charges/"]
