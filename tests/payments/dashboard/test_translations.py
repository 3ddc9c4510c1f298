"""The dashboard in Portuguese and in English (issue 16): every text a merchant reads on every dashboard page comes
from the pt_BR catalog, translated (the same check as the payer's pages, tests/payments/hosted/test_translations.py);
the check catches English left in a template; every page still reads in English when the browser asks for English;
times say their zone."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.utils import timezone, translation
from django.utils.html import strip_tags
from django.utils.translation import trans_real

from accounts import members
from accounts.audit import audit_record
from accounts.models import AccountEvent, KycStatus, Role
from core.formats import contact
from payments.dashboard import labels
from payments.disputes import services as dispute_services
from payments.models import (
    DisputeKind,
    DisputeStatus,
    PayinStatus,
    PaymentMethod,
    PayoutStatus,
    RefundStatus,
    UnmatchedKind,
)
from payments.payins import refunds
from payments.templatetags.payments_format import sp_zoned
from payments.unmatched import services as unmatched_services
from tests.factories import ApiKeyFactory, MembershipFactory, MerchantFactory, UserFactory
from tests.payments.dashboard.test_dashboard_pages import charge, fund, paid, payout
from tests.payments.hosted.test_translations import CLOSE, OPEN, VisibleText, catalog_entries
from webhooks import services as webhook_services
from webhooks.models import Delivery, DeliveryAttempt, Event, EventType, WebhookEndpoint

PT = {"HTTP_ACCEPT_LANGUAGE": "pt-BR,pt;q=0.9"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}

# Words that are the same in any language: the brand, the Pix brand, Brazilian acronyms, the language switch (each
# language in its own name) and the KYC form's state codes.
SAME_IN_ANY_LANGUAGE = ["Português (Brasil)", "English", "Pagamentos", "Pix", "PIX", "CPF", "CNPJ", "R$",
                        *contact.UF_CODES]
# The merchant's own data in the pages below (never translated), and the event types, which are API names.
MERCHANT_DATA = ["Loja da Ana", "ana@example.com.br", "ana@example.com", "Ana Souza", "ANA SOUZA", "Caneca",
                 "Loja Exemplo LTDA", "Loja Exemplo", "servidor da loja", "Servidor de pedidos", "https://hooks.example.com/all",
                 "connection refused", "Service Unavailable", "Visa", "Fornecedor Ltda", "Aluguel de novembro",
                 "Devolução parcial", "Initial funds", "Av. Paulista", "São Paulo", "12ABC34501DE35",
                 "bia@example.com", "caio@example.com", *EventType.values]


class DashboardText(VisibleText):
    """The payer-page parser, plus the mobile tables' cell labels (`data-label`, shown by CSS), minus code (ids,
    keys, the API example request), which reads the same in any language."""

    SKIPPED = {"code", "pre"}

    def __init__(self) -> None:
        super().__init__()
        self._skipping = 0

    def handle_starttag(self, tag, attrs) -> None:
        super().handle_starttag(tag, attrs)
        self.chunks.extend(value for name, value in attrs if name == "data-label" and value)
        self._skipping += tag in self.SKIPPED

    def handle_endtag(self, tag) -> None:
        super().handle_endtag(tag)
        self._skipping -= tag in self.SKIPPED and self._skipping > 0

    def handle_data(self, data) -> None:
        if not self._skipping:
            super().handle_data(data)


def leftovers_of(page: str) -> set[str]:
    """The words of the page that did not come from the catalog, once the data above is taken out. The catalog's
    answers are taken out of the HTML before it is parsed: a translated sentence may hold markup (a link, a code)."""
    previous = None
    while previous != page:  # translated strings may hold others (a status inside a sentence)
        previous, page = page, re.sub(f"{OPEN}[^{OPEN}{CLOSE}]*{CLOSE}", " ", page)
    parser = DashboardText()
    parser.feed(page)
    data = sorted(SAME_IN_ANY_LANGUAGE + MERCHANT_DATA, key=len, reverse=True)
    left = set()
    for chunk in parser.chunks:
        for value in data:
            chunk = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", " ", chunk)
        left.add(" ".join(re.findall(r"[^\W\d_]+", chunk)))
    return left - {""}


@pytest.fixture
def recorded(monkeypatch) -> set[str]:
    """Every msgid the pt-BR catalog is asked for while a page renders (with its context, as the catalog keys it;
    a plural by its singular); what it answers comes back marked."""
    portuguese = trans_real.translation("pt-br")
    asked: set[str] = set()

    def gettext(message):
        asked.add(message)
        return f"{OPEN}{type(portuguese).gettext(portuguese, message)}{CLOSE}"

    def ngettext(singular, plural, number):
        asked.add(singular)
        return f"{OPEN}{type(portuguese).ngettext(portuguese, singular, plural, number)}{CLOSE}"

    monkeypatch.setattr(portuguese, "gettext", gettext)
    monkeypatch.setattr(portuguese, "ngettext", ngettext)
    return asked


def untranslated_msgids(recorded: set[str]) -> list[str]:
    """The msgids asked for that neither our catalog nor Django's own (its form errors, its password forms) translate;
    and ours must be translated in the .po itself, not fuzzy."""
    compiled = trans_real.translation("pt-br")._catalog
    ours = catalog_entries()
    language_names = {name for _code, name in settings.LANGUAGES}  # the switch names each language in its own words
    missing = [msgid for msgid in recorded - language_names if msgid not in compiled and (msgid, 0) not in compiled]
    missing += [msgid for msgid, (msgstr, fuzzy) in ours.items() if msgid in recorded and (not msgstr or fuzzy)]
    return sorted(missing)


# --- The pages, with data ---------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _fees_and_webhooks(settings, monkeypatch, tmp_path):
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349
    settings.FEE_PAYOUT_FIXED = 0
    settings.PAYOUT_MAX_AMOUNT, settings.PAYOUT_DAILY_MAX = 5_000_000, 20_000_000
    settings.MEDIA_ROOT = tmp_path
    monkeypatch.setattr(webhook_services, "_enqueue", lambda delivery_ids: None)


@pytest.fixture
def shop(db):
    """A merchant with a bit of everything: charges of each method in several states, a refund, payouts, an API key,
    a webhook endpoint with deliveries and attempts."""
    merchant = MerchantFactory(name="Loja da Ana", owner__email="ana@example.com")
    ApiKeyFactory.with_secret(merchant=merchant, livemode=False, label="servidor da loja")
    endpoint = WebhookEndpoint.objects.create(merchant=merchant, livemode=False, url="https://hooks.example.com/all",
                                              description="Servidor de pedidos", event_types=[])
    objects = {
        "pending_pix": charge(merchant, "PIX", reference_id="order-pending"),
        "paid_pix": paid(merchant, "PIX", amount=20000, reference_id="order-paid"),
        "boleto": charge(merchant, "BOLETO", reference_id="order-boleto"),
        "card": paid(merchant, "CREDIT_CARD", reference_id="order-card"),
    }
    refunds.refund_create(merchant=merchant, livemode=False, payin_id=objects["paid_pix"].pk, amount=1000,
                          reason="Devolução parcial")
    objects["dispute"], _ = dispute_services.dispute_open(payin_id=objects["card"].pk)
    with transaction.atomic():  # a payment of another amount for the pending charge: held, unmatched
        objects["unmatched"] = unmatched_services.unmatched_record(
            merchant=merchant, livemode=False, kind=UnmatchedKind.AMOUNT_MISMATCH, amount=4321,
            end_to_end_id="E00000000202611251200unmatched01", payin=objects["pending_pix"], payer_name="Ana Souza",
            payer_document="52998224725")
    fund(merchant, 100_000)
    objects["payout"] = payout(merchant, 5000, reference_id="rent-nov", beneficiaryName="Fornecedor Ltda",
                               description="Aluguel de novembro")
    event = Event.objects.create(merchant=merchant, livemode=False, type="payin.paid", object_id="pay_1",
                                 payload={"id": "x", "type": "payin.paid"})
    objects["delivery"] = Delivery.objects.create(event=event, merchant=merchant, livemode=False, url=endpoint.url,
                                                  status=Delivery.Status.PENDING, attempts=2, last_status_code=503,
                                                  next_attempt_at=timezone.now() + timedelta(minutes=5))
    DeliveryAttempt.objects.create(delivery=objects["delivery"], attempted_at=timezone.now(), url=endpoint.url,
                                   error="connection refused", duration_ms=3001)
    DeliveryAttempt.objects.create(delivery=objects["delivery"], attempted_at=timezone.now(), url=endpoint.url,
                                   status_code=503, duration_ms=120, response_excerpt="Service Unavailable")
    objects["endpoint"] = endpoint
    return merchant, objects


# name → (what the English page says, what the Portuguese page says): proof each page renders in its language.
PAGES = {
    "overview": ("/dashboard/", "Available balance", "Saldo disponível"),
    "charges": ("/dashboard/charges/", "Reference id", "Id de referência"),
    "charges-none-match": ("/dashboard/charges/?q=nothing&status=PAID", "No charges match.",
                           "Nenhuma cobrança corresponde."),
    "charge-pix-pending": ("charge:pending_pix", "Simulate payment", "Simular pagamento"),
    "charge-pix-refunded": ("charge:paid_pix", "Refunds of this charge, oldest first",
                            "Estornos desta cobrança, do mais antigo ao mais recente"),
    "charge-boleto": ("charge:boleto", "Printable boleto", "Boleto para impressão"),
    "charge-card": ("charge:card", "Installments", "Parcelas"),
    "payouts": ("/dashboard/payouts/", "Available to pay out:", "Disponível para saque:"),
    "payout-detail": ("payout:payout", "End-to-end id", "Id fim a fim (E2E)"),
    "payout-new": ("/dashboard/payouts/new/", "Review payout", "Revisar saque"),
    "payout-review": ("review", "Confirm payout", "Confirmar saque"),
    "payout-errors": ("payout-errors", "Enter an amount in reais", "Informe um valor em reais"),
    "disputes": ("/dashboard/disputes/", "Evidence due by", "Prazo da defesa"),
    "dispute-detail": ("dispute:dispute", "Send evidence", "Enviar defesa"),
    "unmatched": ("/dashboard/unmatched/", "When one arrives", "Quando um chegar"),
    "unmatched-detail": ("unmatched:unmatched", "Send it back to the payer", "Devolver ao pagador"),
    "statement": ("/dashboard/statement/", "Balance after", "Saldo após"),
    "integrations": ("/dashboard/integrations/", "API key pairs", "Pares de chaves de API"),
    "integrations-new-key": ("new-key", "Copy the secret key now.", "Copie a chave secreta agora."),
    "deliveries": ("/dashboard/webhooks/deliveries/", "Last answer", "Última resposta"),
    "deliveries-none": ("/dashboard/webhooks/deliveries/?status=FAILED", "No deliveries with status",
                        "Nenhuma entrega com a situação"),
    "delivery-detail": ("delivery", "Response (first 2 KiB)", "Resposta (primeiros 2 KiB)"),
    "endpoint-edit": ("endpoint", "Leave all unticked to receive every event type.",
                      "Deixe todos desmarcados para receber todos os tipos de evento."),
    "kyc-approved": ("/dashboard/kyc/", "Approved: you can create live keys",
                     "Aprovado: você pode criar chaves de produção"),
    "kyc-form": ("kyc-form", "Submit for review", "Enviar para análise"),
    "kyc-submitted": ("kyc-submitted", "We are reviewing your submission.", "Estamos analisando seu envio."),
    "settings": ("/dashboard/settings/", "Change password", "Alterar senha"),
    "message-after-cancel": ("cancel", "Charge canceled. The payer can no longer pay it.",
                             "Cobrança cancelada. O pagador não pode mais pagá-la."),
    "not-found": ("/dashboard/charges/00000000-0000-0000-0000-000000000000/", "Page not found",
                  "Página não encontrada"),
    "no-merchant": ("no-merchant", "This user has no merchant account.", "Este usuário não tem conta de lojista."),
    "signup": ("anonymous:/dashboard/signup/", "Create your account", "Crie sua conta"),
    "signup-errors": ("signup-errors", "The passwords do not match.", "As senhas não conferem."),
    "login": ("anonymous:/dashboard/login/", "Forgot your password?", "Esqueceu sua senha?"),
    "password-reset": ("anonymous:/dashboard/password-reset/", "Send the link", "Enviar o link"),
    "password-reset-sent": ("anonymous:/dashboard/password-reset/sent/", "Check your email", "Confira seu e-mail"),
    "password-reset-expired": ("anonymous:/dashboard/password-reset/MQ/expired-token/", "This link has expired",
                               "Este link expirou"),
    "password-reset-done": ("anonymous:/dashboard/password-reset/done/", "with your new password",
                            "com sua nova senha"),
    "not-found-anonymous": ("anonymous:/dashboard/nothing-here/", "There is nothing at this address.",
                            "Não há nada neste endereço."),
    # The services' refusals, in the dashboard's language (the API keeps them in English: see the test below).
    "payout-insufficient-balance": ("payout-insufficient-balance", "Insufficient balance: your available balance is",
                                    "Saldo insuficiente: seu saldo disponível é de"),
    "payout-invalid-pix-key": ("payout-invalid-pix-key", "Must be 11 digits, for key type CPF.",
                               "Deve ter 11 dígitos, para uma chave do tipo CPF."),
    "refund-refused": ("refund-refused", "Boleto charges cannot be refunded",
                       "Cobranças por boleto não podem ser estornadas"),
    "endpoint-private-url": ("endpoint-private-url", "The webhook URL is not accepted: its address is not public",
                             "A URL do webhook não é aceita: o endereço dela não é público"),
    "login-throttled": ("login-throttled", "Too many failed attempts; try again in 15 minutes",
                        "Tentativas demais sem sucesso; tente de novo em 15 minutos"),
    # Issue 15: the team, two-factor sign-in and the audit log.
    "members": ("members", "Pending invitations", "Convites pendentes"),
    "security": ("/dashboard/security/", "On: signing in asks for a code from your authenticator app.",
                 "Ativado: o login pede um código do seu aplicativo autenticador."),
    "security-enrol": ("security-enrol", "Enter the 6-digit code the app shows.",
                       "Informe o código de 6 dígitos que o aplicativo mostra."),
    "security-new-codes": ("security-new-codes", "They are shown only now.", "Eles são mostrados só agora."),
    # Issue 37: a change to the sign-in asks for the password or a current code.
    "security-proof-required": ("security-proof-required", "Confirm it is you: enter your password, or the code",
                                "Confirme que é você: digite sua senha ou o código"),
    "settings-proof-refused": ("settings-proof-refused", "That is neither your password nor a current code",
                               "Isso não é sua senha nem um código atual"),
    "audit": ("audit", "Every action", "Todas as ações"),
    "login-verify": ("login-verify", "Enter the code from your authenticator app",
                     "Informe o código do seu aplicativo autenticador"),
    "invitation": ("invitation", "Choose a password for your new account.", "Escolha uma senha para sua nova conta."),
    "forbidden": ("forbidden", "Your role in this account does not allow this.",
                  "Sua função nesta conta não permite isso."),
}


def render(client, shop, name: str, headers: dict) -> str:
    """The page `name` as the browser with `headers` sees it (a form posted where the page is the answer to one)."""
    merchant, objects = shop
    where = PAGES[name][0]
    status = 404 if name.startswith("not-found") else 200
    if where.startswith("anonymous:"):
        return _ok(client.get(where.removeprefix("anonymous:"), **headers), status=status)
    client.force_login(merchant.owner)
    kind, _, key = where.partition(":")
    if kind == "charge":
        return _ok(client.get(f"/dashboard/charges/{objects[key].pk}/", **headers))
    if kind == "dispute":
        return _ok(client.get(f"/dashboard/disputes/{objects[key].pk}/", **headers))
    if kind == "payout":
        return _ok(client.get(f"/dashboard/payouts/{objects[key].pk}/", **headers))
    if kind == "unmatched":
        return _ok(client.get(f"/dashboard/unmatched/{objects[key].pk}/", **headers))
    if where == "delivery":
        return _ok(client.get(f"/dashboard/webhooks/deliveries/{objects['delivery'].pk}/", **headers))
    if where == "endpoint":
        return _ok(client.get(f"/dashboard/webhooks/endpoints/{objects['endpoint'].pk}/", **headers))
    if where == "review":
        return _ok(client.post("/dashboard/payouts/new/", {
            "amount": "10,00", "pix_key_type": "EMAIL", "pix_key": "ana@example.com",
            "beneficiary_name": "Fornecedor Ltda", "reference_id": "payout-review-1", "action": "review"}, **headers))
    if where == "payout-errors":
        return _ok(client.post("/dashboard/payouts/new/", {"amount": "dez", "pix_key_type": "EMAIL", "pix_key": "",
                                                            "reference_id": "", "action": "review"}, **headers),
                   status=400)
    if where in ("payout-insufficient-balance", "payout-invalid-pix-key"):
        form = {"amount": "10,00", "pix_key_type": "EMAIL", "pix_key": "ana@example.com",
                "beneficiary_name": "Fornecedor Ltda", "reference_id": "payout-refused-1", "action": "confirm"}
        if where == "payout-insufficient-balance":
            form["amount"] = "20.000,00"  # under the per-payout maximum, above the balance
        else:
            form.update(pix_key_type="CPF", pix_key="123", action="review")
        return _ok(client.post("/dashboard/payouts/new/", form, **headers), status=400)
    if where == "refund-refused":
        response = client.post(f"/dashboard/charges/{objects['boleto'].pk}/refund/",
                               {"amount": "", "reason": "", "token": "refund-refused-1"}, **headers)
        assert response.status_code == 302, response.status_code
        return _ok(client.get(response["Location"], **headers))
    if where == "endpoint-private-url":
        return _ok(client.post("/dashboard/webhooks/endpoints/", {"url": "https://10.0.0.7/hooks",
                                                                  "description": "Servidor de pedidos"}, **headers),
                   status=400)
    if where == "login-throttled":
        client.logout()
        for attempt in range(6):
            response = client.post("/dashboard/login/", {"username": "ana@example.com",
                                                         "password": f"wrong-{attempt}"}, **headers)
        return _ok(response, status=429)
    if where == "new-key":
        client.get("/dashboard/integrations/", **headers)
        nonce = client.session["apikey_form_nonce"]
        return _ok(client.post("/dashboard/integrations/keys/", {"label": "servidor da loja", "mode": "test",
                                                                 "nonce": nonce}, **headers))
    if where in ("kyc-form", "kyc-submitted"):
        newcomer = MerchantFactory(name="Loja da Ana", owner__email="ana@example.com.br",
                                   kyc_status=KycStatus.NOT_SUBMITTED)
        client.force_login(newcomer.owner)
        form = {"legal_name": "Loja Exemplo LTDA", "trading_name": "Loja Exemplo", "document": "123",
                "street": "Av", "number": "1", "city": "X", "state": "SP", "zip_code": "1", "phone": "1"}
        if where == "kyc-form":  # the form with our errors beside its fields
            return _ok(client.post("/dashboard/kyc/", form, **headers))
        form.update(document="12.ABC.345/01DE-35", street="Av. Paulista", number="1000", city="São Paulo",
                    zip_code="01310-100", phone="+55 11 98765-4321",
                    document_file=SimpleUploadedFile("c.pdf", b"%PDF-1.4", content_type="application/pdf"))
        response = client.post("/dashboard/kyc/", form, **headers)
        assert response.status_code == 302, response.content.decode()[:2000]
        return _ok(client.get(response["Location"], **headers))
    if where == "members":  # a developer in the team and a pending invitation
        MembershipFactory(merchant=merchant, user__email="bia@example.com", role=Role.DEVELOPER)
        members.invitation_create(None, merchant=merchant, email="caio@example.com", role=Role.FINANCE,
                                  invited_by=merchant.owner)
        return _ok(client.get("/dashboard/members/", **headers))
    if where in ("security-enrol", "forbidden"):  # a member without a second factor; a developer's refusal
        member = MembershipFactory(merchant=merchant, user__email="bia@example.com", role=Role.DEVELOPER)
        client.force_login(member.user)
        if where == "forbidden":
            return _ok(client.get("/dashboard/payouts/new/", **headers), status=403)
        return _ok(client.get("/dashboard/security/", **headers))
    if where == "security-new-codes":
        return _ok(client.post("/dashboard/security/recovery-codes/", {"password": "correct-horse-battery"},
                               **headers))
    if where == "security-proof-required":
        return _ok(client.post("/dashboard/security/two-factor/disable/", **headers), status=400)
    if where == "settings-proof-refused":
        return _ok(client.post("/dashboard/settings/", {"password": "not-it", "new_password1": "a-new-long-phrase",
                                                        "new_password2": "a-new-long-phrase"}, **headers), status=400)
    if where == "audit":
        member = MembershipFactory(merchant=merchant, user__email="bia@example.com", role=Role.FINANCE).user
        for action, actor, after in [
                (AccountEvent.Action.MEMBER_INVITED, merchant.owner, {"email": "bia@example.com", "role": "finance"}),
                (AccountEvent.Action.MEMBER_JOINED, member, None), (AccountEvent.Action.SIGNED_IN, member, None),
                (AccountEvent.Action.TWO_FACTOR_ENABLED, member, None),
                (AccountEvent.Action.RECOVERY_CODE_USED, member, {"recovery_codes_left": 9}),
                (AccountEvent.Action.PAYOUT_CREATED, member, {"amount": 5000})]:
            audit_record(None, merchant=merchant, action=action, actor_user=actor, after=after)
        audit_record(None, merchant=merchant, action=AccountEvent.Action.PAYOUT_CANCELED, actor_key="pk_test_1")
        return _ok(client.get("/dashboard/audit/", **headers))
    if where == "login-verify":  # the second step, after the right password
        client.logout()
        response = client.post("/dashboard/login/", {"username": "ana@example.com",
                                                     "password": "correct-horse-battery"}, **headers)
        assert response["Location"] == "/dashboard/login/verify/", response.status_code
        return _ok(client.get(response["Location"], **headers))
    if where == "invitation":  # the link from the e-mail, opened by someone without an account
        client.logout()
        members.invitation_create(None, merchant=merchant, email="bia@example.com", role=Role.FINANCE,
                                  invited_by=merchant.owner)
        link = re.search(r"/dashboard/invitations/[^/\s]+/", mail.outbox[-1].body).group()
        return _ok(client.get(link, **headers))
    if where == "no-merchant":
        client.force_login(UserFactory(email="ana@example.com.br"))
        return _ok(client.get("/dashboard/", **headers), status=403)
    if where == "cancel":
        response = client.post(f"/dashboard/charges/{objects['pending_pix'].pk}/cancel/", **headers)
        return _ok(client.get(response["Location"], **headers))
    if where == "signup-errors":
        client.logout()
        return _ok(client.post("/dashboard/signup/", {"name": "Loja da Ana", "email": "", "password": "a-long-one-1",
                                                      "password_confirm": "another-one-2"}, **headers))
    return _ok(client.get(where, **headers), status=status)


def _ok(response, *, status: int = 200) -> str:
    assert response.status_code == status, response.status_code
    return response.content.decode()


@pytest.mark.parametrize("name", list(PAGES))
def test_every_text_of_every_dashboard_page_is_translated(client, shop, recorded, name):
    page = render(client, shop, name, PT)

    assert '<html lang="pt-br">' in page
    leftovers = leftovers_of(page)
    assert not leftovers, f"text not from the catalog on {name}: {sorted(leftovers)}"
    # Not vacuous: the page asked the catalog for its own texts, among them the one that proves the page.
    assert len(recorded) >= 5
    assert any(PAGES[name][2] in html.unescape(chunk) for chunk in DashboardChunks.of(page)), PAGES[name][2]
    assert untranslated_msgids(recorded) == []


class DashboardChunks:
    @staticmethod
    def of(page: str) -> list[str]:
        parser = DashboardText()
        parser.feed(page)
        return [chunk.replace(OPEN, "").replace(CLOSE, "") for chunk in parser.chunks]


@pytest.mark.parametrize("name", list(PAGES))
def test_every_dashboard_page_still_reads_in_english(client, shop, name):
    page = html.unescape(render(client, shop, name, EN))

    assert '<html lang="en">' in page
    assert PAGES[name][1] in page
    assert PAGES[name][2] not in page
    assert not re.search(r"\b(Cobranças|Saques|Extrato|Situação|horário de Brasília)\b", page)


def test_the_language_cookie_beats_the_browser(client, shop):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "pt-br"

    page = html.unescape(render(client, shop, "overview", EN))

    assert "Saldo disponível" in page and "Available balance" not in page


# --- The check is not vacuous -----------------------------------------------------------------------------------------
def _with_template(settings, tmp_path, template: str, old: str, new: str) -> None:
    original = (Path(settings.BASE_DIR) / "templates" / template).read_text(encoding="utf-8")
    assert old in original
    (tmp_path / template).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / template).write_text(original.replace(old, new, 1), encoding="utf-8")
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}]


def test_the_check_catches_english_left_in_a_dashboard_template(client, shop, recorded, settings, tmp_path):
    _with_template(settings, tmp_path / "t", "payments/dashboard/overview.html", "<div class=\"stats\">",
                   "<p>Your balance at a glance</p><div class=\"stats\" data-label=\"Balances\">")

    page = render(client, shop, "overview", PT)

    assert leftovers_of(page) == {"Your balance at a glance", "Balances"}


def test_the_check_catches_a_msgid_the_catalog_does_not_translate(client, shop, recorded, settings, tmp_path):
    _with_template(settings, tmp_path / "t", "payments/dashboard/overview.html", "<div class=\"stats\">",
                   "{% translate \"A sentence nobody translated\" %}<div class=\"stats\">")

    page = render(client, shop, "overview", PT)

    assert leftovers_of(page) == set()  # the catalog was asked, and gave the English back...
    assert untranslated_msgids(recorded) == ["A sentence nobody translated"]  # ...which this check catches


def test_the_check_sees_an_untranslated_status_label(client, shop, recorded, monkeypatch):
    """A model label missing from the catalog (a new status, say) shows up as English on the page."""
    key = "charge status\x04Paid"
    for mapping in trans_real.translation("pt-br")._catalog._catalogs:  # Django's TranslationCatalog
        if key in mapping:
            monkeypatch.delitem(mapping, key)

    page = render(client, shop, "charges", PT)

    assert "Paid" in leftovers_of(page)
    assert key in untranslated_msgids(recorded)


# --- The labels of the models' choices --------------------------------------------------------------------------------
@pytest.mark.parametrize(("choices", "words"), [
    (PayinStatus, labels.CHARGE_STATUS), (RefundStatus, labels.REFUND_STATUS), (PayoutStatus, labels.PAYOUT_STATUS),
    (DisputeStatus, labels.DISPUTE_STATUS), (DisputeKind, labels.DISPUTE_KIND),
    (PaymentMethod, labels.PAYMENT_METHOD), (KycStatus, labels.KYC_STATUS), (AccountEvent.Action, labels.ACCOUNT_EVENT),
])
def test_every_choice_the_dashboard_shows_has_its_words(choices, words):
    """The templates translate a model's label with `{% translate obj.get_x_display context ... %}`: the msgids in
    payments/dashboard/labels.py must be exactly the models' labels."""
    with translation.override(None):
        assert {value: str(words[value]) for value in choices.values} == dict(choices.choices)


def test_delivery_codes_and_labels_have_their_words():
    with translation.override(None):
        assert {value: (str(code), str(label)) for value, (code, label) in labels.DELIVERY_STATUS.items()} == {
            value: (value, label) for value, label in Delivery.Status.choices}


# --- Times say their zone ---------------------------------------------------------------------------------------------
def test_dashboard_times_say_their_zone_in_both_languages():
    moment = datetime(2026, 11, 21, 1, 39, 7, tzinfo=UTC)  # still the 20th in Sao Paulo

    with translation.override("pt-br"):
        assert sp_zoned(moment) == (
            '<time class="zoned" datetime="2026-11-20T22:39:07-03:00"><span class="when">20/11/2026 22:39</span> '
            '<span class="zone">(horário de Brasília)</span></time>')  # each part on one line (issue 37)
        assert strip_tags(sp_zoned(moment, "seconds")) == "20/11/2026 22:39:07 (horário de Brasília)"
    with translation.override("en"):
        assert strip_tags(sp_zoned(moment)) == "20/11/2026 22:39 (Brasília time)"
    assert sp_zoned(None) == sp_zoned("2026-11-21") == ""


def test_a_charge_page_shows_its_times_with_the_zone(client, shop):
    merchant, objects = shop
    client.force_login(merchant.owner)
    payin = objects["paid_pix"]

    portuguese = html.unescape(client.get(f"/dashboard/charges/{payin.pk}/", **PT).content.decode())
    english = html.unescape(client.get(f"/dashboard/charges/{payin.pk}/", **EN).content.decode())

    with translation.override("pt-br"):
        assert f"<dd>{sp_zoned(payin.paid_at)}</dd>" in portuguese
    with translation.override("en"):
        assert f"<dd>{sp_zoned(payin.paid_at)}</dd>" in english
    assert "(horário de Brasília)" in portuguese and "(Brasília time)" in english


def test_the_password_reset_email_follows_the_language(client, shop):
    client.post("/dashboard/password-reset/", {"email": "ana@example.com"}, **PT)

    assert "Alguém pediu para redefinir a senha" in mail.outbox[-1].body


# --- The API keeps its English ----------------------------------------------------------------------------------------
def test_the_api_answers_the_refusals_the_dashboard_translates_in_english_whatever_the_browser_asks(api):
    """The same refusals as the pages above, through POST /payout with `Accept-Language: pt-BR`: the whole body is
    the English one; a stored idempotent answer (JSON in the database) replays it byte for byte."""

    def post(body: dict, **headers):
        response = api.post("/payout", body, format="json", HTTP_ACCEPT_LANGUAGE="pt-BR,pt;q=0.9", **headers)
        assert response["Content-Type"] == "application/json"
        assert response.get("Content-Language", "en") == "en"
        return response.status_code, response.json(), response["X-Request-Id"]

    def body(**error) -> dict:
        return {"error": {"type": "invalid_request_error", "param": None, "details": [], **error}}

    valid = {"amount": 1000, "pixKeyType": "EMAIL", "pixKey": "ana@example.com", "referenceId": "payout-en-1"}

    status, got, request_id = post({**valid, "pixKeyType": "CPF", "pixKey": "123"})
    assert (status, got) == (400, body(code="validation_error", message="The request has invalid fields",
                                       param="pixKey", requestId=request_id, details=[{
                                           "param": "pixKey", "code": "invalid_pix_key",
                                           "message": "Must be 11 digits, for pixKeyType CPF."}]))

    status, got, request_id = post(valid)
    assert (status, got) == (400, body(code="insufficient_balance", message="Insufficient balance",
                                       requestId=request_id))

    private = {**valid, "webhookUrl": "https://10.0.0.7/hooks"}
    expected = body(code="invalid_webhook_url", message="The webhook URL is not accepted", param="webhookUrl",
                    details=[{"param": "webhookUrl", "code": "invalid_webhook_url",
                              "message": "The webhook URL is not accepted: its address is not public"}])
    for _ in range(2):  # the first answer is stored under the key, the second replays it
        status, got, request_id = post(private, HTTP_IDEMPOTENCY_KEY="payout-en-private")
        assert (status, got) == (400, {"error": {**expected["error"], "requestId": got["error"]["requestId"]}})
