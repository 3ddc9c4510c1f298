"""SPEC §1.2: the secret is shown once and exists nowhere after that: not in any table, not in any log line, not in
an error; only its keyed digest (HMAC-SHA256 with a server-side key) and its last four characters are kept."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import logging
import re
import uuid

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from core.logging import JsonFormatter
from integrations import keys, services
from integrations.models import ApiKey
from tests.conftest import basic_auth
from tests.factories import MerchantFactory

pytestmark = pytest.mark.django_db

PREFIX = re.compile(r"^(pk|sk)_(test|live)_")
BASE62 = re.compile(r"^[A-Za-z0-9]+$")


def database_dump() -> str:
    """Every row of every table, every field as text, plus the decoded session data (which dumpdata leaves encoded)."""
    out = io.StringIO()
    call_command("dumpdata", stdout=out)
    rows = [out.getvalue()]
    for model in apps.get_models():
        fields = model._meta.concrete_fields
        for row in model._default_manager.all():
            rows.append(repr({field.attname: str(getattr(row, field.attname)) for field in fields}))
    rows.extend(json.dumps(SessionStore().decode(s.session_data), default=str) for s in Session.objects.all())
    return "\n".join(rows)


def leaked_fragments(secret: str, text: str) -> list[str]:
    """The secret, or any 8 consecutive characters of its random part, found in `text`. The `sk_test_` prefix is not
    secret (and `_test_` is in every public key too); the last four characters are kept on purpose (secret_last4),
    and four characters alone are never an 8-character fragment."""
    random_part = PREFIX.sub("", secret)
    fragments = [secret] + [random_part[i:i + 8] for i in range(len(random_part) - 7)]
    return [fragment for fragment in fragments if fragment in text]


def dashboard_pair(client, merchant, mode: str = "test") -> tuple[str, str]:
    """(public key, secret) created on the Integrations page, read from the one page that shows the secret."""
    client.force_login(merchant.owner)
    page = client.get("/dashboard/integrations/").content.decode()
    nonce = re.search(r'name="nonce" value="([^"]+)"', page).group(1)
    created = client.post("/dashboard/integrations/keys/", {"label": "shop", "mode": mode, "nonce": nonce})
    html = created.content.decode()
    return (re.search(r'id="new-public" readonly value="([^"]+)"', html).group(1),
            re.search(r'id="new-secret" readonly value="([^"]+)"', html).group(1))


# --- Format ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("livemode", [False, True], ids=["test", "live"])
def test_key_pairs_have_the_mode_prefix_and_a_base62_body_of_256_bits(livemode, merchant):
    mode = "live" if livemode else "test"

    api_key, secret = services.apikey_create(merchant=merchant, livemode=livemode, label="server")

    assert api_key.public_key.startswith(f"pk_{mode}_")
    assert secret.startswith(f"sk_{mode}_")
    assert BASE62.match(PREFIX.sub("", api_key.public_key))
    assert BASE62.match(PREFIX.sub("", secret))
    # 43 base62 characters are the fewest that carry 256 bits.
    assert len(PREFIX.sub("", secret)) >= 43
    assert api_key.secret_last4 == secret[-4:]
    assert api_key.livemode is livemode
    assert api_key.label == "server"


def test_every_pair_is_new(merchant):
    pairs = [services.apikey_create(merchant=merchant, livemode=False) for _ in range(20)]

    assert len({api_key.public_key for api_key, _ in pairs}) == 20
    assert len({secret for _, secret in pairs}) == 20
    assert len({PREFIX.sub("", secret)[:8] for _, secret in pairs}) == 20


def test_created_pair_authenticates(merchant, api_client_for):
    api_key, secret = services.apikey_create(merchant=merchant, livemode=False)

    response = api_client_for(api_key, secret).get("/account")

    assert response.status_code == 200


def test_live_pair_needs_kyc(unapproved_merchant):
    with pytest.raises(services.LiveKeysNeedKyc):
        services.apikey_create(merchant=unapproved_merchant, livemode=True)

    assert not ApiKey.objects.exists()


# --- Storage --------------------------------------------------------------------------------------------------------
def test_secret_is_stored_only_as_an_hmac_with_the_server_key(merchant):
    api_key, secret = services.apikey_create(merchant=merchant, livemode=False)

    stored = ApiKey.objects.get(pk=api_key.pk)

    server_key = (settings.API_KEY_DIGEST_KEY.encode() if settings.API_KEY_DIGEST_KEY
                  else hmac.new(settings.SECRET_KEY.encode(), b"api-key-digest", hashlib.sha256).digest())
    assert stored.secret_digest == hmac.new(server_key, secret.encode(), hashlib.sha256).hexdigest()
    assert stored.secret_digest == keys.secret_digest(secret)
    assert stored.secret_digest != hashlib.sha256(secret.encode()).hexdigest()
    assert stored.secret_digest != hmac.new(b"another-server", secret.encode(), hashlib.sha256).hexdigest()
    assert stored.secret_last4 == secret[-4:]
    assert keys.secret_matches(secret, stored.secret_digest)
    assert not keys.secret_matches(secret + "x", stored.secret_digest)


def test_no_table_holds_any_secret(merchant, client, unapproved_merchant):
    pairs = []
    for livemode in (False, True):
        api_key, secret = services.apikey_create(merchant=merchant, livemode=livemode, label="via service")
        pairs.append((api_key.public_key, secret))
    for mode in ("test", "live"):
        out = io.StringIO()
        call_command("createapikey", "--email", merchant.owner.email, "--mode", mode, "--label", "cli", stdout=out)
        printed = json.loads(out.getvalue())
        pairs.append((printed["publicKey"], printed["secretKey"]))
    pairs.append(dashboard_pair(client, merchant, "live"))
    pairs.append(dashboard_pair(client, unapproved_merchant, "test"))
    statuses = [APIClient().get("/account", HTTP_AUTHORIZATION=basic_auth(*pair)).status_code for pair in pairs]

    dump = database_dump()

    assert statuses == [200] * 6
    assert ApiKey.objects.count() == 6
    secrets = [secret for _, secret in pairs]
    assert {secret: leaked_fragments(secret, dump) for secret in secrets} == {secret: [] for secret in secrets}
    assert all(public_key in dump for public_key, _ in pairs)  # the dump does hold the keys' rows


def test_the_dump_check_would_see_a_stored_secret(merchant):
    """The check above is able to fail: a secret written into any column is found."""
    api_key, secret = services.apikey_create(merchant=merchant, livemode=False)
    ApiKey.objects.filter(pk=api_key.pk).update(label=f"copied {secret[10:20]} here")

    dump = database_dump()

    assert leaked_fragments(secret, dump) == [PREFIX.sub("", secret)[i:i + 8] for i in range(2, 5)]


def test_createapikey_prints_the_pair_once_as_json(merchant, api_client_for):
    out = io.StringIO()

    call_command("createapikey", "--email", merchant.owner.email.upper(), "--label", "cli", stdout=out)

    printed = json.loads(out.getvalue())
    api_key = ApiKey.objects.get(public_key=printed["publicKey"])
    assert set(printed) == {"publicKey", "secretKey", "mode"}
    assert printed["mode"] == "test"
    assert printed["secretKey"].startswith("sk_test_")
    assert (api_key.merchant, api_key.livemode, api_key.label) == (merchant, False, "cli")
    assert api_client_for(api_key, printed["secretKey"]).get("/account").status_code == 200


@pytest.mark.parametrize(("args", "message"), [
    (["--email", "nobody@example.com"], "No merchant whose login is nobody@example.com"),
    (["--mode", "live"], "Live keys can be created once your KYC is approved"),
])
def test_createapikey_refusals(args, message, unapproved_merchant):
    argv = args if "--email" in args else ["--email", unapproved_merchant.owner.email, *args]

    with pytest.raises(CommandError, match=message):
        call_command("createapikey", *argv, stdout=io.StringIO())

    assert not ApiKey.objects.exists()


# --- Logs and errors ------------------------------------------------------------------------------------------------
def log_text(records: list[logging.LogRecord]) -> str:
    json_formatter = JsonFormatter()
    text_formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    lines = []
    for record in records:
        lines.append(record.getMessage())
        lines.append(json_formatter.format(record))
        lines.append(text_formatter.format(record))
        lines.append(repr(record.args))
    return "\n".join(lines)


def test_logs_never_hold_a_secret(every_log, merchant, test_key, client, notes_api):
    api_key, secret = test_key
    other_key, other_secret = services.apikey_create(merchant=merchant, livemode=False)
    requests = [
        ("basic", {"HTTP_AUTHORIZATION": basic_auth(api_key.public_key, secret)}),
        ("headers", {"HTTP_X_API_KEY": api_key.public_key, "HTTP_X_API_SECRET": secret}),
        ("wrong secret", {"HTTP_AUTHORIZATION": basic_auth(api_key.public_key, secret[:-2] + "zz")}),
        ("not basic", {"HTTP_AUTHORIZATION": f"Bearer {secret}"}),
        ("no colon", {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(secret.encode()).decode()}),
        ("only secret header", {"HTTP_X_API_SECRET": secret}),
        ("mixed pairs", {"HTTP_AUTHORIZATION": basic_auth(api_key.public_key, secret),
                         "HTTP_X_API_KEY": other_key.public_key, "HTTP_X_API_SECRET": other_secret}),
        ("query string", {"QUERY_STRING": f"secret={secret}",
                          "HTTP_AUTHORIZATION": basic_auth(api_key.public_key, secret)}),
    ]

    with CaptureQueriesContext(connection):  # so that every SQL statement is logged too (django.db.backends)
        statuses = {name: APIClient().get("/account", **extra).status_code for name, extra in requests}
        posted = APIClient().post(notes_api, {"note": "hi"}, HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret),
                                  HTTP_IDEMPOTENCY_KEY="log-test")
        out = io.StringIO()
        call_command("createapikey", "--email", merchant.owner.email, stdout=out)
        _, dashboard = dashboard_pair(client, merchant)

    secrets = [secret, other_secret, json.loads(out.getvalue())["secretKey"], dashboard]
    assert statuses == {"basic": 200, "headers": 200, "wrong secret": 401, "not basic": 401, "no colon": 401,
                        "only secret header": 401, "mixed pairs": 401, "query string": 200}
    assert posted.status_code == 201
    assert any(r.name == "django.db.backends" for r in every_log.records)
    assert any(r.name == "api.request" for r in every_log.records)
    assert any(r.getMessage() == "api.authentication_failed" for r in every_log.records)
    logged = log_text(every_log.records)
    assert {s: leaked_fragments(s, logged) for s in secrets} == {s: [] for s in secrets}


def test_a_secret_sent_as_the_public_key_is_not_logged(every_log, test_key):
    """A client that swaps its pair sends its secret where the public key belongs: the failure log must not repeat
    it. (With the project's LOGGING, SQL is never logged: django.db.backends stays at INFO and DEBUG is off.)"""
    api_key, secret = test_key
    swapped = [
        {"HTTP_X_API_KEY": secret, "HTTP_X_API_SECRET": api_key.public_key},
        {"HTTP_AUTHORIZATION": basic_auth(secret, api_key.public_key)},
        {"HTTP_AUTHORIZATION": basic_auth(secret, secret)},
    ]

    statuses = [APIClient().get("/account", **extra).status_code for extra in swapped]

    assert statuses == [401, 401, 401]
    assert [r.getMessage() for r in every_log.records if r.name == "integrations.authentication"] == [
        "api.authentication_failed"] * 3
    assert leaked_fragments(secret, log_text(every_log.records)) == []


def test_failed_authentication_is_logged_with_the_public_key_only(every_log, test_key):
    api_key, secret = test_key

    APIClient().get("/account", HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret + "0"))
    APIClient().get("/account", HTTP_X_API_KEY=secret, HTTP_X_API_SECRET=secret)

    failures = [json.loads(JsonFormatter().format(r)) for r in every_log.records
                if r.getMessage() == "api.authentication_failed"]
    assert [(f["level"], f["logger"], f["public_key"]) for f in failures] == [
        ("INFO", "integrations.authentication", api_key.public_key),
        ("INFO", "integrations.authentication", "(not a public key)"),
    ]


@pytest.mark.parametrize("how", ["basic", "headers"])
def test_error_for_a_wrong_secret_does_not_echo_it(how, test_key, expected_error):
    api_key, secret = test_key
    wrong = secret[:-6] + "ZZZZZZ"
    extra = ({"HTTP_AUTHORIZATION": basic_auth(api_key.public_key, wrong)} if how == "basic"
             else {"HTTP_X_API_KEY": api_key.public_key, "HTTP_X_API_SECRET": wrong})

    response = APIClient().get("/account", **extra)

    assert response.status_code == 401
    assert response.json() == expected_error(response, type="authentication_error", code="invalid_api_key",
                                             message="Invalid API key")
    everything = response.content.decode() + "\n" + "\n".join(f"{k}: {v}" for k, v in response.items())
    assert leaked_fragments(wrong, everything) == []
    assert leaked_fragments(secret, everything) == []


def test_createapikey_asks_which_merchant_when_the_owner_owns_several(merchant):
    """Issue 37, item 16: a person may own several merchants; the command never guesses which one gets a key."""
    other = MerchantFactory(owner=merchant.owner, name="Loja Dois")
    ordered = sorted([merchant, other], key=lambda m: m.created_at)

    with pytest.raises(CommandError) as refused:
        call_command("createapikey", "--email", merchant.owner.email, stdout=io.StringIO())
    assert str(refused.value) == (f"{merchant.owner.email} owns 2 merchants: name one with --merchant "
                                  f"({ordered[0].pk} ({ordered[0].name}), {ordered[1].pk} ({ordered[1].name}))")
    assert not ApiKey.objects.exists()

    out = io.StringIO()
    call_command("createapikey", "--email", merchant.owner.email, "--merchant", str(other.pk), stdout=out)
    assert ApiKey.objects.get(public_key=json.loads(out.getvalue())["publicKey"]).merchant == other
    with pytest.raises(CommandError, match=f"No merchant whose login is {merchant.owner.email} with the id"):
        call_command("createapikey", "--email", merchant.owner.email, "--merchant", str(uuid.uuid4()),
                     stdout=io.StringIO())
