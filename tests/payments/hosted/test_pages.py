"""The public pages of a charge: hosted payment page, status feed, printable boleto, Pix QR image, and the template
filters they format money and dates with."""

import io
import re
import secrets
import struct
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from html import escape

import pytest
import segno
from django.conf import settings
from django.contrib.staticfiles import finders
from django.utils import timezone

from accounts.selectors import merchant_display_name
from payments.formats import boleto, pix
from payments.hosted import links
from payments.hosted import views as hosted
from payments.models import Payin, PayinStatus, PaymentMethod
from payments.rails.simulator import SANDBOX_PIX_KEY
from payments.templatetags.payments_format import br_document, brl, cep, sp_date, sp_datetime, sp_time
from tests.payments.formats.test_itf import itf_decode, svg_modules

# The pages are looked at, never paid through: charges are written in the status a page needs, without the
# ledger movement a real payment makes, so the after-test ledger check does not apply here.
pytestmark = pytest.mark.ledger_unchecked

CUSTOMER = {
    "name": "Maria da Silva",
    "document": "12345678909",
    "email": "maria.secret@example.com",
    "phone": "11987654321",
    "address": {"street": "Avenida Paulista", "number": "1000", "complement": "Apto 12", "zipCode": "01310100",
                "city": "São Paulo", "state": "SP"},
}
FAR_FUTURE = datetime(2099, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)  # 00:04 on 02/01/2099 in Sao Paulo (UTC-3)


def make_payin(merchant, method: str, **fields) -> Payin:
    """A charge as POST /payin would store it, with a real BR Code or a real boleto."""
    amount = fields.pop("amount", 123456)
    values = {
        "merchant": merchant, "livemode": False, "payment_method": method, "amount": amount, "fee": 100,
        "reference_id": "order-secret-ref", "description": "Pedido 42: camiseta", "customer": CUSTOMER,
        "items": [{"title": "Camiseta", "quantity": 1, "unitPrice": amount}], "payer_ip": "203.0.113.9",
        "is_physical_product": False, "public_token": secrets.token_urlsafe(32),
    }
    if method == PaymentMethod.PIX:
        txid = pix.txid_generate()
        values.update(pix_txid=txid, pix_expires_at=FAR_FUTURE, pix_payload=pix.build(
            pix_key=SANDBOX_PIX_KEY, amount_cents=amount, merchant_name=merchant_display_name(merchant),
            merchant_city="SAO PAULO", txid=txid))
    elif method == PaymentMethod.BOLETO:
        due = date(2099, 1, 2)
        code = boleto.barcode(bank_code=settings.BOLETO_BANK_CODE, due_date=due, amount_cents=amount,
                              free_field=boleto.free_field(nosso_numero=4242))
        values.update(boleto_nosso_numero=4242, boleto_barcode=code, boleto_due_date=due,
                      boleto_digitable_line=boleto.digitable_line_from_barcode(code),
                      boleto_instructions="Não aceitar pagamento em cheque.")
    elif method == PaymentMethod.CREDIT_CARD:
        values.update(status=PayinStatus.PAID, paid_at=timezone.now(), card={
            "brand": "mastercard", "bin": "555555", "last4": "4444", "holderName": "MARIA DA SILVA",
            "expirationMonth": "12", "expirationYear": "2030", "installments": 3, "token": "card_tok"})
    values.update(fields)
    return Payin.objects.create(**values)


def html_of(response) -> str:
    return response.content.decode()


def svg_in(html: str) -> str:
    match = re.search(r"<svg\b.*?</svg>", html, re.S)
    assert match, "no inline SVG"
    return match.group(0)


# --- URL helpers -----------------------------------------------------------------------------------------------------
def test_url_helpers(merchant, settings):
    settings.PUBLIC_BASE_URL = "https://pay.example.com"
    payin = make_payin(merchant, PaymentMethod.PIX)

    assert links.payment_url(payin) == f"https://pay.example.com/pay/{payin.public_token}"
    assert links.boleto_url(payin) == f"https://pay.example.com/pay/{payin.public_token}/boleto"
    assert links.qrcode_image_url(payin) == (
        f"https://pay.example.com/payin/{payin.id}/qrcode.png?token={payin.public_token}")


# --- Hosted payment page: PIX ----------------------------------------------------------------------------------------
def test_pix_page_shows_what_the_payer_needs(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)

    response = client.get(f"/pay/{payin.public_token}")

    html = html_of(response)
    assert response.status_code == 200
    assert "R$ 1.234,56" in html
    assert escape(merchant_display_name(merchant)) in html
    assert "Pedido 42: camiseta" in html
    assert f'readonly rows="4" spellcheck="false" autocomplete="off">{escape(payin.pix_payload)}</textarea>' in html
    assert f'src="{escape(links.qrcode_image_url(payin))}"' in html
    assert 'alt="QR Code Pix de R$ 1.234,56' in html
    assert 'data-copy="pix-code"' in html and "Copiar código" in html
    assert 'data-expires-at="2099-01-02T03:04:05.678Z"' in html
    assert "Expira às 00:04 de 02/01/2099 (horário de Brasília)." in html
    assert "Aguardando pagamento" in html
    assert f'data-status-url="/pay/{payin.public_token}/status"' in html
    assert 'data-poll-ms="3000"' in html


def test_pix_page_leaks_nothing_beyond_the_payer_needs(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    for secret in ("maria.secret@example.com", "12345678909", "Maria da Silva", "order-secret-ref",
                   str(merchant.id) + '"', "11987654321"):
        assert secret not in html


def test_merchant_text_is_escaped(client, merchant):
    merchant.name = 'Loja <script>alert("x")</script>'
    merchant.save()
    payin = make_payin(merchant, PaymentMethod.BOLETO, description="<b>bold</b>")

    for path in (f"/pay/{payin.public_token}", f"/pay/{payin.public_token}/boleto"):
        html = html_of(client.get(path))
        assert "<script>alert" not in html and "<b>bold</b>" not in html
        assert "&lt;b&gt;bold&lt;/b&gt;" in html


def test_public_pages_carry_privacy_and_security_headers(client, merchant):
    payin = make_payin(merchant, PaymentMethod.BOLETO)

    for path in (f"/pay/{payin.public_token}", f"/pay/{payin.public_token}/boleto",
                 f"/pay/{payin.public_token}/status"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response["X-Robots-Tag"] == "noindex"
        assert response["Referrer-Policy"] == "no-referrer"
        assert response["Cache-Control"] == "no-store"
    page = client.get(f"/pay/{payin.public_token}")
    assert "script-src 'self'" in page["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in page["Content-Security-Policy"]


def test_pages_are_read_only(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)

    assert client.post(f"/pay/{payin.public_token}").status_code == 405


@pytest.mark.parametrize("token", ["nope", "x" * 44, "a" * 43])
def test_unknown_token_is_404(client, merchant, token):
    make_payin(merchant, PaymentMethod.PIX)

    assert client.get(f"/pay/{token}").status_code == 404
    assert client.get(f"/pay/{token}/status").status_code == 404
    assert client.get(f"/pay/{token}/boleto").status_code == 404


def test_paid_pix_shows_paid_and_no_qr(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX, status=PayinStatus.PAID, paid_at=FAR_FUTURE)

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    assert '<span data-status-label>Pago</span>' in html
    assert "Pago em 02/01/2099 00:04 (horário de Brasília)." in html
    assert "status-paid" in html
    assert "qrcode.png" not in html
    assert payin.pix_payload not in html
    assert "data-status-url" not in html  # a final status is not polled


def test_pending_pix_past_its_expiry_is_shown_expired(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX, pix_expires_at=timezone.now() - timedelta(seconds=1))

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    assert '<span data-status-label>Expirado</span>' in html
    assert "qrcode.png" not in html
    assert "data-status-url" in html  # a Pix sent just in time may still be confirmed


@pytest.mark.parametrize(("status", "words"), [
    (PayinStatus.PAID, "Pago"),
    (PayinStatus.EXPIRED, "Expirado"),
    (PayinStatus.CANCELED, "Cancelado"),
    (PayinStatus.FAILED, "Falhou"),
    (PayinStatus.REFUNDED, "Estornado"),
    (PayinStatus.PARTIALLY_REFUNDED, "Estornado parcialmente"),
    (PayinStatus.CHARGEBACK, "Contestado"),
])
def test_finished_charge_shows_its_final_status_in_words(client, merchant, status, words):
    payin = make_payin(merchant, PaymentMethod.PIX, status=status)

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    assert f"<span data-status-label>{words}</span>" in html
    assert "qrcode.png" not in html


def test_status_texts_are_handed_to_the_script(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    assert '<script id="status-texts" type="application/json">' in html
    assert '"PARTIALLY_REFUNDED": {"label": "Estornado parcialmente"' in html


# --- Hosted payment page: BOLETO and CREDIT_CARD ---------------------------------------------------------------------
def test_boleto_payment_page_summarises_and_links_the_printable_boleto(client, merchant):
    payin = make_payin(merchant, PaymentMethod.BOLETO)

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    assert boleto.format_digitable_line(payin.boleto_digitable_line) in html
    assert f'data-copy-value="{payin.boleto_digitable_line}"' in html
    assert f'href="/pay/{payin.public_token}/boleto"' in html
    assert "02/01/2099" in html
    assert "Aguardando pagamento" in html
    assert 'data-poll-ms="30000"' in html


def test_card_page_shows_brand_and_last4(client, merchant):
    payin = make_payin(merchant, PaymentMethod.CREDIT_CARD)

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    assert "R$ 1.234,56" in html
    assert "Mastercard" in html and "4444" in html and "••••" in html
    assert "<dt>Parcelas</dt><dd>3</dd>" in html
    assert "<span data-status-label>Pago</span>" in html
    assert "555555" not in html


def test_pending_card_says_processing(client, merchant):
    payin = make_payin(merchant, PaymentMethod.CREDIT_CARD, status=PayinStatus.PENDING, paid_at=None)

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    assert "<span data-status-label>Processando</span>" in html
    assert "data-status-url" in html


# --- Status feed -----------------------------------------------------------------------------------------------------
def test_status_json_pending_and_paid(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)

    pending = client.get(f"/pay/{payin.public_token}/status")
    Payin.objects.filter(pk=payin.pk).update(status=PayinStatus.PAID,
                                             paid_at=datetime(2026, 11, 20, 21, 39, 0, 123456, tzinfo=UTC))
    paid = client.get(f"/pay/{payin.public_token}/status")

    assert pending.status_code == 200
    assert pending["Content-Type"] == "application/json"
    assert pending["Cache-Control"] == "no-store"
    assert pending.json() == {"status": "PENDING", "paidAt": None}
    assert paid.json() == {"status": "PAID", "paidAt": "2026-11-20T21:39:00.123Z"}


# --- QR image --------------------------------------------------------------------------------------------------------
def test_qrcode_png_is_the_payload_as_a_normal_qr(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)
    expected = segno.make(payin.pix_payload, micro=False, error="m", boost_error=False)
    buffer = io.BytesIO()
    expected.save(buffer, kind="png", scale=8, border=4)

    response = client.get(f"/payin/{payin.id}/qrcode.png", {"token": payin.public_token})

    body = response.content
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["Cache-Control"].startswith("public, max-age=")
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", body[16:24])  # IHDR
    modules = expected.symbol_size(scale=1, border=4)[0]
    assert expected.designator.endswith("-M") and not expected.is_micro
    assert width == height == modules * 8
    assert body == buffer.getvalue()


@pytest.mark.parametrize("case", ["wrong token", "no token", "other id", "not pix", "other charge's token"])
def test_qrcode_png_404_unless_id_and_token_match_a_pix_charge(client, merchant, case):
    payin = make_payin(merchant, PaymentMethod.PIX)
    other = make_payin(merchant, PaymentMethod.PIX)
    boleto_payin = make_payin(merchant, PaymentMethod.BOLETO)
    path, query = {
        "wrong token": (payin.id, {"token": payin.public_token[:-1] + "x"}),
        "no token": (payin.id, {}),
        "other id": (uuid.uuid4(), {"token": payin.public_token}),
        "not pix": (boleto_payin.id, {"token": boleto_payin.public_token}),
        "other charge's token": (payin.id, {"token": other.public_token}),
    }[case]

    response = client.get(f"/payin/{path}/qrcode.png", query)

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"  # the API's error body: this path is under the API


def test_qrcode_non_ascii_token_is_404_not_500(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)

    assert client.get(f"/payin/{payin.id}/qrcode.png", {"token": "é" * 43}).status_code == 404


# --- Printable boleto ------------------------------------------------------------------------------------------------
def test_boleto_page_is_a_complete_boleto_with_a_barcode_that_decodes(client, merchant):
    payin = make_payin(merchant, PaymentMethod.BOLETO)

    response = client.get(f"/pay/{payin.public_token}/boleto")

    html = html_of(response)
    assert response.status_code == 200
    assert '<span class="bank-code">001-9</span>' in html
    assert boleto.format_digitable_line(payin.boleto_digitable_line) in html
    assert escape(merchant_display_name(merchant)) in html
    assert "Maria da Silva · 123.456.789-09" in html
    assert "Avenida Paulista, 1000 - Apto 12" in html and "São Paulo / SP · CEP 01310-100" in html
    assert "02/01/2099" in html
    assert "R$ 1.234,56" in html
    assert "00000000000004242-" in html  # nosso número and its check digit
    assert "Não aceitar pagamento em cheque." in html
    assert "data-print" in html and "Imprimir" in html
    assert "maria.secret@example.com" not in html
    svg = svg_in(html)
    assert 'role="img"' in svg
    assert itf_decode(svg_modules(svg)) == payin.boleto_barcode


def test_boleto_stylesheet_prints():
    with open(finders.find("payments/pay.css"), encoding="utf-8") as stylesheet:
        css = stylesheet.read()

    assert "@media print" in css
    assert "103mm" in css


def test_boleto_page_only_for_boletos(client, merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)

    assert client.get(f"/pay/{payin.public_token}/boleto").status_code == 404


@pytest.mark.parametrize("fields", [
    {"status": PayinStatus.PAID},
    {"status": PayinStatus.CANCELED},
    {"boleto_due_date": date(2020, 1, 1)},  # still PENDING, but past its due date
])
def test_boleto_that_can_no_longer_be_paid_withholds_line_and_barcode(client, merchant, fields):
    payin = make_payin(merchant, PaymentMethod.BOLETO, **fields)

    html = html_of(client.get(f"/pay/{payin.public_token}/boleto"))

    assert "não pode mais ser pago" in html
    assert "<svg" not in html
    assert boleto.format_digitable_line(payin.boleto_digitable_line) not in html


def test_boleto_with_inconsistent_line_and_barcode_is_never_shown(client, merchant):
    payin = make_payin(merchant, PaymentMethod.BOLETO)
    other = make_payin(merchant, PaymentMethod.BOLETO, amount=999, boleto_nosso_numero=4243)
    Payin.objects.filter(pk=payin.pk).update(boleto_digitable_line=other.boleto_digitable_line)

    with pytest.raises(boleto.BoletoFormatError):
        client.get(f"/pay/{payin.public_token}/boleto")


@pytest.mark.parametrize(("bank", "digit"), [("001", "9"), ("341", "7"), ("237", "2"), ("104", "0"), ("033", "7"),
                                             ("756", "0")])
def test_bank_code_check_digit(bank, digit):
    assert hosted._bank_code_check_digit(bank) == digit


# --- Template filters ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("cents", "text"), [
    (0, "R$ 0,00"),
    (1, "R$ 0,01"),
    (100, "R$ 1,00"),
    (123456, "R$ 1.234,56"),
    (100000000, "R$ 1.000.000,00"),
    (-100, "-R$ 1,00"),
    (-123456, "-R$ 1.234,56"),
])
def test_brl(cents, text):
    assert brl(cents) == text


@pytest.mark.parametrize("value", [1.5, Decimal("1.00"), "100", None, True])
def test_brl_refuses_what_is_not_integer_cents(value):
    assert brl(value) == ""


def test_sao_paulo_dates():
    moment = datetime(2026, 11, 21, 1, 39, tzinfo=UTC)  # still the 20th in Sao Paulo

    assert sp_datetime(moment) == "20/11/2026 22:39"
    assert sp_time(moment) == "22:39"
    assert sp_date(moment) == "20/11/2026"
    assert sp_date(date(2026, 3, 10)) == "10/03/2026"
    assert sp_datetime(datetime(2026, 1, 5, 8, 0)) == "05/01/2026 08:00"  # naive: taken as local already
    assert sp_datetime(None) == sp_date(None) == sp_time(date(2026, 1, 1)) == sp_datetime("2026-01-01") == ""


def test_document_and_cep_filters():
    assert br_document("12345678909") == "123.456.789-09"
    assert br_document("11222333000181") == "11.222.333/0001-81"
    assert br_document("12ABC34501DE35") == "12.ABC.345/01DE-35"
    assert br_document("123") == "123"
    assert cep("01310100") == "01310-100"
    assert cep("0131") == "0131"
    assert br_document(None) == cep(None) == ""
