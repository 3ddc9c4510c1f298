"""The dashboard's payments pages (SPEC §9) as a merchant uses them: the overview, charges, payouts and the statement,
scoped to the merchant and the session's mode, with money as R$ 1.234,56 and times in America/Sao_Paulo. Data is made
through the services, so the ledger check after each test holds."""

from __future__ import annotations

import csv
import html
import io
import re
from datetime import UTC, datetime, time, timedelta

import pytest
from django.db import connection
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.models import KycStatus
from core import dates
from payments.dashboard import charts
from payments.dashboard import forms as dashboard_forms
from payments.dashboard import pages as dashboard_pages
from payments.ledger import services as ledger
from payments.models import Dispute, DisputeStatus, LedgerEntry, Payin, PayinStatus, Payout, PayoutStatus, Refund
from payments.payins import refunds
from payments.payins import sandbox as payin_sandbox
from payments.payins import services as payins
from payments.payins.validation import payin_request_validate
from payments.payouts import services as payouts
from payments.payouts.validation import payout_request_validate
from payments.templatetags.payments_format import sp_datetime
from tests.factories import ApiKeyFactory, MerchantFactory, UserFactory
from webhooks.models import Delivery, WebhookEndpoint

CHARGE_LINK = re.compile(r'href="/dashboard/charges/([0-9a-f-]{36})/"')
PAYOUT_LINK = re.compile(r'href="/dashboard/payouts/([0-9a-f-]{36})/"')


@pytest.fixture(autouse=True)
def _fees(settings):
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349
    settings.FEE_PAYOUT_FIXED = 0
    settings.PAYOUT_MAX_AMOUNT, settings.PAYOUT_DAILY_MAX = 5_000_000, 20_000_000


@pytest.fixture
def dash(client, merchant):
    """The merchant's browser, logged in, in test mode (a new session's mode)."""
    client.force_login(merchant.owner)
    return client


def live(client) -> None:
    session = client.session
    session["livemode"] = True
    session.save()


# --- Data, made through the services ---------------------------------------------------------------------------------
def charge(merchant, method: str = "PIX", *, amount: int = 5000, livemode: bool = False, reference_id: str = "order-1",
           **fields) -> Payin:
    body = {"paymentMethod": method, "amount": amount, "referenceId": reference_id, "payerIp": "203.0.113.9",
            "isPhysicalProduct": False, "items": [{"title": "Caneca", "quantity": 2, "unitPrice": amount // 2}],
            "customer": {"name": "Ana Souza", "document": "529.982.247-25", "email": "ana@example.com"}, **fields}
    if method == "BOLETO":
        body["customer"].update(phone="(11) 98765-4321", address={
            "street": "Av. Paulista", "number": "1000", "zipCode": "01310100", "city": "São Paulo", "state": "SP"})
    if method == "CREDIT_CARD":
        body["card"] = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12",
                        "expirationYear": "2030", "cvv": "123"}
    data = payin_request_validate(body, merchant=merchant, livemode=livemode, today=dates.sao_paulo_today())
    return payins.payin_create(merchant=merchant, livemode=livemode, data=data)


def paid(merchant, method: str = "PIX", *, amount: int = 10000, livemode: bool = False, **fields) -> Payin:
    payin = charge(merchant, method, amount=amount, livemode=livemode, **fields)
    if method != "CREDIT_CARD":
        if livemode:
            payins.payin_pay(payin_id=payin.pk)
        else:
            payin_sandbox.payin_simulate(merchant=merchant, payin_id=payin.pk, action="pay")
    payin.refresh_from_db()
    return payin


def fund(merchant, amount: int, *, livemode: bool = False, reason: str = "Initial funds") -> None:
    ledger.adjustment_create(merchant=merchant, livemode=livemode, amount=amount, reason=reason,
                               staff=UserFactory(is_staff=True))


def payout(merchant, amount: int = 5000, *, livemode: bool = False, reference_id: str = "payout-1",
           **fields) -> Payout:
    body = {"amount": amount, "pixKeyType": "EMAIL", "pixKey": "ana@example.com", "referenceId": reference_id,
            **fields}
    return payouts.payout_create(merchant=merchant, livemode=livemode,
                                 data=payout_request_validate(body, merchant=merchant))


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def field_error(page: str, field: str) -> str:
    """The text of the block of the input `field`, which must be marked as having an error: the error is beside the
    field, not only at the top of the page."""
    start = page.index(f'<label for="id_{field}"')
    block_start = page.rindex('<div class="field', 0, start)
    assert "has-error" in page[block_start:start], f"no error beside {field}"
    ends = [i for i in (page.find('<div class="field', start), page.find("</form>", start)) if i != -1]
    block = page[block_start:min(ends)]
    assert 'aria-invalid="true"' in block
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", block))


def message_of(client, response) -> str:
    assert response.status_code == 302, response.status_code
    return text_of(client.get(response["Location"]))


def hidden_fields(page: str) -> dict:
    return {name: html.unescape(value) for name, value in
            re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', page)}


# === Overview ========================================================================================================
def test_overview_shows_balances_volume_chart_and_recent_activity(dash, merchant):
    payin = paid(merchant, amount=123456, reference_id="order-big")  # fee 1222
    sent = payout(merchant, 2234, reference_id="rent-nov")

    page = text_of(dash.get("/dashboard/"))

    assert re.search(r"Available balance</h2>\s*<p class=\"stat-value\">R\$ 1\.200,00<", page)
    assert re.search(r"Pending balance</h2>\s*<p class=\"stat-value\">R\$ 0,00<", page)
    assert re.search(r"Paid today</h2>\s*<p class=\"stat-value\">R\$ 1\.234,56<", page)
    assert re.search(r"Paid this month</h2>\s*<p class=\"stat-value\">R\$ 1\.234,56<", page)
    assert page.count('<rect class="bar"') == 30
    assert 'role="img" aria-label="Paid volume per day, last 30 days. Total R$ 1.234,56 in 30 days;' in page
    assert "<title>Paid volume per day, last 30 days</title>" in page
    assert "Show as a table" in page
    assert sp_datetime(payin.created_at) in page and "order-big" in page
    assert "rent-nov" in page and "-R$ 22,34" in page
    assert f"/dashboard/payouts/{sent.pk}/" in page and f"/dashboard/charges/{payin.pk}/" in page
    assert "Create your first charge" not in page


def test_overview_empty_states_point_to_the_next_step(dash):
    page = text_of(dash.get("/dashboard/"))

    assert "Create your first API key" in page
    assert "Create your first charge" in page and "curl -u PUBLIC_KEY:SECRET_KEY http://" in page
    assert "No payments in the last 30 days." in page
    assert page.count('<rect class="bar"') == 30
    assert "Submit your KYC" not in page  # the factory's merchant is approved


def test_overview_keeps_the_kyc_prompt_and_the_key_count(client, db):
    merchant = MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED)
    ApiKeyFactory.with_secret(merchant=merchant, livemode=False)
    client.force_login(merchant.owner)

    page = text_of(client.get("/dashboard/"))

    assert "Submit your KYC to accept live payments" in page
    assert "1 active test key pair." in page and "Create your first API key" not in page


def test_overview_counts_only_the_sessions_mode(dash, merchant):
    paid(merchant, amount=10000, livemode=True)
    live(dash)

    live_page = text_of(dash.get("/dashboard/"))
    dash.post("/dashboard/mode/", {"mode": "test"})
    test_page = text_of(dash.get("/dashboard/"))

    assert re.search(r"Paid today</h2>\s*<p class=\"stat-value\">R\$ 100,00<", live_page)
    assert re.search(r"Paid today</h2>\s*<p class=\"stat-value\">R\$ 0,00<", test_page)
    assert "Create your first charge" in test_page


def test_daily_volume_buckets_by_sao_paulo_day(merchant):
    today = dates.sao_paulo_today()
    late = paid(merchant, amount=20000, reference_id="late-night")
    paid(merchant, amount=5000, reference_id="today")
    paid(MerchantFactory(), amount=7000)  # another merchant's money is not ours
    paid(merchant, amount=9000, livemode=True)  # nor the other mode's
    # 01:30 UTC is 22:30 of the day before in Sao Paulo (UTC-3).
    instant = datetime.combine(today - timedelta(days=3), time(1, 30), tzinfo=UTC)
    LedgerEntry.objects.filter(transaction__object_id=str(late.pk), line_type="payin").update(created_at=instant)

    days = charts.daily_volume(merchant=merchant, livemode=False, first=today - timedelta(days=29), last=today)

    assert len(days) == 30 and days[0].day == today - timedelta(days=29) and days[-1].day == today
    by_day = {d.day: (d.amount, d.count) for d in days if d.amount}
    assert by_day == {today - timedelta(days=4): (20000, 1), today: (5000, 1)}


# === Charges =========================================================================================================
def test_charge_list_shows_amounts_times_and_customers(dash, merchant):
    payin = charge(merchant, amount=123456, reference_id="order-42")

    response = dash.get("/dashboard/charges/")

    page = text_of(response)
    assert response.status_code == 200
    assert "R$ 1.234,56" in page and sp_datetime(payin.created_at) in page
    assert ">Pix<" in page and ">Pending<" in page and "order-42" in page and "Ana Souza" in page
    assert "<caption" in page


def test_charge_list_empty_state(dash):
    page = text_of(dash.get("/dashboard/charges/"))

    assert "Create your first charge" in page and "/payin" in page


def test_charge_list_filters_and_search(dash, merchant):
    pending = charge(merchant, reference_id="pending-pix")
    paid_pix = paid(merchant, reference_id="paid-pix")
    boleto = charge(merchant, "BOLETO", reference_id="a-boleto")
    card = paid(merchant, "CREDIT_CARD", reference_id="a-card")

    def ids(params: dict) -> set[str]:
        response = dash.get("/dashboard/charges/", params)
        assert response.status_code == 200
        return set(CHARGE_LINK.findall(response.content.decode()))

    today = dates.sao_paulo_today()
    assert ids({"status": "PAID"}) == {str(paid_pix.pk), str(card.pk)}
    assert ids({"method": "BOLETO"}) == {str(boleto.pk)}
    assert ids({"status": "PENDING", "method": "PIX"}) == {str(pending.pk)}
    assert ids({"q": str(card.pk)}) == {str(card.pk)}
    assert ids({"q": "paid-pix"}) == {str(paid_pix.pk)}
    assert ids({"created_from": today.isoformat(), "created_to": today.isoformat()}) == {
        str(p.pk) for p in (pending, paid_pix, boleto, card)}
    assert ids({"created_from": (today + timedelta(days=1)).isoformat()}) == set()
    assert "No charges match" in text_of(dash.get("/dashboard/charges/", {"q": "nothing-like-it"}))


def test_charge_list_shows_an_invalid_date_beside_its_input(dash, merchant):
    charge(merchant)

    response = dash.get("/dashboard/charges/", {"created_from": "31/02/2026"})

    assert response.status_code == 200
    assert "Enter a date like 31/12/2026." in field_error(text_of(response), "created_from")


def test_charge_list_pages_by_cursor_without_duplicates(dash, merchant, monkeypatch):
    monkeypatch.setattr(dashboard_pages, "PAGE_SIZE", 2)
    made = {str(charge(merchant, reference_id=f"order-{i}").pk) for i in range(5)}
    charge(merchant, "BOLETO", reference_id="not-pix")

    seen, url, pages = [], "/dashboard/charges/?method=PIX", 0
    while url:
        page = dash.get(url).content.decode()
        seen += CHARGE_LINK.findall(page)
        pages += 1
        next_link = re.search(r'<a class="button" href="([^"]+)" rel="next">', page)
        url = "/dashboard/charges/" + html.unescape(next_link.group(1)) if next_link else None
        if url:
            assert "method=PIX" in url and "cursor=" in url

    assert pages == 3
    assert len(seen) == 5 and set(seen) == made


def test_a_forged_cursor_starts_again_from_the_newest(dash, merchant):
    charge(merchant)

    response = dash.get("/dashboard/charges/", {"cursor": "not-a-cursor"})

    assert response.status_code == 200 and len(CHARGE_LINK.findall(response.content.decode())) == 1


def test_charge_detail_shows_fields_timeline_and_webhook_deliveries(dash, merchant):
    WebhookEndpoint.objects.create(merchant=merchant, livemode=False, url="https://hooks.example.com/pagamentos")
    payin = paid(merchant, amount=5000, reference_id="order-7", metadata={"order": "7"})

    page = text_of(dash.get(f"/dashboard/charges/{payin.pk}/"))

    assert "Pix charge of R$ 50,00" in page and ">Paid<" in page
    assert re.search(r"<dt>Fee</dt><dd>R\$ 0,50</dd>", page)
    assert re.search(r"<dt>Net</dt><dd>R\$ 49,50</dd>", page)
    assert re.search(r"<dt>Refunded</dt><dd>R\$ 0,00</dd>", page)
    assert f'value="{payin.pix_payload}"' in page and payin.pix_txid in page
    assert "529.982.247-25" in page and "ana@example.com" in page
    assert "Caneca" in page and "R$ 25,00" in page
    assert "<code>order</code>" in page
    assert page.index("<code>payin.created</code>") < page.index("<code>payin.paid</code>")
    for delivery in Delivery.objects.filter(merchant=merchant):
        assert f"/dashboard/webhooks/deliveries/{delivery.pk}/" in page
    assert page.count("https://hooks.example.com/pagamentos") == 2
    assert sp_datetime(payin.paid_at) in page


def test_boleto_and_card_details(dash, merchant):
    boleto = charge(merchant, "BOLETO", amount=10000)
    card = paid(merchant, "CREDIT_CARD", amount=10000)

    boleto_page = text_of(dash.get(f"/dashboard/charges/{boleto.pk}/"))
    card_page = text_of(dash.get(f"/dashboard/charges/{card.pk}/"))

    assert boleto.boleto_digitable_line in boleto_page and boleto.boleto_due_date.strftime("%d/%m/%Y") in boleto_page
    assert "Printable boleto" in boleto_page and "01310-100" in boleto_page
    assert "/refund/" not in boleto_page  # boletos are not refundable
    assert "Visa •••• 1111" in card_page and "4111111111111111" not in card_page
    assert card.authorization_code in card_page


def test_another_merchants_or_the_other_modes_objects_are_404(dash, merchant):
    other = MerchantFactory()
    fund(other, 100000)
    theirs = charge(other)
    their_payout = payout(other)
    live_charge = charge(merchant, livemode=True)
    fund(merchant, 100000, livemode=True)
    live_payout = payout(merchant, livemode=True)

    for url in (f"/dashboard/charges/{theirs.pk}/", f"/dashboard/charges/{live_charge.pk}/",
                f"/dashboard/payouts/{their_payout.pk}/", f"/dashboard/payouts/{live_payout.pk}/"):
        assert dash.get(url).status_code == 404, url
    for url, body in ((f"/dashboard/charges/{theirs.pk}/cancel/", {}),
                      (f"/dashboard/charges/{theirs.pk}/simulate/", {"action": "pay"}),
                      (f"/dashboard/charges/{live_charge.pk}/cancel/", {}),
                      (f"/dashboard/payouts/{their_payout.pk}/cancel/", {}),
                      (f"/dashboard/payouts/{live_payout.pk}/cancel/", {})):
        assert dash.post(url, body).status_code == 404, url
    assert dash.get("/dashboard/charges/not-a-uuid/").status_code == 404
    assert Payin.objects.get(pk=theirs.pk).status == PayinStatus.PENDING
    assert Payout.objects.get(pk=live_payout.pk).status == PayoutStatus.PENDING
    assert CHARGE_LINK.findall(dash.get("/dashboard/charges/", {"q": str(theirs.pk)}).content.decode()) == []


# --- Sandbox, cancel, refund -----------------------------------------------------------------------------------------
def test_sandbox_buttons_in_test_mode_pay_a_charge(dash, merchant):
    payin = charge(merchant)
    before = text_of(dash.get(f"/dashboard/charges/{payin.pk}/"))

    response = dash.post(f"/dashboard/charges/{payin.pk}/simulate/", {"action": "pay"})

    assert 'value="pay">Simulate payment' in before and 'value="expire">Expire' in before
    assert "Simulate MED" not in before
    assert response["Location"] == f"/dashboard/charges/{payin.pk}/"
    after = message_of(dash, response)
    assert "Payment simulated: the charge is paid." in after
    assert Payin.objects.get(pk=payin.pk).status == PayinStatus.PAID
    assert "Simulate payment" not in after and 'value="med">Simulate MED' in after  # a paid Pix: a MED (issue 14)


def test_sandbox_expire_and_chargeback(dash, merchant):
    pending = charge(merchant, reference_id="to-expire")
    card = paid(merchant, "CREDIT_CARD", reference_id="to-charge-back")

    dash.post(f"/dashboard/charges/{pending.pk}/simulate/", {"action": "expire"})
    response = dash.post(f"/dashboard/charges/{card.pk}/simulate/", {"action": "chargeback"})

    assert Payin.objects.get(pk=pending.pk).status == PayinStatus.EXPIRED
    # Issue 14: a chargeback opens a dispute (the charge stays PAID until it is decided).
    assert "Chargeback simulated: a dispute is open and its amount is held." in message_of(dash, response)
    assert Payin.objects.get(pk=card.pk).status == PayinStatus.PAID
    assert Dispute.objects.get(payin=card).status == DisputeStatus.OPEN


def test_sandbox_action_not_allowed_is_a_message(dash, merchant):
    card = paid(merchant, "CREDIT_CARD")

    response = dash.post(f"/dashboard/charges/{card.pk}/simulate/", {"action": "pay"})

    assert "cannot be paid" in message_of(dash, response)


def test_no_sandbox_in_live_mode(dash, merchant):
    payin = charge(merchant, livemode=True)
    live(dash)

    page = text_of(dash.get(f"/dashboard/charges/{payin.pk}/"))
    response = dash.post(f"/dashboard/charges/{payin.pk}/simulate/", {"action": "pay"})

    assert "Simulate payment" not in page and "Sandbox" not in page
    assert "Cancel charge" in page
    assert "Sandbox controls work in test mode only." in message_of(dash, response)
    assert Payin.objects.get(pk=payin.pk).status == PayinStatus.PENDING


def test_cancel_a_pending_charge(dash, merchant):
    payin = charge(merchant, "BOLETO")

    response = dash.post(f"/dashboard/charges/{payin.pk}/cancel/")

    assert "Charge canceled." in message_of(dash, response)
    assert Payin.objects.get(pk=payin.pk).status == PayinStatus.CANCELED


def test_refund_part_of_a_card_charge_in_reais(dash, merchant):
    card = paid(merchant, "CREDIT_CARD", amount=10000)
    page = text_of(dash.get(f"/dashboard/charges/{card.pk}/"))
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)

    response = dash.post(f"/dashboard/charges/{card.pk}/refund/", {"amount": "12,34", "reason": "broken mug",
                                                                    "token": token})

    assert 'name="amount" value="100,00"' in page  # what is left, by default
    assert "Refund of R$ 12,34 succeeded." in message_of(dash, response)
    refund = Refund.objects.get(payin=card)
    assert (refund.amount, refund.reason) == (1234, "broken mug")
    assert Payin.objects.get(pk=card.pk).status == PayinStatus.PARTIALLY_REFUNDED


def test_refund_blank_amount_refunds_what_is_left_and_a_pix_refund_waits_for_the_bank(dash, merchant):
    payin = paid(merchant, amount=10000)
    fund(merchant, 99)  # fees are not returned: the charge's net alone cannot refund all of it

    response = dash.post(f"/dashboard/charges/{payin.pk}/refund/", {"amount": "", "token": "t1"})

    assert "Refund of R$ 100,00 requested." in message_of(dash, response)
    assert Refund.objects.get(payin=payin).amount == 10000


def test_refund_more_than_left_is_an_error_beside_the_amount(dash, merchant):
    card = paid(merchant, "CREDIT_CARD", amount=10000)

    response = dash.post(f"/dashboard/charges/{card.pk}/refund/", {"amount": "100,01", "token": "t1"})

    assert response.status_code == 400
    assert "At most R$ 100,00 of this charge can still be refunded." in field_error(text_of(response), "amount")
    assert not Refund.objects.exists()


def test_refund_with_insufficient_balance_is_an_error_beside_the_amount(dash, merchant):
    payin = paid(merchant, amount=10000)  # available 99,01
    payout(merchant, 9000)  # available 9,01

    response = dash.post(f"/dashboard/charges/{payin.pk}/refund/", {"amount": "50,00", "token": "t1"})

    assert response.status_code == 400
    error = field_error(text_of(response), "amount")
    assert "Insufficient balance" in error and "R$ 9,01" in error
    assert not Refund.objects.exists()


def test_refund_amount_that_is_not_reais(dash, merchant):
    card = paid(merchant, "CREDIT_CARD")

    response = dash.post(f"/dashboard/charges/{card.pk}/refund/", {"amount": "12,345", "token": "t1"})

    assert response.status_code == 400
    assert "Enter an amount in reais" in field_error(text_of(response), "amount")


def test_refund_form_sent_twice_refunds_once(dash, merchant):
    card = paid(merchant, "CREDIT_CARD", amount=10000)
    form = {"amount": "10,00", "token": "same-form"}

    dash.post(f"/dashboard/charges/{card.pk}/refund/", form)
    second = dash.post(f"/dashboard/charges/{card.pk}/refund/", form)

    assert "This refund was already submitted" in message_of(dash, second)
    assert Refund.objects.filter(payin=card).count() == 1


def test_refund_form_corrected_after_an_error_can_be_sent(dash, merchant):
    card = paid(merchant, "CREDIT_CARD", amount=10000)
    form = {"amount": "500,00", "token": "one-form"}

    first = dash.post(f"/dashboard/charges/{card.pk}/refund/", form)
    second = dash.post(f"/dashboard/charges/{card.pk}/refund/", {**form, "amount": "5,00"})

    assert first.status_code == 400 and second.status_code == 302
    assert Refund.objects.get(payin=card).amount == 500


@pytest.mark.parametrize(("text", "cents"), [
    ("12,34", 1234), ("12.34", 1234), ("1.234,56", 123456), ("R$ 1.234,56", 123456), ("1234", 123400),
    ("1.234", 123400), ("0,5", 50), ("50", 5000), (" 7,00 ", 700), ("1.234.567,89", 123456789), ("12.3", 1230),
])
def test_cents_parse_reads_reais_as_people_type_them(text, cents):
    assert dashboard_forms.cents_parse(text) == cents


@pytest.mark.parametrize("text", ["", "abc", "12,345", "1,234", "1.23.4", "12,", "-5", "1e3", "12.345,6,7", "٣"])
def test_cents_parse_refuses_what_is_ambiguous(text):
    assert dashboard_forms.cents_parse(text) is None


# === Payouts =========================================================================================================
def test_payout_list_and_detail(dash, merchant):
    fund(merchant, 100000)
    sent = payout(merchant, 5000, reference_id="supplier-9", beneficiaryName="Fornecedor Ltda")

    listing = text_of(dash.get("/dashboard/payouts/"))
    detail = text_of(dash.get(f"/dashboard/payouts/{sent.pk}/"))

    assert "R$ 50,00" in listing and "EMAIL" in listing and ">Pending<" in listing and "supplier-9" in listing
    assert "Fornecedor Ltda" in listing and sp_datetime(sent.created_at) in listing
    assert "Available to pay out: <strong>R$ 950,00</strong>" in listing
    assert "Payout of R$ 50,00" in detail and sent.external_id in detail and "ana@example.com" in detail
    assert "<code>payout.created</code>" in detail
    assert "Cancel payout" in detail and 'value="complete">Simulate completion' in detail


def test_payouts_empty_state(dash):
    assert "Send your first payout" in text_of(dash.get("/dashboard/payouts/"))


def test_payout_list_filters_search_and_pages(dash, merchant, monkeypatch):
    monkeypatch.setattr(dashboard_pages, "PAGE_SIZE", 2)
    fund(merchant, 100000)
    made = [payout(merchant, 1000, reference_id=f"p-{i}") for i in range(3)]
    payouts.payout_cancel(merchant=merchant, livemode=False, payout_id=made[0].pk)

    def ids(params: dict) -> list[str]:
        return PAYOUT_LINK.findall(dash.get("/dashboard/payouts/", params).content.decode())

    first = dash.get("/dashboard/payouts/").content.decode()
    next_url = html.unescape(re.search(r'<a class="button" href="([^"]+)" rel="next">', first).group(1))
    second = dash.get("/dashboard/payouts/" + next_url).content.decode()
    assert PAYOUT_LINK.findall(first) + PAYOUT_LINK.findall(second) == [str(p.pk) for p in reversed(made)]
    assert 'rel="next"' not in second
    assert ids({"status": "CANCELED"}) == [str(made[0].pk)]
    assert ids({"q": "p-2"}) == [str(made[2].pk)]
    assert ids({"q": str(made[1].pk)}) == [str(made[1].pk)]


def test_payout_cancel_gives_the_money_back(dash, merchant):
    fund(merchant, 10000)
    sent = payout(merchant, 4000)

    response = dash.post(f"/dashboard/payouts/{sent.pk}/cancel/")

    assert "Payout canceled; R$ 40,00 is back in your balance." in message_of(dash, response)
    assert Payout.objects.get(pk=sent.pk).status == PayoutStatus.CANCELED
    assert "R$ 100,00" in text_of(dash.get("/dashboard/payouts/"))


def test_payout_sandbox_complete_then_return(dash, merchant):
    fund(merchant, 10000)
    sent = payout(merchant, 4000)

    completed = dash.post(f"/dashboard/payouts/{sent.pk}/simulate/", {"action": "complete"})
    page = message_of(dash, completed)
    returned = dash.post(f"/dashboard/payouts/{sent.pk}/simulate/", {"action": "return"})

    assert "The payout completed." in page and 'value="return">Simulate return' in page
    assert "Cancel payout" not in page
    assert "returned the payout" in message_of(dash, returned)
    assert Payout.objects.get(pk=sent.pk).status == PayoutStatus.RETURNED


def test_no_payout_sandbox_in_live_mode(dash, merchant):
    fund(merchant, 10000, livemode=True)
    sent = payout(merchant, 4000, livemode=True)
    live(dash)

    page = text_of(dash.get(f"/dashboard/payouts/{sent.pk}/"))
    response = dash.post(f"/dashboard/payouts/{sent.pk}/simulate/", {"action": "complete"})

    assert "Simulate completion" not in page and "Cancel payout" in page
    assert "test mode only" in message_of(dash, response)
    assert Payout.objects.get(pk=sent.pk).status == PayoutStatus.PENDING


PAYOUT_FORM = {"amount": "50,00", "pix_key_type": "EMAIL", "pix_key": "Ana@Example.com", "beneficiary_name": "Ana",
               "beneficiary_document": "", "description": "Comissão", "reference_id": "commission-11"}


def test_new_payout_is_a_form_then_a_confirmation_then_exactly_one_payout(dash, merchant):
    fund(merchant, 100000)

    form_page = text_of(dash.get("/dashboard/payouts/new/"))
    review = dash.post("/dashboard/payouts/new/", PAYOUT_FORM)
    confirmation = text_of(review)
    confirm_form = {**hidden_fields(confirmation), "action": "confirm"}
    created = dash.post("/dashboard/payouts/new/", confirm_form)
    created_page = message_of(dash, created)
    again = dash.post("/dashboard/payouts/new/", confirm_form)

    assert re.search(r'name="reference_id" value="payout-\d{8}-[0-9a-f]{8}"', form_page)
    assert '<label for="id_amount">' in form_page and '<label for="id_pix_key">' in form_page
    assert review.status_code == 200
    assert "Send <strong>R$ 50,00</strong> to EMAIL key <code>ana@example.com</code> (Ana)?" in confirmation
    assert re.search(r"<dt>Available after</dt><dd>R\$ 950,00</dd>", confirmation)
    assert confirm_form["amount"] == "50,00" and confirm_form["reference_id"] == "commission-11"
    sent = Payout.objects.get()
    assert created["Location"] == f"/dashboard/payouts/{sent.pk}/"
    assert "Payout of R$ 50,00 sent to EMAIL key Ana@Example.com." in created_page
    assert (sent.amount, sent.pix_key_normalized, sent.description) == (5000, "ana@example.com", "Comissão")
    assert again["Location"] == f"/dashboard/payouts/{sent.pk}/"
    assert "This payout was already sent" in message_of(dash, again)
    assert Payout.objects.count() == 1


def test_new_payout_confirmation_page_writes_nothing(dash, merchant):
    fund(merchant, 100000)

    dash.post("/dashboard/payouts/new/", PAYOUT_FORM)
    dash.post("/dashboard/payouts/new/", {**PAYOUT_FORM, "action": "edit"})

    assert not Payout.objects.exists()


def test_new_payout_field_errors_beside_the_fields(dash, merchant):
    fund(merchant, 100000)

    response = dash.post("/dashboard/payouts/new/", {**PAYOUT_FORM, "pix_key_type": "CPF", "pix_key": "123",
                                                     "beneficiary_document": "11111111111",
                                                     "reference_id": "bad ref!"})

    page = text_of(response)
    assert response.status_code == 400
    assert field_error(page, "pix_key") == (" Pix key * Must be 11 digits, for key type CPF. CPF or CNPJ without "
                                            "punctuation, e-mail, +55 phone, or random key (EVP). ")
    assert field_error(page, "beneficiary_document") == (
        " Beneficiary CPF or CNPJ (optional) Must not be one digit repeated: no CPF is. For a CPF or CNPJ key it must "
        "be the key's own document. ")
    assert field_error(page, "reference_id").startswith(
        " Reference id * Must have only letters, digits, '.', '_', ':' and '-' (no spaces). Your own id for this "
        "payout. It is unique: the same reference is never sent twice. ")
    assert not Payout.objects.exists()


def test_new_payout_amount_errors(dash, merchant):
    fund(merchant, 100000)

    not_reais = dash.post("/dashboard/payouts/new/", {**PAYOUT_FORM, "amount": "cinquenta"})
    too_big = dash.post("/dashboard/payouts/new/", {**PAYOUT_FORM, "amount": "50.000,01"})
    too_much = dash.post("/dashboard/payouts/new/", {**PAYOUT_FORM, "amount": "1.000,01"})

    assert "Enter an amount in reais" in field_error(text_of(not_reais), "amount")
    assert "At most R$ 50.000,00 per payout." in field_error(text_of(too_big), "amount")
    error = field_error(text_of(too_much), "amount")
    assert "Insufficient balance" in error and "R$ 1.000,00" in error
    assert not Payout.objects.exists()


def test_new_payout_balance_spent_between_review_and_confirm(dash, merchant):
    fund(merchant, 10000)
    review = text_of(dash.post("/dashboard/payouts/new/", PAYOUT_FORM))
    payout(merchant, 8000, reference_id="meanwhile")

    response = dash.post("/dashboard/payouts/new/", {**hidden_fields(review), "action": "confirm"})

    assert response.status_code == 400
    assert "Insufficient balance" in field_error(text_of(response), "amount")
    assert Payout.objects.count() == 1


def test_new_payout_daily_limit(dash, merchant, settings):
    settings.PAYOUT_DAILY_MAX = 6000
    fund(merchant, 100000)
    payout(merchant, 2000, reference_id="earlier")
    review = text_of(dash.post("/dashboard/payouts/new/", PAYOUT_FORM))

    response = dash.post("/dashboard/payouts/new/", {**hidden_fields(review), "action": "confirm"})

    assert "daily limit of R$ 60,00" in field_error(text_of(response), "amount")
    assert Payout.objects.count() == 1


def test_new_payout_reference_already_used(dash, merchant):
    fund(merchant, 100000)
    payout(merchant, 1000, reference_id="commission-11")

    response = dash.post("/dashboard/payouts/new/", PAYOUT_FORM)

    assert "Already used by a payout of R$ 10,00" in field_error(text_of(response), "reference_id")


def test_live_payouts_need_approved_kyc(client, db):
    merchant = MerchantFactory(kyc_status=KycStatus.SUBMITTED)
    client.force_login(merchant.owner)
    live(client)

    response = client.post("/dashboard/payouts/new/", {**PAYOUT_FORM, "action": "confirm"})

    assert response["Location"] == "/dashboard/kyc/"
    assert not Payout.objects.exists()


# === Statement =======================================================================================================
def test_statement_lines_with_links_and_signed_amounts(dash, merchant):
    payin = paid(merchant, amount=10000, reference_id="order-5")
    sent = payout(merchant, 5000, reference_id="payout-5")

    page = text_of(dash.get("/dashboard/statement/"))

    assert "Available <strong>R$ 49,01</strong>" in page
    assert "+R$ 100,00" in page and "-R$ 0,99" in page and "-R$ 50,00" in page
    assert ">R$ 99,01<" in page and ">R$ 49,01<" in page
    assert f"/dashboard/charges/{payin.pk}/" in page and f"/dashboard/payouts/{sent.pk}/" in page
    assert ">Charge fee<" in page and ">Payout<" in page and "order-5" in page
    assert page.index("Pix payout to EMAIL key") < page.index("PIX charge")  # newest first


def test_statement_empty_state(dash):
    assert "No movements yet." in text_of(dash.get("/dashboard/statement/"))


def test_statement_pages_without_duplicates(dash, merchant, monkeypatch):
    monkeypatch.setattr(dashboard_pages, "PAGE_SIZE", 2)
    paid(merchant, amount=10000, reference_id="a")
    paid(merchant, amount=20000, reference_id="b")
    fund(merchant, 500)  # 5 lines

    seen, url = [], "/dashboard/statement/"
    while url:
        page = dash.get(url).content.decode()
        seen += re.findall(r'<tr id="line-(\d+)">', page)
        next_link = re.search(r'<a class="button" href="([^"]+)" rel="next">', page)
        url = "/dashboard/statement/" + html.unescape(next_link.group(1)) if next_link else None

    assert len(seen) == 5 and len(set(seen)) == 5


def test_statement_csv_streams_every_line_with_injection_guarded(dash, merchant):
    payin = paid(merchant, amount=10000, reference_id="-cmd")
    fund(merchant, 500, reason='=HYPERLINK("https://evil.example.com")')
    paid(MerchantFactory(), amount=7000, reference_id="not-ours")

    response = dash.get("/dashboard/statement.csv")

    assert isinstance(response, StreamingHttpResponse)
    today = dates.sao_paulo_today().isoformat()
    assert response["Content-Disposition"] == f'attachment; filename="statement-test-{today}.csv"'
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == ["id", "created_at", "type", "balance", "amount_cents", "balance_after_cents", "object_type",
                       "object_id", "reference_id", "description"]
    body = rows[1:]
    assert [(r[2], r[3], r[4], r[5], r[6], r[7], r[8]) for r in body] == [
        ("payin", "available", "10000", "10000", "payin", str(payin.pk), "'-cmd"),
        ("payin_fee", "available", "-99", "9901", "payin", str(payin.pk), "'-cmd"),
        ("adjustment", "available", "500", "10401", "adjustment", body[2][7], ""),
    ]
    assert body[2][9] == '\'=HYPERLINK("https://evil.example.com")'
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r[1]) for r in body)
    assert "not-ours" not in str(rows)


def test_statement_csv_of_a_day_range_and_of_the_live_mode(dash, merchant):
    paid(merchant, amount=10000)
    paid(merchant, amount=3000, livemode=True)
    tomorrow = (dates.sao_paulo_today() + timedelta(days=1)).isoformat()

    future = list(csv.reader(io.StringIO(b"".join(dash.get(
        "/dashboard/statement.csv", {"created_from": tomorrow}).streaming_content).decode())))
    live(dash)
    live_response = dash.get("/dashboard/statement.csv")
    live_rows = list(csv.reader(io.StringIO(b"".join(live_response.streaming_content).decode())))

    assert len(future) == 1  # the header alone
    assert "statement-live-" in live_response["Content-Disposition"]
    assert [r[4] for r in live_rows[1:]] == ["3000", "-30"]




# === Security ========================================================================================================
def test_csrf_is_enforced_on_dashboard_posts(merchant):
    payin = charge(merchant)
    client = Client(enforce_csrf_checks=True)
    client.force_login(merchant.owner)

    response = client.post(f"/dashboard/charges/{payin.pk}/cancel/")

    assert response.status_code == 403
    assert Payin.objects.get(pk=payin.pk).status == PayinStatus.PENDING


def test_every_dashboard_form_carries_a_csrf_token(dash, merchant):
    payin = paid(merchant, "CREDIT_CARD")
    pending = charge(merchant)
    fund(merchant, 100000)
    sent = payout(merchant)

    pages = [text_of(dash.get(url)) for url in (f"/dashboard/charges/{payin.pk}/", f"/dashboard/charges/{pending.pk}/",
                                                f"/dashboard/payouts/{sent.pk}/", "/dashboard/payouts/new/")]

    for page in pages:
        posts = page.count('method="post"')
        assert posts and page.count('name="csrfmiddlewaretoken"') == posts


def test_suspended_merchant_can_read_but_not_post(dash, merchant):
    card = paid(merchant, "CREDIT_CARD", amount=10000)
    pending = charge(merchant)
    fund(merchant, 100000)
    sent = payout(merchant)
    merchant.is_suspended = True
    merchant.save(update_fields=["is_suspended"])

    posts = [
        dash.post(f"/dashboard/charges/{pending.pk}/cancel/"),
        dash.post(f"/dashboard/charges/{pending.pk}/simulate/", {"action": "pay"}),
        dash.post(f"/dashboard/charges/{card.pk}/refund/", {"amount": "10,00", "token": "t"}),
        dash.post(f"/dashboard/payouts/{sent.pk}/cancel/"),
        dash.post(f"/dashboard/payouts/{sent.pk}/simulate/", {"action": "complete"}),
        dash.post("/dashboard/payouts/new/", {**PAYOUT_FORM, "action": "confirm"}),
    ]

    assert all(r.status_code == 302 and r["Location"] == "/dashboard/" for r in posts)
    assert "read-only" in message_of(dash, posts[0])
    assert Payin.objects.get(pk=pending.pk).status == PayinStatus.PENDING
    assert not Refund.objects.exists()
    assert list(Payout.objects.values_list("status", flat=True)) == [PayoutStatus.PENDING]
    for url in ("/dashboard/", "/dashboard/charges/", f"/dashboard/charges/{card.pk}/", "/dashboard/payouts/",
                "/dashboard/statement/"):
        assert dash.get(url).status_code == 200, url


def test_pages_need_a_login(client):
    for url in ("/dashboard/charges/", "/dashboard/payouts/", "/dashboard/payouts/new/", "/dashboard/statement/",
                "/dashboard/statement.csv"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/dashboard/login/"), url


def test_nav_links_and_labelled_inputs(dash):
    page = text_of(dash.get("/dashboard/charges/"))

    assert 'href="/dashboard/charges/" aria-current="page">Charges' in page
    assert 'href="/dashboard/payouts/"' in page and 'href="/dashboard/statement/"' in page
    for name in ("q", "status", "method", "created_from", "created_to"):
        assert f'<label for="id_{name}">' in page and f'id="id_{name}"' in page
    # Days are typed as printed, dd/mm/yyyy: not type="date", which Chromium draws in the browser's locale (issue 37).
    assert 'type="date"' not in page
    assert 'type="text" name="created_from" inputmode="numeric"' in page and 'placeholder="dd/mm/yyyy"' in page


def test_statement_csv_reads_the_lines_in_chunks(dash, merchant, monkeypatch):
    paid(merchant, amount=10000)
    chunks = []
    original = QuerySet.iterator

    def recording(self, chunk_size=None):
        chunks.append(chunk_size)
        return original(self, chunk_size=chunk_size)

    monkeypatch.setattr(QuerySet, "iterator", recording)

    response = dash.get("/dashboard/statement.csv")
    assert chunks == []  # nothing is read before the response is streamed
    lines = b"".join(response.streaming_content).decode().splitlines()

    assert chunks == [2000] and len(lines) == 3


@pytest.mark.parametrize("url", ["/dashboard/", "/dashboard/charges/", "/dashboard/payouts/", "/dashboard/statement/"])
def test_list_pages_cost_the_same_queries_for_more_rows(dash, merchant, url):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert dash.get(url).status_code == 200
        return len(captured)

    fund(merchant, 100000)
    paid(merchant, reference_id="first")
    payout(merchant, reference_id="first")
    few = queries()
    for i in range(4):
        paid(merchant, "CREDIT_CARD", reference_id=f"more-{i}")
        payout(merchant, 1000, reference_id=f"more-{i}")

    assert queries() == few


def test_charge_detail_queries_do_not_grow_with_events(dash, merchant):
    WebhookEndpoint.objects.create(merchant=merchant, livemode=False, url="https://hooks.example.com/a")
    card = paid(merchant, "CREDIT_CARD", amount=10000)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert dash.get(f"/dashboard/charges/{card.pk}/").status_code == 200
        return len(captured)

    few = queries()
    for _ in range(3):
        refunds.refund_create(merchant=merchant, livemode=False, payin_id=card.pk, amount=100, reason="")

    assert queries() == few
