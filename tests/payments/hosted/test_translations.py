"""The payer's pages in Portuguese: every text a payer can read is translated in the pt_BR catalog, in every state of
every page, and the printable boleto prints each instruction once (defect 2)."""

import ast
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils import translation
from django.utils.translation import trans_real

from accounts.selectors import merchant_display_name
from payments.formats import boleto
from payments.hosted import views as hosted
from payments.models import PayinStatus, PaymentMethod
from payments.payins.transitions import FAILURE_MESSAGES
from payments.templatetags.payments_format import br_document, brl, cep
from tests.payments.hosted.test_pages import CUSTOMER, html_of, make_payin

pytestmark = pytest.mark.ledger_unchecked

CATALOG = Path(settings.BASE_DIR) / "locale" / "pt_BR" / "LC_MESSAGES" / "django.po"
OPEN, CLOSE = "\u27e6", "\u27e7"  # around every string the catalog gave while a page rendered

# Attributes whose text a payer reads or hears (a screen reader), or that pay.js puts on the page.
TEXT_ATTRIBUTES = {"alt", "title", "aria-label", "placeholder", "data-copied", "data-copy-failed", "data-time-left",
                   "data-day", "data-days"}

# The "ficha de compensação" keeps the words every Brazilian bank prints, in any language: the only untranslated text
# allowed on the payer's pages (besides the charge's own data).
BANK_WORDS = {
    "Recibo do pagador", "Beneficiário", "Vencimento", "Pagador", "Nosso número", "Referente a",
    "Valor do documento", "Corte na linha pontilhada", "Local de pagamento",
    "Pagável em qualquer banco app ou lotérica até o vencimento", "Data do documento", "Espécie doc", "DM",
    "Aceite", "N", "Espécie", "Instruções texto de responsabilidade do beneficiário", "Desconto Abatimento",
    "Juros Multa", "Valor cobrado", "CEP", "Autenticação mecânica", "Ficha de compensação",
    "Não receber após o vencimento",
}

ALL_STATUSES = list(PayinStatus)
PAGES = [("page", method, status) for method in PaymentMethod for status in ALL_STATUSES] + [
    ("boleto", PaymentMethod.BOLETO, status) for status in ALL_STATUSES]


def catalog_entries() -> dict[str, tuple[str, bool]]:
    """msgid → (msgstr, fuzzy), read from the .po itself (not the compiled .mo, which drops what is missing)."""
    entries = {}
    for block in CATALOG.read_text(encoding="utf-8").split("\n\n"):
        lines = [line for line in block.strip().splitlines() if line]
        fuzzy = any(line.startswith("#,") and "fuzzy" in line for line in lines)
        fields: dict[str, str] = {}
        current = None
        for line in lines:
            if line.startswith("#"):
                continue
            match = re.match(r"(msgid|msgstr|msgctxt|msgid_plural|msgstr\[\d+\]) (\".*\")$", line)
            if match:
                current = match.group(1)
                fields[current] = ast.literal_eval(match.group(2))
            else:
                fields[current] += ast.literal_eval(line)
        if fields.get("msgid"):
            key = f"{fields['msgctxt']}\x04{fields['msgid']}" if "msgctxt" in fields else fields["msgid"]
            entries[key] = (fields.get("msgstr", fields.get("msgstr[0]", "")), fuzzy)
    return entries


class VisibleText(HTMLParser):
    """The text a payer sees or hears: text nodes outside scripts and styles, and the text attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs) -> None:
        self._in_script = tag in {"script", "style"}
        self.chunks.extend(value for name, value in attrs if name in TEXT_ATTRIBUTES and value)

    def handle_endtag(self, tag) -> None:
        self._in_script = False

    def handle_data(self, data) -> None:
        (self.scripts if self._in_script else self.chunks).append(data)


@pytest.fixture
def recorded(monkeypatch) -> set[str]:
    """Every msgid the pt-BR catalog is asked for while a page renders; what it answers comes back marked."""
    portuguese = trans_real.translation("pt-br")
    asked: set[str] = set()

    def gettext(message):
        asked.add(message)
        return f"{OPEN}{type(portuguese).gettext(portuguese, message)}{CLOSE}"

    def ngettext(singular, plural, number):
        asked.update({singular, plural})
        return f"{OPEN}{type(portuguese).ngettext(portuguese, singular, plural, number)}{CLOSE}"

    monkeypatch.setattr(portuguese, "gettext", gettext)
    monkeypatch.setattr(portuguese, "ngettext", ngettext)
    return asked


def charge_data(payin) -> list[str]:
    """What the page shows of the charge itself (never translated), longest first so parts don't break it up."""
    payer = hosted._boleto_payer(CUSTOMER)
    values = [merchant_display_name(payin.merchant), payin.description, payer["name"], payer["street"],
              payer["city"], br_document(payer["document"]), cep(payer["zip_code"]), brl(payin.amount), "R$",
              payin.pix_payload or "", "Mastercard", "••••", payin.boleto_instructions or ""]
    return sorted((value for value in values if value), key=len, reverse=True)


def untranslated(chunk: str, data: list[str]) -> str:
    """What is left of a piece of visible text once the translated strings and the charge's data are taken out:
    its words, or "" when nothing (but numbers and punctuation) is left."""
    previous = None
    while previous != chunk:  # translated strings may hold others (a status inside a sentence)
        previous, chunk = chunk, re.sub(f"{OPEN}[^{OPEN}{CLOSE}]*{CLOSE}", " ", chunk)
    for value in data:
        chunk = chunk.replace(value, " ")
    return " ".join(re.findall(r"[^\W\d_]+", chunk))


@pytest.mark.parametrize(("page", "method", "status"), PAGES)
def test_every_text_on_the_payer_pages_is_translated(client, merchant, recorded, page, method, status):
    fields = {"status": status}
    if status == PayinStatus.FAILED:
        fields["failure_message"] = FAILURE_MESSAGES["card_declined"]
    payin = make_payin(merchant, method, **fields)
    url = f"/pay/{payin.public_token}" + ("/boleto" if page == "boleto" else "")

    response = client.get(url)

    assert response.status_code == 200
    assert response["Content-Language"] == "pt-br"
    parser = VisibleText()
    parser.feed(html_of(response))
    leftovers = {untranslated(chunk, charge_data(payin)) for chunk in parser.chunks} - {""} - BANK_WORDS
    assert not leftovers, f"text not from the catalog on {url} ({status}): {sorted(leftovers)}"
    # Not vacuous: the page did ask the catalog, and for the status it shows (a payable boleto shows none).
    assert len(recorded) >= 5
    if page == "page" or status != PayinStatus.PENDING:
        texts = hosted._status_texts(payin) if page == "page" else hosted.STATUS_TEXT
        with translation.override(None):
            assert str(texts[status][0]) in recorded
    catalog = catalog_entries()
    missing = sorted(msgid for msgid in recorded if not catalog.get(msgid, ("", True))[0]
                     or catalog[msgid][1])
    assert not missing, f"no pt_BR translation (or a fuzzy one) for: {missing}"
    # And the compiled catalog is the .po's: each answer given is the msgstr written there.
    for msgid in recorded:
        assert trans_real.translation("pt-br")._catalog.get(msgid) == catalog[msgid][0], msgid
    if page == "page":
        texts = json.loads(re.search(r'id="status-texts" type="application/json">(.*?)</script>',
                                     html_of(response), re.S).group(1))
        assert all(text["label"].startswith(OPEN) for text in texts.values())


def test_the_check_catches_english_left_in_a_template(client, merchant, recorded, settings, tmp_path):
    """The test above fails on a sentence nobody marked for translation (so its passing means something)."""
    (tmp_path / "payments").mkdir()
    original = (Path(settings.BASE_DIR) / "templates" / "payments" / "pay.html").read_text(encoding="utf-8")
    assert "{% block content %}" in original
    (tmp_path / "payments" / "pay.html").write_text(
        original.replace("{% block content %}", "{% block content %}<p>Thank you for your purchase</p>", 1),
        encoding="utf-8")
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}]
    payin = make_payin(merchant, PaymentMethod.PIX)

    parser = VisibleText()
    parser.feed(html_of(client.get(f"/pay/{payin.public_token}")))

    leftovers = {untranslated(chunk, charge_data(payin)) for chunk in parser.chunks} - {""} - BANK_WORDS
    assert leftovers == {"Thank you for your purchase"}


def test_every_msgid_of_the_catalog_is_translated():
    entries = catalog_entries()

    assert len(entries) > 50
    assert [msgid for msgid, (msgstr, fuzzy) in entries.items() if not msgstr or fuzzy] == []


@pytest.mark.parametrize(("accept_language", "language"), [
    (None, "pt-br"),  # no header: a payer is Brazilian (issue 37, item 18)
    ("", "pt-br"),
    ("pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7", "pt-br"),
    ("en-US,en;q=0.9,pt-BR;q=0.8", "en"),  # English first
    ("en-US,en;q=0.9", "en"),
    ("fr-FR,fr;q=0.9,en;q=0.8,pt;q=0.7", "en"),  # neither first, but English before Portuguese
    ("fr-FR,pt;q=0.8,en;q=0.7", "pt-br"),
    ("pt;q=0.5,en;q=0.9", "en"),  # the weights rank, not the order
    ("en;q=0,pt;q=0.1", "pt-br"),  # q=0: not English
    ("de-DE,*;q=0.5", "pt-br"),  # neither named
    ("EN-gb", "en"),
    ("en-US;q=garbage, pt-BR", "pt-br"),  # a range that is not one is skipped
])
def test_payer_language_follows_a_browser_that_asks_for_english_first(accept_language, language):
    assert hosted.payer_language(accept_language or "") == language


def test_the_pay_page_is_portuguese_without_accept_language_and_english_when_asked_first(merchant):
    payin = make_payin(merchant, PaymentMethod.PIX)
    client = Client()  # no Accept-Language unless a request sends one
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"  # the dashboard's switch: the merchant's, not the payer's

    bare = client.get(f"/pay/{payin.public_token}")
    english = client.get(f"/pay/{payin.public_token}", HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9,pt-BR;q=0.8")

    assert (bare["Content-Language"], english["Content-Language"]) == ("pt-br", "en")
    assert "Accept-Language" in bare["Vary"] and "Accept-Language" in english["Vary"]
    assert '<html lang="pt-br">' in html_of(bare) and "Aguardando pagamento" in html_of(bare)
    assert "Waiting for payment" not in html_of(bare)
    html = html_of(english)
    assert '<html lang="en">' in html
    assert "Waiting for payment" in html and "Aguardando pagamento" not in html
    assert "Expires at 00:04 on 02/01/2099 (Brasília time)." in html
    assert 'alt="Pix QR code for R$ 1.234,56' in html


@pytest.mark.parametrize("accept_language", [None, "en-US,en;q=0.9", "es"])
def test_the_printable_boleto_is_portuguese_whatever_the_browser_asks(merchant, accept_language):
    """A Brazilian bank document: an English browser used to get "Pay it in your bank"."""
    payin = make_payin(merchant, PaymentMethod.BOLETO)
    client = Client()
    headers = {"HTTP_ACCEPT_LANGUAGE": accept_language} if accept_language else {}
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"  # nor the dashboard's language switch

    response = client.get(f"/pay/{payin.public_token}/boleto", **headers)

    html = html_of(response)
    assert response["Content-Language"] == "pt-br"
    assert '<html lang="pt-br">' in html
    assert "Imprimir" in html and "Voltar à página de pagamento" in html
    assert "Print" not in html and "Back to the payment page" not in html


def test_failed_card_shows_the_reason_in_portuguese(client, merchant):
    payin = make_payin(merchant, PaymentMethod.CREDIT_CARD, status=PayinStatus.FAILED, paid_at=None,
                       failure_message=FAILURE_MESSAGES["insufficient_funds"])

    html = html_of(client.get(f"/pay/{payin.public_token}"))

    assert '<p class="status-note">O cartão não tem saldo suficiente.</p>' in html
    assert "<span data-status-label>Falhou</span>" in html


# --- Defect 2: the same instruction printed twice --------------------------------------------------------------------
def instructions_of(html: str) -> list[str]:
    cell = re.search(r"<dt>Instruções \(texto de responsabilidade do beneficiário\)</dt><dd>(.*?)</dd>", html, re.S)
    assert cell, "no Instruções cell"
    return [line.strip() for line in re.findall(r"<p>(.*?)</p>", cell.group(1), re.S)]


@pytest.mark.parametrize("merchant_text", [
    "Não receber após o vencimento",
    "Não receber após o vencimento.",
    "  NÃO RECEBER  APÓS O VENCIMENTO!  ",
    "Nao receber apos o vencimento",
])
def test_boleto_never_prints_the_same_instruction_twice(client, merchant, merchant_text):
    payin = make_payin(merchant, PaymentMethod.BOLETO, boleto_instructions=merchant_text)

    html = html_of(client.get(f"/pay/{payin.public_token}/boleto"))

    lines = instructions_of(html)
    assert lines == [merchant_text.strip(), "Referente a: Pedido 42: camiseta"]


def test_boleto_keeps_different_instructions_each_once(client, merchant):
    payin = make_payin(merchant, PaymentMethod.BOLETO,
                       boleto_instructions="Não aceitar pagamento em cheque.\nNão receber após o vencimento.\n"
                                           "Não aceitar pagamento em cheque")

    html = html_of(client.get(f"/pay/{payin.public_token}/boleto"))

    assert instructions_of(html) == ["Não aceitar pagamento em cheque.", "Não receber após o vencimento.",
                                     "Referente a: Pedido 42: camiseta"]


def test_boleto_without_merchant_instructions_prints_ours(client, merchant):
    payin = make_payin(merchant, PaymentMethod.BOLETO, boleto_instructions="", description="")

    html = html_of(client.get(f"/pay/{payin.public_token}/boleto"))

    assert instructions_of(html) == ["Não receber após o vencimento."]
    assert boleto.format_digitable_line(payin.boleto_digitable_line) in html
