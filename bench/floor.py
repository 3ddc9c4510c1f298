"""Floors: what a request costs on this machine and stack when it does only the part no implementation can skip.

`bench/run.py --floor` serves this module instead of `config.wsgi` (the project's URLs plus the three below) and
measures each floor against `GET /account`, like the real endpoints. A floor authenticates like every API request
(the same `ApiView`, key cache and Redis round trip), reads the JSON body, writes what the endpoint must write
durably, and answers with the object the contract's 201 carries (SPEC §3.2, §4.2). It validates nothing, builds no
BR Code, decides nothing and serializes nothing: its SQL, its parameter list and the object are built once through
the ORM and the service's serializer, and each request only replaces the values that change. So the real endpoint
can only cost more than its floor, and a target above the floor's ratio cannot be met by any implementation of the
endpoint on this stack and machine (README, "Performance").

- `POST /floor/post`: no database at all (authentication, the JSON body, a 201 with two fields).
- `POST /floor/payin`: a PIX charge and its `payin.created` event (the outbox row that makes the webhook
  impossible to lose) in one INSERT statement; the answer is the charge.
- `POST /floor/payout`: a payout's write set in one statement: the merchant's available balance debited under its
  condition (the hot row), the in-flight balance credited, the day's payout total, the payout, its audit-log entry,
  its event, the ledger movement and its two entries (SPEC §4.3, §5).

The rows are the real endpoint's, of the same size: the charge keeps the request's customer and items, and the
event carries the whole object, as the webhook is sent from that row (a payload of the object's id alone, as the
floors wrote until 2026-11-29, left PostgreSQL a tenth of the JSON to parse and store), and the answer is that
object too (a body of two fields, as the floors answered until later that day, left the server a twentieth of the
answer to write and send, and the client to read). The object's shape is the service's own serialization of the
template's row, made once; a request puts its own values into a copy.

Never part of the service: only gunicorn started by `bench/run.py --floor` loads it.
"""

from __future__ import annotations

import os
import secrets
import uuid
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()  # Django is set up from here on

from django.conf import settings  # noqa: E402
from django.db.models import Model  # noqa: E402
from django.urls import path  # noqa: E402
from django.utils import timezone  # noqa: E402
from psycopg.types.json import Jsonb as _Jsonb  # noqa: E402
from rest_framework.request import Request  # noqa: E402
from rest_framework.response import Response  # noqa: E402

import config.urls  # noqa: E402
from accounts.models import AccountEvent  # noqa: E402
from core import inserts  # noqa: E402
from core.api import ApiView  # noqa: E402
from payments.models import (  # noqa: E402
    AccountKind,
    LedgerAccount,
    LedgerEntry,
    LedgerTransaction,
    LineType,
    Payin,
    PaymentMethod,
    Payout,
    PayoutDailyTotal,
    PixKeyType,
)
from payments.payins.serializers import payin_serialize  # noqa: E402
from payments.payouts.serializers import payout_serialize  # noqa: E402
from webhooks.services import event_build  # noqa: E402

# The length of a real dynamic BR Code of the bench merchant.
PIX_PAYLOAD = "00020101021226" + "0" * 140 + "6304ABCD"


def Jsonb(value: Any) -> _Jsonb:
    """A JSON column's value with its text written as the service writes its own (`core.inserts._json_text`)."""
    return _Jsonb(value, dumps=inserts._json_text)


class Template:
    """One INSERT … statement (with optional leading statements) and its parameters, built once from model instances;
    `params()` hands out a copy in which `set()` replaces a field's value by the row's tag."""

    def __init__(self, rows: list[tuple[str, Model]], *, head: list[tuple[str, list]] = ()):
        statements = [sql for sql, _ in head]
        self.values: list[Any] = [value for _, params in head for value in params]
        self.index: dict[tuple[str, str], int] = {}
        last_model, last_sql = None, ""
        for tag, obj in rows:
            sql, fields = inserts._statement(type(obj))
            for field, value in zip(fields, inserts._params(obj), strict=True):
                self.index[(tag, field.attname)] = len(self.values)
                self.values.append(value)
            if type(obj) is last_model:  # one more row of the same model: one more VALUES tuple
                last_sql += ", " + sql[sql.index(" VALUES ") + len(" VALUES "):]
            else:
                if last_model is not None:
                    statements.append(last_sql)
                last_model, last_sql = type(obj), sql
        *first, last = [*statements, last_sql]
        self.sql = "WITH " + ", ".join(f"_{n} AS ({s})" for n, s in enumerate(first)) + " " + last

    payload: dict  # the event's, as event_build made it
    object: dict  # the object it carries, as the service serializes the template's row

    def params(self) -> list[Any]:
        return list(self.values)

    def set(self, params: list[Any], tag: str, attname: str, value: Any) -> None:
        params[self.index[(tag, attname)]] = value

    def execute(self, params: list[Any]) -> None:
        inserts.execute(self.sql, params)  # as the service executes its own INSERTs


class FloorApi(ApiView):
    """One template per merchant and mode, built on that key pair's first request."""

    templates: dict[tuple, Template]

    def template(self, request: Request) -> Template:
        key = (request.auth.merchant.pk, request.auth.livemode)
        if key not in self.templates:
            self.templates[key] = self.build(request.auth.merchant, request.auth.livemode)
        return self.templates[key]

    def build(self, merchant, livemode: bool) -> Template:
        raise NotImplementedError


class PostFloorApi(ApiView):
    def post(self, request: Request) -> Response:
        return Response({"id": str(uuid.uuid4()), "amount": request.data["amount"]}, status=201)


def _with_event(rows: list[tuple[str, Model]], obj: dict, merchant, livemode: bool, type: str,
                **head) -> Template:
    """A template of `rows` with their event after the first (the object `obj` announces), as the endpoint writes
    them."""
    event, _ = event_build(merchant=merchant, livemode=livemode, type=type, obj=obj, endpoints=[])
    template = Template([rows[0], ("event", event), *rows[1:]], **head)
    template.payload, template.object = event.payload, obj
    return template


def _event_set(template: Template, params: list, object_id: uuid.UUID, now, obj: dict) -> None:
    """The event's row for this request: the template's payload (built once by `event_build`) around `obj`."""
    event_id = uuid.uuid4()
    payload = {**template.payload, "id": str(event_id), "data": {"object": obj, "previousStatus": None}}
    template.set(params, "event", "id", event_id)
    template.set(params, "event", "object_id", str(object_id))
    template.set(params, "event", "payload", Jsonb(payload))
    template.set(params, "event", "created_at", now)


class PayinFloorApi(FloorApi):
    templates: dict = {}

    def build(self, merchant, livemode: bool) -> Template:
        now = timezone.now()
        payin = Payin(merchant=merchant, livemode=livemode, payment_method=PaymentMethod.PIX, amount=1, fee=0,
                      reference_id="", description="", metadata={}, customer={}, items=[], payer_ip="203.0.113.9",
                      is_physical_product=False, webhook_url="", public_token=secrets.token_urlsafe(32),
                      created_at=now, updated_at=now, pix_txid=uuid.uuid4().hex[:25], pix_payload=PIX_PAYLOAD,
                      pix_expires_at=now)
        return _with_event([("payin", payin)], payin_serialize(payin), merchant, livemode, "payin.created")

    def post(self, request: Request) -> Response:
        data = request.data
        template = self.template(request)
        params = template.params()
        now = timezone.now()
        payin_id = uuid.uuid4()
        customer, items = data["customer"], data.get("items", [])
        for attname, value in (("id", payin_id), ("amount", data["amount"]), ("reference_id", data["referenceId"]),
                               ("customer", Jsonb(customer)), ("items", Jsonb(items)),
                               ("public_token", secrets.token_urlsafe(32)), ("pix_txid", payin_id.hex[:25]),
                               ("created_at", now), ("updated_at", now), ("pix_expires_at", now)):
            template.set(params, "payin", attname, value)
        obj = {**template.object, "id": str(payin_id), "amount": data["amount"], "referenceId": data["referenceId"],
               "customer": customer, "items": items}
        _event_set(template, params, payin_id, now, obj)
        template.execute(params)
        return Response(obj, status=201)


class PayoutFloorApi(FloorApi):
    templates: dict = {}

    def build(self, merchant, livemode: bool) -> Template:
        now = timezone.now()
        accounts = {kind: LedgerAccount.objects.get_or_create(merchant=merchant, livemode=livemode, kind=kind)[0]
                    for kind in (AccountKind.AVAILABLE, AccountKind.PAYOUTS_IN_FLIGHT)}
        table = LedgerAccount._meta.db_table
        daily = PayoutDailyTotal._meta.db_table
        # Table names from the models, placeholders for every value.
        head = [
            (f"UPDATE {table} SET balance = balance - %s WHERE id = %s AND balance >= %s",
             [0, accounts[AccountKind.AVAILABLE].pk, 0]),
            (f"UPDATE {table} SET balance = balance + %s WHERE id = %s",
             [0, accounts[AccountKind.PAYOUTS_IN_FLIGHT].pk]),
            (f"INSERT INTO {daily} (merchant_id, livemode, day, amount) VALUES (%s, %s, %s, %s) "
             f"ON CONFLICT (merchant_id, livemode, day) DO UPDATE SET amount = {daily}.amount + EXCLUDED.amount",
             [merchant.pk, livemode, now.date(), 0]),
        ]
        payout = Payout(merchant=merchant, livemode=livemode, amount=1, fee=0, pix_key="", pix_key_normalized="",
                        pix_key_type=PixKeyType.EVP, reference_id="", external_id=uuid.uuid4().hex, metadata={},
                        local_date=now.date(), created_at=now, updated_at=now)
        # The audit log's entry (the API's own, accounts.audit) and the statement line, as the endpoint writes them.
        audit = AccountEvent(merchant=merchant, actor_key="",
                             action=AccountEvent.Action.PAYOUT_CREATED, obj_type="payout", obj_id="",
                             after={"amount": 1, "fee": 0}, details={}, created_at=now)
        movement = LedgerTransaction(merchant=merchant, livemode=livemode, object_type="payout", object_id="",
                                     reference_id="", description=f"Pix payout to {PixKeyType.EVP} key")
        entries = [LedgerEntry(transaction=movement, account=accounts[kind], amount=1, line_type=LineType.PAYOUT,
                               balance_after=0, created_at=now)
                   for kind in (AccountKind.AVAILABLE, AccountKind.PAYOUTS_IN_FLIGHT)]
        return _with_event([("payout", payout), ("audit", audit), ("movement", movement), ("debit", entries[0]),
                            ("credit", entries[1])],
                           payout_serialize(payout), merchant, livemode, "payout.created", head=head)

    def post(self, request: Request) -> Response:
        data = request.data
        amount = data["amount"]
        template = self.template(request)
        params = template.params()
        params[0] = params[2] = params[3] = params[8] = amount  # the head: debit, its condition, credit, day total
        now = timezone.now()
        payout_id, movement_id = uuid.uuid4(), uuid.uuid4()
        for attname, value in (("id", payout_id), ("amount", amount), ("pix_key", data["pixKey"]),
                               ("pix_key_normalized", data["pixKey"]), ("reference_id", data["referenceId"]),
                               ("external_id", payout_id.hex), ("created_at", now), ("updated_at", now)):
            template.set(params, "payout", attname, value)
        obj = {**template.object, "id": str(payout_id), "amount": amount, "pixKey": data["pixKey"],
               "referenceId": data["referenceId"], "externalId": payout_id.hex}
        _event_set(template, params, payout_id, now, obj)
        template.set(params, "movement", "id", movement_id)
        template.set(params, "audit", "actor_key", request.auth.public_key)
        template.set(params, "audit", "obj_id", str(payout_id))
        template.set(params, "audit", "after", Jsonb({"amount": amount, "fee": 0}))
        template.set(params, "audit", "created_at", now)
        template.set(params, "movement", "object_id", str(payout_id))
        template.set(params, "movement", "reference_id", data["referenceId"])
        template.set(params, "movement", "created_at", now)
        for tag, signed in (("debit", -amount), ("credit", amount)):
            template.set(params, tag, "transaction_id", movement_id)
            template.set(params, tag, "amount", signed)
            template.set(params, tag, "created_at", now)
        template.execute(params)
        return Response(obj, status=201)


urlpatterns = [
    *config.urls.urlpatterns,
    path("floor/post", PostFloorApi.as_view()),
    path("floor/payin", PayinFloorApi.as_view()),
    path("floor/payout", PayoutFloorApi.as_view()),
]
settings.ROOT_URLCONF = __name__
