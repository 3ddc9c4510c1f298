"""The fake Charges API speaks Efí's protocol, checked over HTTPS with plain `requests` (no code of ours in between):
the envelope and error bodies, Basic then Bearer, a payment_token used once, a charge paid once, refunds bounded by
what is left, the bolix's line a valid FEBRABAN line, and a notification token whose history grows entry by entry."""

from __future__ import annotations

import base64

import pytest
import requests

from payments.formats import boleto
from tests.payments.rails.efi_charges_fake import FakeEfiCharges

CUSTOMER = {"name": "Ana Souza", "cpf": "52998224725", "email": "ana@example.com"}
ADDRESS = {"street": "Av. Paulista", "number": "1000", "neighborhood": "Bela Vista", "zipcode": "01310100",
           "city": "São Paulo", "state": "SP"}


@pytest.fixture
def fake(certificates):
    running = FakeEfiCharges(certificates).start()
    yield running
    running.stop()
    assert running.errors == []


@pytest.fixture
def efi(fake):
    session = requests.Session()
    session.trust_env = False  # REQUESTS_CA_BUNDLE from the environment would replace the fake's CA
    session.verify = str(fake.certificates.ca_file)
    basic = base64.b64encode(f"{fake.client_id}:{fake.client_secret}".encode()).decode()
    token = session.post(f"{fake.url}/authorize", json={"grant_type": "client_credentials"},
                         headers={"Authorization": f"Basic {basic}"}, timeout=5).json()["access_token"]
    session.headers["Authorization"] = f"Bearer {token}"

    def call(method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        response = session.request(method, fake.url + path, json=body, timeout=5)
        return response.status_code, response.json()

    return call


def open_charge(efi, total: int = 5000, url: str = "") -> int:
    status, body = efi("POST", "/charge", {"items": [{"name": "x", "value": total, "amount": 1}],
                                           "metadata": {"custom_id": "order-1", "notification_url": url}})
    assert status == 200 and body["code"] == 200
    return body["data"]["charge_id"]


def pay_body(token: str, installments: int = 1) -> dict:
    return {"payment": {"credit_card": {"customer": CUSTOMER, "installments": installments,
                                        "billing_address": ADDRESS, "payment_token": token}}}


def test_authorize_needs_basic_credentials_and_calls_need_the_bearer(fake):
    session = requests.Session()
    session.trust_env = False
    session.verify = str(fake.certificates.ca_file)
    wrong = session.post(f"{fake.url}/authorize", json={"grant_type": "client_credentials"}, timeout=5,
                         auth=("client-id", "nope"))
    anonymous = session.get(f"{fake.url}/charge/1", timeout=5)

    assert (wrong.status_code, wrong.json()) == (401, {"code": 401, "error": "invalid_client",
                                                       "error_description": "Credenciais inválidas."})
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "invalid_token"


def test_a_card_charge_is_paid_once_with_a_token_used_once(fake, efi):
    token = fake.card_token(outcome="paid")
    first, second = open_charge(efi), open_charge(efi)

    paid = efi("POST", f"/charge/{first}/pay", pay_body(token, installments=4))
    again = efi("POST", f"/charge/{first}/pay", pay_body(fake.card_token()))
    reused = efi("POST", f"/charge/{second}/pay", pay_body(token))

    assert paid == (200, {"code": 200, "data": {"charge_id": first, "total": 5000, "status": "paid",
                                                "installments": 4, "installment_value": 1350,
                                                "payment": "credit_card"}})
    assert again[0] == 400 and again[1]["error"] == "charge_status_invalid"
    assert reused[0] == 400 and reused[1]["error"] == "invalid_payment_token"
    status, detail = efi("GET", f"/charge/{first}")
    assert (status, detail["data"]["status"], detail["data"]["payment"]["credit_card"]["mask"]) == (
        200, "paid", "XXXXXXXXXXXX1111")


def test_a_refusal_says_why_and_whether_to_retry(fake, efi):
    charge = open_charge(efi)

    status, body = efi("POST", f"/charge/{charge}/pay",
                       pay_body(fake.card_token(outcome="unpaid", reason="Cartão bloqueado.", retry=True)))

    assert status == 200
    assert (body["data"]["status"], body["data"]["refusal"]) == ("unpaid", {"reason": "Cartão bloqueado.",
                                                                           "retry": True})


def test_validation_errors_name_the_property(fake, efi):
    charge = open_charge(efi)
    body = pay_body(fake.card_token())
    body["payment"]["credit_card"]["billing_address"] = {**ADDRESS, "zipcode": "123"}

    assert efi("POST", f"/charge/{charge}/pay", body) == (400, {
        "code": 3500034, "error": "validation_error",
        "error_description": {"property": "/payment/credit_card/billing_address/zipcode",
                              "message": "O CEP deve ter 8 dígitos."}})
    assert efi("POST", "/charge", {"items": [{"name": "x", "value": 1.5, "amount": 1}]})[0] == 400


def test_refunds_are_bounded_by_what_is_left(fake, efi):
    charge = open_charge(efi)
    efi("POST", f"/charge/{charge}/pay", pay_body(fake.card_token()))

    assert efi("POST", f"/charge/card/{charge}/refund", {"amount": 3000}) == (200, {"code": 200})
    assert efi("POST", f"/charge/card/{charge}/refund", {"amount": 2001})[0] == 400
    assert efi("POST", f"/charge/card/{charge}/refund", {}) == (200, {"code": 200})
    assert efi("GET", f"/charge/{charge}")[1]["data"]["status"] == "refunded"
    assert [(e["status"], e.get("value")) for e in fake.history(charge)][-2:] == [
        ({"current": "refunded", "previous": "paid"}, 3000), ({"current": "refunded", "previous": "paid"}, 2000)]


def test_a_bolix_has_a_valid_line_a_pix_code_and_cannot_be_canceled_once_paid(fake, efi):
    status, body = efi("POST", "/charge/one-step", {
        "items": [{"name": "x", "value": 10_000, "amount": 1}],
        "payment": {"banking_billet": {"customer": CUSTOMER, "expire_at": fake.today().isoformat(),
                                       "configurations": {"fine": 200, "days_to_write_off": 30}}}})
    data = body["data"]
    line = "".join(ch for ch in data["barcode"] if ch.isdigit())

    assert status == 200 and data["status"] == "waiting"
    assert boleto.barcode_from_digitable_line(line)[:3] == "364"
    assert data["pix"]["qrcode"].startswith("000201") and data["pdf"]["charge"].startswith("https://")
    fake.advance_days(2)
    fake.pay_billet(data["charge_id"], by="barcode")
    assert fake.history(data["charge_id"])[-1]["value"] == 10_200  # the fine of a late payment
    assert efi("PUT", f"/charge/{data['charge_id']}/cancel")[0] == 400


def test_a_notification_token_is_one_per_charge_and_its_history_grows(fake, efi):
    posted: list[tuple[str, str]] = []
    fake.notification_transport = lambda url, token: posted.append((url, token)) or 200
    charge = open_charge(efi, url="https://shop.example.com/notify")

    efi("POST", f"/charge/{charge}/pay", pay_body(fake.card_token(outcome="approved")))
    fake.approve(charge)

    tokens = {token for _, token in posted}
    assert len(tokens) == 1 and {url for url, _ in posted} == {"https://shop.example.com/notify"}
    status, body = efi("GET", f"/notification/{tokens.pop()}")
    assert status == 200
    assert [(e["status"]["previous"], e["status"]["current"]) for e in body["data"]] == [
        ("new", "waiting"), ("waiting", "approved"), ("approved", "paid")]
    assert [e["identifiers"] for e in body["data"]] == [{"charge_id": charge}] * 3
    assert body["data"][0]["id"] < body["data"][1]["id"] < body["data"][2]["id"]
    assert efi("GET", "/notification/not-a-token")[0] == 404
