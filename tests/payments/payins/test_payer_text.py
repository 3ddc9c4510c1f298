"""Text a payer reads refuses invisible, direction-changing and control characters, with the field named (issue 37,
item 11): one rule (core/formats/text.py) for the API's charge fields, the dashboard's sign-up and KYC forms, and
the admin's merchant form."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from accounts.models import KycStatus, KycSubmission, Merchant
from core.formats.text import HIDDEN
from payments.models import Payin
from tests.factories import MerchantFactory, UserFactory
from tests.payments.payins.test_payin_api import payin_body

pytestmark = pytest.mark.django_db

HIDDEN_CHARACTERS = {
    "right-to-left override": "\u202e", "left-to-right embedding": "\u202a", "first strong isolate": "\u2068",
    "right-to-left isolate": "\u2067", "zero-width space": "\u200b", "right-to-left mark": "\u200f",
    "zero-width no-break space": "\ufeff", "C1 next line": "\u0085", "C1 control": "\u009b", "C0 bell": "\u0007",
    "C0 escape": "\u001b", "delete": "\u007f", "tab": "\t", "newline": "\n",
}
SPOOFED = "Pedido \u202e1234 gpj.exe"  # shown to a payer as "Pedido exe.jpg 4321"


def message_for(character: str, position: int) -> str:
    return (f"Must not contain invisible, direction-changing or control characters (U+{ord(character):04X} at "
            f"character {position}): payers would read something else than what was sent.")


def at(body: dict, path: str, value: str) -> dict:
    *parents, last = path.split(".")
    target = body
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[last] = value
    return body


PAYER_FIELDS = [  # (method, dotted path, a value that is fine there)
    ("PIX", "description", "Pedido 1234"),
    ("PIX", "items.0.title", "Caneca"),
    ("PIX", "items.0.description", "Azul"),
    ("PIX", "customer.name", "Ana Souza"),
    ("BOLETO", "customer.address.street", "Av. Paulista"),
    ("BOLETO", "customer.address.number", "1000"),
    ("BOLETO", "customer.address.complement", "Apto 5"),
    ("BOLETO", "customer.address.city", "São Paulo"),
    ("BOLETO", "boleto.instructions", "Não receber após o vencimento"),
]


def body_with(method: str, path: str, value: str) -> dict:
    body = payin_body(method, items=[{"title": "Caneca", "quantity": 2, "unitPrice": 2500, "description": "Azul"}])
    if path.startswith("boleto."):
        body["boleto"] = {}
    return at(body, path, value)


@pytest.mark.parametrize(("method", "path", "fine"), PAYER_FIELDS, ids=[p for _m, p, _f in PAYER_FIELDS])
@pytest.mark.parametrize("name", HIDDEN_CHARACTERS)
def test_each_field_a_payer_reads_refuses_each_hidden_character_naming_the_field(api, method, path, fine, name):
    character = HIDDEN_CHARACTERS[name]
    value = fine[:2] + character + fine[2:]

    response = api.post("/payin", body_with(method, path, value), format="json")

    assert response.status_code == 400
    assert response.json() == {"error": {
        "type": "invalid_request_error", "code": "invisible_characters_not_allowed",
        "message": "The request has text with invisible or control characters", "param": path,
        "details": [{"param": path, "code": "invisible_characters_not_allowed", "message": message_for(character, 3)}],
        "requestId": response["X-Request-Id"]}}
    assert Payin.objects.count() == 0


def test_the_spoofed_order_of_the_issue_is_refused_with_its_position(api):
    response = api.post("/payin", payin_body("PIX", description=SPOOFED), format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"] == [
        {"param": "description", "code": "invisible_characters_not_allowed", "message": message_for("\u202e", 8)}]


def test_with_other_problems_every_one_is_reported(api):
    body = payin_body("PIX", description="x\u200by", referenceId="has space")
    body["customer"]["name"] = "Ana\u2066 Souza"

    response = api.post("/payin", body, format="json")

    error = response.json()["error"]
    assert (response.status_code, error["code"], error["param"]) == (400, "validation_error", None)
    assert [(d["param"], d["code"]) for d in error["details"]] == [
        ("referenceId", "invalid_reference_id"), ("customer.name", "invisible_characters_not_allowed"),
        ("description", "invisible_characters_not_allowed")]


@pytest.mark.parametrize("text", ["Café com pão: ação, ônibus, 日本, שלום, مرحبا", "Camiseta 😀 tamanho M",
                                  "preço\u00a0R$ 10", "Pedido nº 1234 — entrega"])
def test_ordinary_text_of_any_script_is_accepted_as_sent(api, text):
    body = payin_body("PIX", description=text)
    body["items"][0]["title"] = text
    body["customer"]["name"] = text

    response = api.post("/payin", body, format="json")

    assert response.status_code == 201, response.content
    got = response.json()
    assert (got["description"], got["items"][0]["title"], got["customer"]["name"]) == (text, text, text)


def test_the_schema_says_so_for_each_field(api):
    schema = Client().get("/openapi.json").json()
    components = schema["components"]["schemas"]
    patterns = [components[c]["properties"][f]["pattern"] for c, f in (
        ("ItemRequest", "title"), ("CustomerRequest", "name"), ("AddressRequest", "city"))]
    patterns += [variant["pattern"] for variant in components["PixPayinRequest"]["properties"]["description"]["oneOf"]
                 if "pattern" in variant]
    assert len(patterns) == 4

    for pattern in patterns:
        assert re.search(pattern, "Pedido 1234 ação")
        assert not re.search(pattern, SPOOFED)
        assert not re.search(pattern, "a\u0085b")
        assert not re.search(pattern, "a\u200bb")


# --- The merchant's names: the dashboard's forms and the admin's -------------------------------------------------
def test_signup_refuses_a_business_name_with_hidden_characters():
    response = Client(HTTP_ACCEPT_LANGUAGE="en").post("/dashboard/signup/", {
        "name": "Loja \u202eanA", "email": "ana@example.com", "password": "a-long-passphrase-1",
        "password_confirm": "a-long-passphrase-1"})

    assert response.status_code == 400
    assert response.context["form"].errors == {"name": [message_for("\u202e", 6)]}
    assert not Merchant.objects.exists()


def test_kyc_refuses_legal_and_trading_names_with_hidden_characters():
    merchant = MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(merchant.owner)

    response = client.post("/dashboard/kyc/", {
        "legal_name": "Loja\u200b Exemplo LTDA", "trading_name": "Loja \u2066Exemplo", "document": "529.982.247-25",
        "street": "Av. Paulista", "number": "1000", "city": "São Paulo", "state": "SP", "zip_code": "01310-100",
        "phone": "+55 11 98765-4321"})

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert (errors["legal_name"], errors["trading_name"]) == ([message_for("\u200b", 5)], [message_for("\u2066", 6)])
    assert not KycSubmission.objects.filter(merchant=merchant).exists()


def test_the_admin_refuses_a_merchant_name_with_hidden_characters():
    staff = UserFactory(is_staff=True, is_superuser=True)
    merchant = MerchantFactory(name="Loja da Ana")
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(staff)
    page = client.get(f"/admin/accounts/merchant/{merchant.pk}/change/")
    form = page.context["adminform"].form
    data = {name: ("" if value is None else value) for name, value in form.initial.items()
            if name in form.fields and not form.fields[name].disabled}

    response = client.post(f"/admin/accounts/merchant/{merchant.pk}/change/", {**data, "name": "Loja\u202e da Ana"})

    assert response.status_code == 200  # the admin's form again, with the error beside the field
    assert response.context["adminform"].form.errors == {"name": [message_for("\u202e", 5)]}
    merchant.refresh_from_db()
    assert merchant.name == "Loja da Ana"


def test_the_rule_is_the_one_of_the_issue():
    listed = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0x200B, 0x2010), 0xFEFF, *range(0x20),
              *range(0x80, 0xA0)]

    assert all(HIDDEN.fullmatch(chr(code)) for code in listed)
    assert not [c for c in "aZ09 .,;:!?-_()/@#%&*+=çãõéíóúâêôàüÁÇ€£¥\u00a0\u3000日本😀" if HIDDEN.fullmatch(c)]
