"""POST /payin, GET /payin/{id} and GET /payin through the HTTP API (SPEC §1, §3, §5): whole response bodies for
each method, every test card of §3.7 and its event, card tokens, lists, idempotency, and that a refused request
leaves nothing behind.

The helpers at the top are shared by `test_payin_lifecycle.py` and `test_refunds.py`.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from integrations import authcache
from integrations.models import IdempotencyKey
from payments.formats import boleto, pix
from payments.management.commands.ledger_check import Command as LedgerCheck
from payments.models import CardToken, LedgerEntry, LedgerTransaction, Payin
from tests.factories import ApiKeyFactory, MerchantFactory, items_totalling
from tests.payments.helpers import ISO_MS_Z, UUID, envelope, events_of, statement
from webhooks.models import Event

# --- Formats of generated values -------------------------------------------------------------------------------------
PUBLIC_TOKEN = r"[A-Za-z0-9_-]{43}"  # secrets.token_urlsafe(32)
CARD_TOKEN = r"card_[A-Za-z0-9]{24}"
TXID = r"[A-Za-z0-9]{25}"
AUTHORIZATION_CODE = r"[0-9A-Z]{6}"
PIX_KEY = "123e4567-e12b-12d1-a456-426655440000"  # the Central Bank's example key: test mode's codes carry it

# 2025-11-21 01:30 UTC is still 2025-11-20 (22:30) in São Paulo: dates that follow UTC instead would be a day off.
NOW = datetime(2025, 11, 21, 1, 30, 15, 123456, tzinfo=UTC)
SAO_PAULO_TODAY = date(2025, 11, 20)

# --- Request bodies --------------------------------------------------------------------------------------------------
ADDRESS_IN = {"street": "Av. Paulista", "number": "1000", "zipCode": "01310-100", "city": "São Paulo", "state": "sp"}
ADDRESS_OUT = {"street": "Av. Paulista", "number": "1000", "complement": "", "zipCode": "01310100",
               "city": "São Paulo", "state": "SP"}
CUSTOMER_IN = {"name": "Ana Souza", "document": "529.982.247-25", "email": "ana@example.com"}
CUSTOMER_OUT = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com", "phone": None,
                "address": None}
ITEMS = [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}]
CARD_IN = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12", "expirationYear": "2030",
           "cvv": "123"}

PAID_CARDS = [  # number, brand, cvv
    ("4111111111111111", "visa", "123"),
    ("5555555555554444", "mastercard", "123"),
    ("378282246310005", "amex", "1234"),
    ("6362970000457013", "elo", "123"),
    ("6062825624254001", "hipercard", "123"),
]
FAILED_CARDS = [  # number, failureCode, failureMessage
    ("4000000000000002", "card_declined", "The card was declined."),
    ("4000000000009995", "insufficient_funds", "The card has insufficient funds."),
    ("4000000000000069", "expired_card", "The card has expired."),
    ("4000000000000127", "incorrect_cvc", "The card's security code is incorrect."),
    ("4000000000000119", "processing_error", "An error occurred while processing the card."),
]


def payin_body(method: str = "PIX", **fields) -> dict:
    """A valid POST /payin body for `method`; `fields` replace top-level fields."""
    body = {"paymentMethod": method, "amount": 5000, "referenceId": "order-1", "payerIp": "203.0.113.9",
            "isPhysicalProduct": False, "customer": copy.deepcopy(CUSTOMER_IN), "items": copy.deepcopy(ITEMS)}
    if method == "BOLETO":
        body["customer"].update(phone="(11) 98765-4321", address=dict(ADDRESS_IN))
    if method == "CREDIT_CARD":
        body["card"] = dict(CARD_IN)
    body.update(fields)
    if "items" not in fields:
        body["items"] = items_totalling(body["amount"])
    return body


def customer_out(method: str) -> dict:
    """`customer` as the API echoes it for a `payin_body(method)`: as sent, normalized."""
    if method == "BOLETO":
        return {**CUSTOMER_OUT, "phone": "11987654321", "address": ADDRESS_OUT}
    return dict(CUSTOMER_OUT)


def card_with(number: str, cvv: str = "123", **fields) -> dict:
    return {**CARD_IN, "number": number, "cvv": cvv, **fields}


# --- Calls -----------------------------------------------------------------------------------------------------------
def create(client, method: str = "PIX", **fields) -> dict:
    """POST /payin that must succeed (201); the body."""
    response = client.post("/payin", payin_body(method, **fields), format="json")
    assert response.status_code == 201, response.content
    return response.json()


def get(client, payin_id: str) -> dict:
    response = client.get(f"/payin/{payin_id}")
    assert response.status_code == 200, response.content
    return response.json()


def simulate(client, payin_id: str, action: str) -> dict:
    """POST /sandbox/payin/{id}/simulate that must succeed (200); the charge."""
    response = client.post(f"/sandbox/payin/{payin_id}/simulate", {"action": action}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def paid_pix(client, amount: int, **fields) -> dict:
    """A PIX charge the payer paid (sandbox)."""
    return simulate(client, create(client, "PIX", amount=amount, **fields)["id"], "pay")


def balance(client) -> dict:
    response = client.get("/balance")
    assert response.status_code == 200, response.content
    return response.json()


def line(type: str, amount: int, balance_after: int, *, object_id: str, reference_id: str | None = "order-1",
         object_type: str = "payin", description: str, balance: str = "available") -> dict:
    """A statement line (SPEC §5) without its id and createdAt."""
    return {"type": type, "amount": amount, "balanceAfter": balance_after, "balance": balance,
            "objectType": object_type, "objectId": object_id, "referenceId": reference_id,
            "description": description}


def error(response, status: int, *, type: str, code: str, message: str, param: str | None = None,
          details: list | None = None) -> None:
    """The response is the whole SPEC §1.1 error body, with the response's own request id."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"type": type, "code": code, "message": message, "param": param,
                                         "details": details or [], "requestId": response["X-Request-Id"]}}


def not_found(response) -> None:
    error(response, 404, type="not_found", code="not_found", message="No such charge")


def invalid_state(response, message: str) -> None:
    error(response, 409, type="conflict", code="invalid_state", message=message)


def validation(response, details: list[dict]) -> None:
    error(response, 400, type="invalid_request_error", code="validation_error",
          message="The request has invalid fields", param=details[0]["param"] if len(details) == 1 else None,
          details=details)


def assert_ledger_balanced() -> None:
    problems, _ = LedgerCheck().inspect()
    assert problems == []


# --- Expected bodies -------------------------------------------------------------------------------------------------
def expected_charge(got: dict, *, method: str, amount: int, fee: int, status: str = "PENDING",
                    reference_id: str = "order-1", livemode: bool = False, paid: bool = False, refunded: int = 0,
                    failure: tuple[str, str] | None = None, **extra) -> dict:
    """The whole body of a charge made from `payin_body(method, ...)`. Generated values (id, the payment page's
    token, timestamps) are checked for their format, then taken from `got`; `extra` adds the method's own object."""
    assert re.fullmatch(UUID, got["id"]), got["id"]
    page = re.fullmatch(rf"{re.escape(settings.PUBLIC_BASE_URL)}/pay/({PUBLIC_TOKEN})", got["paymentUrl"])
    assert page, got["paymentUrl"]
    assert re.fullmatch(ISO_MS_Z, got["createdAt"]) and re.fullmatch(ISO_MS_Z, got["updatedAt"]), got
    assert got["createdAt"] <= got["updatedAt"]
    if paid:
        assert re.fullmatch(ISO_MS_Z, got["paidAt"] or ""), got["paidAt"]
        assert got["createdAt"] <= got["paidAt"] <= got["updatedAt"]
    return {
        "id": got["id"], "status": status, "amount": amount, "fee": fee, "netAmount": amount - fee, "currency": "BRL",
        "paymentMethod": method, "referenceId": reference_id, "livemode": livemode, "description": "",
        "metadata": {}, "customer": customer_out(method), "items": items_totalling(amount), "refundedAmount": refunded,
        "paymentUrl": f"{settings.PUBLIC_BASE_URL}/pay/{page.group(1)}", "createdAt": got["createdAt"],
        "updatedAt": got["updatedAt"], "paidAt": got["paidAt"] if paid else None,
        "failureCode": failure[0] if failure else None, "failureMessage": failure[1] if failure else None,
        **extra,
    }


def expected_card(got: dict, *, number: str, brand: str, installments: int = 1, tokenized: bool = True,
                  holder_name: str = "ANA SOUZA") -> dict:
    """`card` of a charge body; a token (format-checked) only when the rail tokenized the card."""
    token = got["card"]["token"]
    if tokenized:
        assert re.fullmatch(CARD_TOKEN, token or ""), token
    return {"brand": brand, "bin": number[:6], "last4": number[-4:], "holderName": holder_name,
            "expirationMonth": "12", "expirationYear": "2030", "installments": installments,
            "token": token if tokenized else None}


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def iso(value: datetime) -> str:
    """The SPEC's timestamp, written independently of the code under test."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- Fixtures --------------------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _api_settings(settings):
    settings.API_RATE_LIMIT = 1_000_000  # these tests send many requests a second with one key pair
    settings.PIX_KEY = "platform@pagamentos.example"  # the live rail's key: never in a test-mode code (PIX_KEY below)
    settings.PIX_MERCHANT_CITY = "São Paulo"
    settings.BOLETO_BANK_CODE = "001"
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349
    settings.CHARGE_MAX_AMOUNT = 10_000_000
    settings.CARD_SETTLEMENT_DAYS = 30


class Clock:
    """`django.utils.timezone.now`, frozen at `now` (freezegun is not installed)."""

    def __init__(self, now: datetime):
        self.now = now

    def advance(self, **delta) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    frozen = Clock(NOW)
    monkeypatch.setattr(timezone, "now", lambda: frozen.now)
    return frozen


@pytest.fixture
def live_api(api_client_for, merchant):
    """A live key pair of the `api` fixture's merchant (KYC approved)."""
    return api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))


@pytest.fixture
def other_api(api_client_for, db):
    """A test key pair of another merchant."""
    return api_client_for(*ApiKeyFactory.with_secret(merchant=MerchantFactory(), livemode=False))


# === 1. Each method's 201 body =======================================================================================
def test_pix_charge_whole_body_qrcode_and_expiration(db, api_client_for, clock, settings):
    settings.PUBLIC_BASE_URL = "https://pay.example.com"
    merchant = MerchantFactory(name="Padaria São João & Cia")
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=False))
    body = payin_body("PIX", amount=10050, referenceId="order-42", description="Pedido 42",
                      metadata={"order": "42"}, pix={"expiresIn": 600})

    response = client.post("/payin", body, format="json")

    assert response.status_code == 201
    assert response["Api-Version"] == "2026-11-20"
    got = response.json()
    assert re.fullmatch(UUID, got["id"])
    assert re.fullmatch(TXID, got["pix"]["txid"])
    token = re.fullmatch(rf"https://pay\.example\.com/pay/({PUBLIC_TOKEN})", got["paymentUrl"]).group(1)
    assert got == {
        "id": got["id"], "status": "PENDING", "amount": 10050, "fee": 99, "netAmount": 9951, "currency": "BRL",
        "paymentMethod": "PIX", "referenceId": "order-42", "livemode": False, "description": "Pedido 42",
        "metadata": {"order": "42"}, "customer": CUSTOMER_OUT, "items": items_totalling(10050), "refundedAmount": 0,
        "paymentUrl": f"https://pay.example.com/pay/{token}",
        "createdAt": "2025-11-21T01:30:15.123Z", "updatedAt": "2025-11-21T01:30:15.123Z", "paidAt": None,
        "failureCode": None, "failureMessage": None,
        "pix": {
            "qrcode": got["pix"]["qrcode"],
            "expiration": "2025-11-21T01:40:15.123Z",  # createdAt + expiresIn
            "txid": got["pix"]["txid"],
            "qrcodeImageUrl": f"https://pay.example.com/payin/{got['id']}/qrcode.png?token={token}",
        },
    }
    qrcode = got["pix"]["qrcode"]
    assert pix.parse(qrcode) == {
        "00": "01", "26": {"00": "br.gov.bcb.pix", "01": PIX_KEY}, "52": "0000", "53": "986", "54": "100.50",
        "58": "BR", "59": "Padaria Sao Joao e Cia", "60": "Sao Paulo", "62": {"05": got["pix"]["txid"]},
        "63": qrcode[-4:],
    }
    assert qrcode[-8:-4] == "6304" and qrcode[-4:] == pix.crc16(qrcode[:-4])


def test_pix_default_expiration_is_an_hour_after_creation(api):
    got = create(api, "PIX")

    assert parse_iso(got["pix"]["expiration"]) - parse_iso(got["createdAt"]) == timedelta(seconds=3600)
    assert got == expected_charge(got, method="PIX", amount=5000, fee=50, pix={
        "qrcode": got["pix"]["qrcode"], "expiration": got["pix"]["expiration"], "txid": got["pix"]["txid"],
        "qrcodeImageUrl": f"{settings.PUBLIC_BASE_URL}/payin/{got['id']}/qrcode.png?token="
                          f"{got['paymentUrl'].rsplit('/', 1)[1]}"})
    assert pix.parse(got["pix"]["qrcode"])["62"] == {"05": got["pix"]["txid"]}


@pytest.mark.parametrize("name", ["☕☕", "日本料理", "***"])
def test_a_pix_charge_of_a_merchant_named_without_ascii_letters(db, api_client_for, name):
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=MerchantFactory(name=name), livemode=False))

    response = client.post("/payin", payin_body("PIX"), format="json")

    assert response.status_code == 201, response.content
    fields = pix.parse(response.json()["pix"]["qrcode"])
    assert fields["59"] and fields["60"]


def test_the_name_and_city_in_the_br_code_follow_a_kyc_submission(db, api_client_for):
    """The folded name and city are kept with the merchant the key cache holds (payins.services._pix_names); a KYC
    submission drops that merchant (accounts.signals.merchant_changed), so the next charge shows the new ones."""
    from accounts.services import KycData, kyc_submit

    merchant = MerchantFactory(name="Loja Antiga", kyc_status="NOT_SUBMITTED")  # test keys work before KYC
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=False))
    first = [pix.parse(client.post("/payin", payin_body("PIX"), format="json").json()["pix"]["qrcode"])
             for _ in range(2)]
    kyc_submit(merchant=merchant, actor=merchant.owner, data=KycData(
        legal_name="Padaria Nova LTDA", trading_name="Padaria Nova", document="11222333000181", document_type="CNPJ",
        street="Rua A", number="1", complement="", city="Curitiba", state="PR", zip_code="80000000",
        phone="41999999999", website="", document_file=None))
    after = pix.parse(client.post("/payin", payin_body("PIX"), format="json").json()["pix"]["qrcode"])

    default_city = pix.fold_ascii(settings.PIX_MERCHANT_CITY, pix.CITY_MAX_LENGTH)
    assert [(f["59"], f["60"]) for f in first] == [("Loja Antiga", default_city)] * 2
    assert (after["59"], after["60"]) == ("Padaria Nova", "Curitiba")


@pytest.mark.parametrize(("amount", "fee"), [
    (10050, 99),  # 99.495 → 99
    (150, 1),  # 1.485 → 1
    (100, 1),  # 0.99 → 1
    (5000, 50),  # 49.5 → 50 (half up)
    (15000, 149),  # 148.5 → 149 (half up, not half even)
    (10_000_000, 99_000),
])
def test_pix_fee_is_099_percent_rounded_half_up(api, amount, fee):
    got = create(api, "PIX", amount=amount)

    assert (got["amount"], got["fee"], got["netAmount"]) == (amount, fee, amount - fee)
    assert pix.parse(got["pix"]["qrcode"])["54"] == f"{amount // 100}.{amount % 100:02d}"


def test_each_charge_gets_its_own_txid_and_payment_page(api):
    first, second = create(api, "PIX"), create(api, "PIX")

    assert first["pix"]["txid"] != second["pix"]["txid"]
    assert first["paymentUrl"] != second["paymentUrl"]


def test_boleto_charge_whole_body_barcode_and_default_due_date(api, clock):
    response = api.post("/payin", payin_body("BOLETO", amount=12345, referenceId="order-7"), format="json")

    assert response.status_code == 201
    got = response.json()
    page = re.fullmatch(rf"{re.escape(settings.PUBLIC_BASE_URL)}/pay/({PUBLIC_TOKEN})", got["paymentUrl"])
    assert re.fullmatch(r"[0-9]{44}", got["boleto"]["barcode"])
    assert re.fullmatch(r"[0-9]{47}", got["boleto"]["digitableLine"])
    assert got == {
        "id": got["id"], "status": "PENDING", "amount": 12345, "fee": 349, "netAmount": 11996, "currency": "BRL",
        "paymentMethod": "BOLETO", "referenceId": "order-7", "livemode": False, "description": "", "metadata": {},
        "customer": customer_out("BOLETO"), "items": items_totalling(12345), "refundedAmount": 0,
        "paymentUrl": f"{settings.PUBLIC_BASE_URL}/pay/{page.group(1)}",
        "createdAt": "2025-11-21T01:30:15.123Z", "updatedAt": "2025-11-21T01:30:15.123Z", "paidAt": None,
        "failureCode": None, "failureMessage": None,
        "boleto": {
            "barcode": got["boleto"]["barcode"], "digitableLine": got["boleto"]["digitableLine"],
            "dueDate": "2025-11-23",  # São Paulo's today (2025-11-20) + 3, not UTC's
            "url": f"{settings.PUBLIC_BASE_URL}/pay/{page.group(1)}/boleto", "instructions": "",
            "pdfUrl": None, "pix": None, "paidAmount": None,  # the simulator's boleto: no bank PDF, no Pix code
        },
    }
    barcode, line_ = got["boleto"]["barcode"], got["boleto"]["digitableLine"]
    assert boleto.barcode_from_digitable_line(line_) == barcode
    assert boleto.digitable_line_from_barcode(barcode) == line_
    assert barcode[:4] == "0019"  # bank 001, currency 9
    assert barcode[5:9] == boleto.due_factor(date(2025, 11, 23))
    assert barcode[9:19] == "0000012345"
    assert boleto.nosso_numero_from_free_field(barcode[19:]) >= 1


def test_boleto_with_due_date_and_instructions(api, clock):
    got = create(api, "BOLETO", amount=500, boleto={"dueDate": "2025-12-01", "instructions": "Não receber após"})

    assert (got["boleto"]["dueDate"], got["boleto"]["instructions"]) == ("2025-12-01", "Não receber após")
    assert got["boleto"]["barcode"][5:9] == boleto.due_factor(date(2025, 12, 1))
    assert got["boleto"]["barcode"][9:19] == "0000000500"
    assert (got["fee"], got["netAmount"]) == (349, 151)


def test_boletos_get_distinct_nosso_numeros(api):
    first, second = create(api, "BOLETO"), create(api, "BOLETO")

    numbers = {boleto.nosso_numero_from_free_field(b["boleto"]["barcode"][19:]) for b in (first, second)}
    assert len(numbers) == 2


def test_credit_card_paid_whole_body_event_ledger_and_no_pan(api, merchant):
    body = payin_body("CREDIT_CARD", amount=10000, card={**CARD_IN, "installments": 3})

    response = api.post("/payin", body, format="json")

    assert response.status_code == 201
    got = response.json()
    assert re.fullmatch(CARD_TOKEN, got["card"]["token"])
    assert re.fullmatch(AUTHORIZATION_CODE, got["authorizationCode"])
    page = re.fullmatch(rf"{re.escape(settings.PUBLIC_BASE_URL)}/pay/({PUBLIC_TOKEN})", got["paymentUrl"])
    for name in ("createdAt", "updatedAt", "paidAt"):
        assert re.fullmatch(ISO_MS_Z, got[name])
    assert got == {
        "id": got["id"], "status": "PAID", "amount": 10000, "fee": 438, "netAmount": 9562, "currency": "BRL",
        "paymentMethod": "CREDIT_CARD", "referenceId": "order-1", "livemode": False, "description": "",
        "metadata": {}, "customer": CUSTOMER_OUT, "items": items_totalling(10000), "refundedAmount": 0,
        "paymentUrl": f"{settings.PUBLIC_BASE_URL}/pay/{page.group(1)}", "createdAt": got["createdAt"],
        "updatedAt": got["updatedAt"], "paidAt": got["paidAt"], "failureCode": None, "failureMessage": None,
        "card": {"brand": "visa", "bin": "411111", "last4": "1111", "holderName": "ANA SOUZA",
                 "expirationMonth": "12", "expirationYear": "2030", "installments": 3, "token": got["card"]["token"]},
        "authorizationCode": got["authorizationCode"],
    }
    # The PAN and the CVV went to the rail and nowhere else.
    stored = Payin.objects.get(pk=got["id"])
    token = CardToken.objects.get(pk=got["card"]["token"])
    for text in (response.content.decode(), json.dumps(stored.card), str(vars(token))):
        assert "4111111111111111" not in text and "111111111" not in text
    assert "cvv" not in json.dumps(stored.card).lower()
    [event] = events_of(api, got["id"])
    assert event == envelope(event, type="payin.paid", obj=got, previous_status=None)
    # Test mode settles cards at once: the net is available.
    assert balance(api) == {"available": 9562, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}
    assert statement(api) == [
        line("payin_fee", -438, 9562, object_id=got["id"], description="CREDIT_CARD charge"),
        line("payin", 10000, 10000, object_id=got["id"], description="CREDIT_CARD charge"),
    ]
    assert_ledger_balanced()


def test_per_merchant_fee_overrides(db, api_client_for):
    merchant = MerchantFactory(pix_fee_bps=0, card_fee_bps=250, card_fee_fixed=0, boleto_fee_fixed=199)
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=False))

    pix_charge = create(client, "PIX", amount=10000)
    card_charge = create(client, "CREDIT_CARD", amount=10000)
    boleto_charge = create(client, "BOLETO", amount=1000)

    assert (pix_charge["fee"], pix_charge["netAmount"]) == (0, 10000)
    assert (card_charge["fee"], card_charge["netAmount"]) == (250, 9750)
    assert (boleto_charge["fee"], boleto_charge["netAmount"]) == (199, 801)
    # A fee of 0 writes no statement line of 0.
    simulate(client, pix_charge["id"], "pay")
    assert statement(client)[0] == line("payin", 10000, 19750, object_id=pix_charge["id"], description="PIX charge")
    assert_ledger_balanced()


def test_a_changed_fee_applies_to_the_next_charge(api, merchant):
    before = create(api, "PIX", amount=10000)
    merchant.pix_fee_bps = 150
    merchant.save(update_fields=["pix_fee_bps"])
    authcache.invalidate_merchant(merchant.pk)

    after = create(api, "PIX", amount=10000)

    assert (before["fee"], after["fee"]) == (99, 150)
    assert get(api, before["id"])["fee"] == 99  # a charge keeps the fee it was created with


def test_a_fee_never_exceeds_the_amount(db, api_client_for):
    merchant = MerchantFactory(card_fee_fixed=500)
    client = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=False))

    got = create(client, "CREDIT_CARD", amount=100)

    assert (got["status"], got["fee"], got["netAmount"]) == ("PAID", 100, 0)
    assert balance(client)["available"] == 0
    assert_ledger_balanced()


# === 2. Every test card and its event ================================================================================
@pytest.mark.parametrize(("number", "brand", "cvv"), PAID_CARDS)
def test_paid_test_cards(api, number, brand, cvv):
    response = api.post("/payin", payin_body("CREDIT_CARD", amount=2000, card=card_with(number, cvv)), format="json")

    assert response.status_code == 201
    got = response.json()
    assert re.fullmatch(AUTHORIZATION_CODE, got["authorizationCode"])
    assert got == expected_charge(got, method="CREDIT_CARD", amount=2000, fee=119, status="PAID", paid=True,
                                  card=expected_card(got, number=number, brand=brand),
                                  authorizationCode=got["authorizationCode"])
    [event] = events_of(api, got["id"])
    assert event == envelope(event, type="payin.paid", obj=got, previous_status=None)
    assert number not in response.content.decode()
    assert balance(api)["available"] == 2000 - 119
    assert_ledger_balanced()


@pytest.mark.parametrize(("number", "code", "message"), FAILED_CARDS)
def test_failed_test_cards_are_201_failed_with_a_failure_code_and_event(api, number, code, message):
    response = api.post("/payin", payin_body("CREDIT_CARD", amount=2000, card=card_with(number)), format="json")

    assert response.status_code == 201
    got = response.json()
    assert got == expected_charge(got, method="CREDIT_CARD", amount=2000, fee=119, status="FAILED",
                                  failure=(code, message),
                                  card=expected_card(got, number=number, brand="visa", tokenized=False),
                                  authorizationCode=None)
    [event] = events_of(api, got["id"])
    assert event == envelope(event, type="payin.failed", obj=got, previous_status=None)
    assert get(api, got["id"]) == got
    # No money moved and the card was not kept.
    assert balance(api) == {"available": 0, "pending": 0, "held": 0, "currency": "BRL", "livemode": False}
    assert LedgerEntry.objects.count() == 0
    assert CardToken.objects.count() == 0


# === 3. Card tokens ==================================================================================================
def test_a_token_charges_the_same_card_again(api):
    first = create(api, "CREDIT_CARD", amount=3000, card=card_with("5555555555554444"))
    token = first["card"]["token"]

    response = api.post("/payin", payin_body("CREDIT_CARD", amount=4000, referenceId="order-2",
                                             card={"token": token, "installments": 2}), format="json")

    assert response.status_code == 201
    got = response.json()
    assert got["id"] != first["id"]
    assert got == expected_charge(got, method="CREDIT_CARD", amount=4000, fee=199, status="PAID", paid=True,
                                  reference_id="order-2",
                                  card={"brand": "mastercard", "bin": "555555", "last4": "4444",
                                        "holderName": "ANA SOUZA", "expirationMonth": "12", "expirationYear": "2030",
                                        "installments": 2, "token": token},
                                  authorizationCode=got["authorizationCode"])
    assert re.fullmatch(AUTHORIZATION_CODE, got["authorizationCode"])
    assert CardToken.objects.count() == 1
    assert balance(api)["available"] == (3000 - 159) + (4000 - 199)
    assert_ledger_balanced()


def test_a_declined_card_has_no_token(api):
    declined = create(api, "CREDIT_CARD", card=card_with("4000000000000002"))

    assert declined["card"]["token"] is None
    assert CardToken.objects.count() == 0


def test_an_unknown_token_is_invalid(api):
    response = api.post("/payin", payin_body("CREDIT_CARD", card={"token": "card_" + "x" * 24}), format="json")

    validation(response, [{"param": "card.token", "code": "invalid_token",
                           "message": "No card token of this account and mode has this value."}])


def test_another_merchants_token_is_invalid(api, other_api):
    token = create(other_api, "CREDIT_CARD")["card"]["token"]

    response = api.post("/payin", payin_body("CREDIT_CARD", card={"token": token}), format="json")

    validation(response, [{"param": "card.token", "code": "invalid_token",
                           "message": "No card token of this account and mode has this value."}])
    assert Payin.objects.count() == 1  # the other merchant's charge only


def test_a_live_token_is_invalid_in_test_mode_and_back(api, live_api):
    live_token = create(live_api, "CREDIT_CARD", card=card_with("4242424242424242"))["card"]["token"]
    test_token = create(api, "CREDIT_CARD")["card"]["token"]

    in_test = api.post("/payin", payin_body("CREDIT_CARD", card={"token": live_token}), format="json")
    in_live = live_api.post("/payin", payin_body("CREDIT_CARD", card={"token": test_token}), format="json")

    for response in (in_test, in_live):
        validation(response, [{"param": "card.token", "code": "invalid_token",
                               "message": "No card token of this account and mode has this value."}])


# === 4. GET /payin/{id} ==============================================================================================
@pytest.mark.parametrize("method", ["PIX", "BOLETO", "CREDIT_CARD"])
def test_get_returns_the_creation_body(api, method):
    created = create(api, method)

    assert get(api, created["id"]) == created


def test_get_after_payment_differs_only_in_status_paid_at_and_updated_at(api):
    created = create(api, "PIX")

    paid = simulate(api, created["id"], "pay")

    assert get(api, created["id"]) == paid
    assert paid == {**created, "status": "PAID", "paidAt": paid["paidAt"], "updatedAt": paid["updatedAt"]}
    assert re.fullmatch(ISO_MS_Z, paid["paidAt"])
    assert created["updatedAt"] <= paid["updatedAt"]


def test_get_unknown_malformed_and_foreign_ids_are_404(api, other_api, live_api):
    foreign = create(other_api, "PIX")["id"]
    live = create(live_api, "PIX")["id"]
    test = create(api, "PIX")["id"]

    not_found(api.get(f"/payin/{uuid.uuid4()}"))
    not_found(api.get("/payin/not-a-uuid"))
    not_found(api.get(f"/payin/{foreign}"))
    not_found(api.get(f"/payin/{live}"))  # same merchant, live mode, test key
    not_found(live_api.get(f"/payin/{test}"))
    assert get(live_api, live)["livemode"] is True


# === 5. GET /payin ===================================================================================================
def page_of(client, **params) -> dict:
    response = client.get("/payin", params)
    assert response.status_code == 200, response.content
    return response.json()


def ids_of(page: dict) -> list[str]:
    return [charge["id"] for charge in page["data"]]


def walk(client, limit: int, **params) -> list[list[str]]:
    """Every page of the list, following nextCursor."""
    pages, cursor = [], None
    while True:
        page = page_of(client, limit=limit, **params, **({"cursor": cursor} if cursor else {}))
        pages.append(ids_of(page))
        assert page["hasMore"] is (page["nextCursor"] is not None)
        if not page["hasMore"]:
            return pages
        cursor = page["nextCursor"]
        assert len(pages) < 100


def test_list_newest_first_with_whole_bodies(api):
    first = create(api, "PIX")
    second = create(api, "BOLETO")
    third = create(api, "CREDIT_CARD")

    assert page_of(api) == {"data": [third, second, first], "hasMore": False, "nextCursor": None}


def test_list_walks_45_charges_in_pages_of_10_without_duplicates_or_gaps(api):
    created = [create(api, "PIX", amount=100 + i)["id"] for i in range(45)]

    pages = walk(api, 10)

    assert [len(p) for p in pages] == [10, 10, 10, 10, 5]
    assert [i for p in pages for i in p] == created[::-1]


def test_list_page_boundaries(api):
    created = [create(api, "PIX", amount=100 + i)["id"] for i in range(15)][::-1]

    assert walk(api, 15) == [created]
    assert walk(api, 14) == [created[:14], created[14:]]
    assert walk(api, 5) == [created[:5], created[5:10], created[10:]]
    assert walk(api, 100) == [created]
    assert walk(api, 1) == [[payin_id] for payin_id in created]


def test_list_pages_through_charges_created_at_the_same_instant(api):
    created = [create(api, "PIX", amount=100 + i)["id"] for i in range(45)]
    instants = [NOW, NOW + timedelta(microseconds=1), NOW + timedelta(seconds=1)]
    for index, payin_id in enumerate(created):
        Payin.objects.filter(pk=payin_id).update(created_at=instants[index % 3])

    pages = walk(api, 10)

    expected = sorted(created, key=lambda i: (instants[created.index(i) % 3], uuid.UUID(i)), reverse=True)
    assert [i for p in pages for i in p] == expected


def test_list_default_limit_is_20(api):
    for i in range(21):
        create(api, "PIX", amount=100 + i)

    page = page_of(api)

    assert (len(page["data"]), page["hasMore"]) == (20, True)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", page["nextCursor"])


def test_list_filters(api):
    pix_a = create(api, "PIX", referenceId="order-A")
    boleto_a = create(api, "BOLETO", referenceId="order-A")
    card_b = create(api, "CREDIT_CARD", referenceId="order-B")
    declined_b = create(api, "CREDIT_CARD", referenceId="order-B", card=card_with("4000000000000002"))

    assert ids_of(page_of(api, status="PAID")) == [card_b["id"]]
    assert ids_of(page_of(api, status="FAILED")) == [declined_b["id"]]
    assert ids_of(page_of(api, status="PENDING")) == [boleto_a["id"], pix_a["id"]]
    assert ids_of(page_of(api, status="REFUNDED")) == []
    assert ids_of(page_of(api, paymentMethod="CREDIT_CARD")) == [declined_b["id"], card_b["id"]]
    assert ids_of(page_of(api, paymentMethod="BOLETO")) == [boleto_a["id"]]
    assert ids_of(page_of(api, referenceId="order-A")) == [boleto_a["id"], pix_a["id"]]
    assert ids_of(page_of(api, referenceId="order-C")) == []
    assert ids_of(page_of(api, referenceId="order-B", status="PAID", paymentMethod="CREDIT_CARD")) == [card_b["id"]]


def test_list_filters_by_creation_time_from_inclusive_to_exclusive(api):
    charges = [create(api, "PIX")["id"] for _ in range(3)]
    instants = [datetime(2026, 11, 20, 9, tzinfo=UTC), datetime(2026, 11, 20, 10, tzinfo=UTC),
                datetime(2026, 11, 20, 11, tzinfo=UTC)]
    for payin_id, instant in zip(charges, instants, strict=True):
        Payin.objects.filter(pk=payin_id).update(created_at=instant)
    one, two, three = charges

    assert ids_of(page_of(api, createdFrom="2026-11-20T10:00:00Z")) == [three, two]
    assert ids_of(page_of(api, createdFrom="2026-11-20T07:00:00-03:00")) == [three, two]
    assert ids_of(page_of(api, createdTo="2026-11-20T10:00:00.000Z")) == [one]
    assert ids_of(page_of(api, createdFrom="2026-11-20T09:00:00Z", createdTo="2026-11-20T11:00:00Z")) == [two, one]
    assert ids_of(page_of(api, createdFrom="2026-11-20T11:00:00.001Z")) == []


LIMIT_PROBLEM = {"param": "limit", "code": "invalid_limit", "message": "limit must be an integer from 1 to 100."}
CURSOR_PROBLEM = {"param": "cursor", "code": "invalid_cursor", "message": "The cursor is not one this API returned."}
STATUS_PROBLEM = {"param": "status", "code": "invalid_choice",
                  "message": "status must be one of PENDING, PROCESSING, PAID, FAILED, EXPIRED, CANCELED, "
                             "PARTIALLY_REFUNDED, REFUNDED, CHARGEBACK."}
METHOD_PROBLEM = {"param": "paymentMethod", "code": "invalid_choice",
                  "message": "paymentMethod must be one of PIX, CREDIT_CARD, BOLETO."}


def _cursor(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize(("params", "details"), [
    ({"limit": "0"}, [LIMIT_PROBLEM]),
    ({"limit": "101"}, [LIMIT_PROBLEM]),
    ({"limit": "x"}, [LIMIT_PROBLEM]),
    ({"limit": "1.5"}, [LIMIT_PROBLEM]),
    ({"limit": "-1"}, [LIMIT_PROBLEM]),
    ({"cursor": "garbage!"}, [CURSOR_PROBLEM]),
    ({"cursor": _cursor(["2026-11-20T10:00:00+00:00", "not-a-uuid"])}, [CURSOR_PROBLEM]),
    ({"cursor": _cursor(["2026-11-20T10:00:00", str(uuid.uuid4())])}, [CURSOR_PROBLEM]),  # naive time
    ({"cursor": _cursor({"a": 1})}, [CURSOR_PROBLEM]),
    ({"status": "paid"}, [STATUS_PROBLEM]),
    ({"paymentMethod": "pix"}, [METHOD_PROBLEM]),
    ({"status": "NOPE", "paymentMethod": "CASH"}, [STATUS_PROBLEM, METHOD_PROBLEM]),
    ({"createdFrom": "yesterday"}, [{"param": "createdFrom", "code": "invalid_datetime",
                                     "message": "createdFrom must be an ISO 8601 timestamp with a time zone, e.g. "
                                                "2026-11-20T00:00:00Z."}]),
    ({"createdTo": "2026-11-20T10:00:00"}, [{"param": "createdTo", "code": "invalid_datetime",
                                              "message": "createdTo must be an ISO 8601 timestamp with a time zone, "
                                                         "e.g. 2026-11-20T00:00:00Z."}]),
])
def test_list_refuses_bad_parameters(api, params, details):
    create(api, "PIX")

    validation(api.get("/payin", params), details)


def test_list_refuses_unknown_query_parameters(api):
    response = api.get("/payin", {"sort": "amount", "state": "PAID"})

    error(response, 400, type="invalid_request_error", code="unknown_field", message="The request has unknown fields",
          details=[{"param": "sort", "code": "unknown_field", "message": "Unknown query parameter 'sort'."},
                   {"param": "state", "code": "unknown_field", "message": "Unknown query parameter 'state'."}])


def test_list_shows_only_the_callers_merchant_and_mode(api, other_api, live_api):
    mine = create(api, "PIX", referenceId="shared")
    create(other_api, "PIX", referenceId="shared")
    live = create(live_api, "PIX", referenceId="shared")

    assert ids_of(page_of(api)) == [mine["id"]]
    assert ids_of(page_of(api, referenceId="shared")) == [mine["id"]]
    assert ids_of(page_of(live_api)) == [live["id"]]
    assert len(ids_of(page_of(other_api))) == 1


# === 11. Idempotency =================================================================================================
def test_same_idempotency_key_and_body_replays_the_response(api):
    body = payin_body("PIX", amount=7000)

    first = api.post("/payin", body, format="json", HTTP_IDEMPOTENCY_KEY="order-1-try")
    # The same JSON document, its keys in another order.
    again = api.post("/payin", json.dumps(dict(reversed(list(body.items())))), content_type="application/json",
                     HTTP_IDEMPOTENCY_KEY="order-1-try")

    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Payin.objects.count() == 1
    assert Event.objects.count() == 1


def test_an_idempotent_card_charge_is_charged_and_credited_once(api):
    body = payin_body("CREDIT_CARD", amount=7000)

    first = api.post("/payin", body, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    again = api.post("/payin", body, format="json", HTTP_IDEMPOTENCY_KEY="k1")

    assert again.json() == first.json()
    assert (Payin.objects.count(), Event.objects.count(), LedgerTransaction.objects.count()) == (1, 1, 1)
    assert CardToken.objects.count() == 1
    assert balance(api)["available"] == 7000 - 318
    assert_ledger_balanced()


def test_same_idempotency_key_with_another_body_is_422(api):
    api.post("/payin", payin_body("PIX", amount=7000), format="json", HTTP_IDEMPOTENCY_KEY="k1")

    response = api.post("/payin", payin_body("PIX", amount=7001), format="json", HTTP_IDEMPOTENCY_KEY="k1")

    error(response, 422, type="idempotency_error", code="idempotency_key_reused", param="Idempotency-Key",
          message="This Idempotency-Key was used with a different request; use a new key for a new request")
    assert Payin.objects.count() == 1


def test_a_validation_error_is_not_stored_under_the_idempotency_key(api):
    refused = api.post("/payin", payin_body("PIX", amount=99), format="json", HTTP_IDEMPOTENCY_KEY="k1")

    accepted = api.post("/payin", payin_body("PIX", amount=100), format="json", HTTP_IDEMPOTENCY_KEY="k1")

    assert refused.status_code == 400
    assert accepted.status_code == 201
    assert "Idempotent-Replayed" not in accepted
    assert Payin.objects.count() == 1


def test_idempotency_keys_are_scoped_to_the_merchant_and_mode(api, other_api, live_api):
    body = payin_body("PIX")

    responses = [client.post("/payin", body, format="json", HTTP_IDEMPOTENCY_KEY="same")
                 for client in (api, other_api, live_api)]

    assert [r.status_code for r in responses] == [201, 201, 201]
    assert len({r.json()["id"] for r in responses}) == 3


# === 12. A refused request leaves nothing behind =====================================================================
def test_an_invalid_body_creates_nothing(api):
    body = payin_body("PIX", amount="100", customer={**CUSTOMER_IN, "document": "11111111111"})

    response = api.post("/payin", body, format="json", HTTP_IDEMPOTENCY_KEY="k1")

    validation(response, [
        {"param": "amount", "code": "invalid", "message": "Must be a JSON integer."},
        {"param": "customer.document", "code": "invalid_document",
         "message": "Must not be one digit repeated: no CPF is."},
    ])
    assert Payin.objects.count() == 0
    assert Event.objects.count() == 0
    assert LedgerEntry.objects.count() == 0
    assert IdempotencyKey.objects.count() == 0


def test_a_refused_card_number_creates_nothing(api):
    response = api.post("/payin", payin_body("CREDIT_CARD", card=card_with("4242424242424242")), format="json")

    error(response, 400, type="invalid_request_error", code="live_card_in_test_mode",
          message="Test mode accepts only test card numbers", param="card.number",
          details=[{"param": "card.number", "code": "live_card_in_test_mode",
                    "message": "Test mode accepts only the test card numbers."}])
    assert "4242424242424242" not in response.content.decode()
    assert (Payin.objects.count(), Event.objects.count(), LedgerEntry.objects.count()) == (0, 0, 0)
    assert CardToken.objects.count() == 0
