"""Issue 38 (c, d): live boletos registered at Efí in one step, payable by barcode or by Pix (bolix), against the fake
Charges API. The charge carries the bank's line, barcode, PDF and Pix code; the merchant's fine and interest go with
it; a late payment pays it with what the payer paid (`paidAmount`); a second payment is a DUPLICATE unmatched payment
held for the merchant; `settled` moves no money; a lost notification is found by `rail_reconcile`."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client

from accounts.models import AccountEvent
from core.dates import sao_paulo_today
from integrations.models import ApiKey
from payments.formats import boleto
from payments.models import Payin, RailNotification, UnmatchedPayment
from payments.payins.services import payins_expire
from tests.payments.payins.test_payin_api import customer_out, expected_charge, payin_body
from tests.payments.payins.test_payin_concurrency import ledger_clean
from tests.payments.rails.conftest import WEBHOOK_SECRET
from webhooks.models import Event

pytestmark = pytest.mark.django_db

NOTIFY = f"/rails/efi/charges/notify/{WEBHOOK_SECRET}"


@pytest.fixture(autouse=True)
def _fees(settings):
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349


def create(client, **fields) -> dict:
    response = client.post("/payin", payin_body("BOLETO", amount=10_000, **fields), format="json")
    assert response.status_code == 201, response.content
    return response.json()


def get(client, payin_id: str) -> dict:
    return client.get(f"/payin/{payin_id}").json()


def charge_id_of(charge: dict) -> int:
    return Payin.objects.get(pk=charge["id"]).rail_charge_id


def balance(client) -> dict:
    return client.get("/balance").json()


def test_a_live_boleto_is_registered_in_one_step_with_the_merchants_fine_and_interest(charges, live, merchant):
    merchant.boleto_fine_bps, merchant.boleto_interest_bps = 200, 100
    merchant.save()
    due = sao_paulo_today() + timedelta(days=5)

    got = create(live, boleto={"dueDate": due.isoformat(), "instructions": "Não receber após 30 dias"})

    charge_id = charge_id_of(got)
    efi = charges.charges[charge_id]
    billet = efi["payment"]["banking_billet"]
    line = "".join(ch for ch in billet["barcode"] if ch.isdigit())
    assert got == expected_charge(got, method="BOLETO", amount=10_000, fee=349, livemode=True, boleto={
        "barcode": boleto.barcode_from_digitable_line(line), "digitableLine": line, "dueDate": due.isoformat(),
        "url": got["paymentUrl"] + "/boleto", "instructions": "Não receber após 30 dias",
        "pdfUrl": billet["pdf"]["charge"],
        "pix": {"qrcode": billet["pix"]["qrcode"],
                "qrcodeImageUrl": f"http://testserver/payin/{got['id']}/qrcode.png?token="
                                  f"{got['paymentUrl'].rsplit('/', 1)[1]}"},
        "paidAmount": None})
    [one_step] = [r for r in charges.requests_log if r["path"] == "/v1/charge/one-step"]
    assert one_step["body"] == {
        "items": [{"name": "Caneca", "value": 10_000, "amount": 1}],
        "metadata": {"custom_id": got["id"], "notification_url": f"http://testserver{NOTIFY}"},
        "payment": {"banking_billet": {
            "customer": {"email": "ana@example.com", "name": "Ana Souza", "cpf": "52998224725",
                         "phone_number": "11987654321",
                         "address": {"street": "Av. Paulista", "number": "1000", "neighborhood": "Centro",
                                     "zipcode": "01310100", "city": "São Paulo", "state": "SP"}},
            "expire_at": due.isoformat(),
            "configurations": {"days_to_write_off": 30, "fine": 200, "interest": {"value": 100, "type": "monthly"}},
            "message": "Não receber após 30 dias"}}}
    assert customer_out("BOLETO")["document"] == "52998224725"
    assert Client().get(got["boleto"]["pix"]["qrcodeImageUrl"].removeprefix("http://testserver")).status_code == 200


def test_a_company_payer_is_a_juridical_person_and_no_fine_is_sent_by_default(charges, live):
    customer = {**payin_body("BOLETO")["customer"], "name": "Padaria Pão Quente Ltda",
                "document": "11.222.333/0001-81"}

    create(live, customer=customer)

    [one_step] = [r for r in charges.requests_log if r["path"] == "/v1/charge/one-step"]
    billet = one_step["body"]["payment"]["banking_billet"]
    assert billet["customer"]["juridical_person"] == {"corporate_name": "Padaria Pão Quente Ltda",
                                                      "cnpj": "11222333000181"}
    assert "cpf" not in billet["customer"] and billet["configurations"] == {"days_to_write_off": 30}


def test_efi_down_at_registration_writes_nothing(charges, live):
    charges.fail_next("POST", "/v1/charge/one-step", mode="before", status=500)

    response = live.post("/payin", payin_body("BOLETO"), format="json")

    assert response.status_code == 502 and not Payin.objects.exists()


def test_paid_by_pix_it_is_paid_once_the_history_says_so_and_a_second_payment_is_held(charges, live):
    got = create(live)
    charge_id = charge_id_of(got)

    charges.pay_billet(charge_id, by="pix")
    charges.pay_billet(charge_id, by="barcode")

    paid = get(live, got["id"])
    assert (paid["status"], paid["boleto"]["paidAmount"]) == ("PAID", 10_000)
    [duplicate] = UnmatchedPayment.objects.all()
    assert (duplicate.kind, duplicate.amount, duplicate.status, str(duplicate.payin_id)) == (
        "DUPLICATE", 10_000, "HELD", got["id"])
    assert balance(live)["available"] == 10_000 - 349 and balance(live)["held"] == 10_000
    token = charges.charges[charge_id]["token"]
    # `waiting` was notified while Efí answered one-step (held by the test's transport: status 0); each payment's
    # notification was taken, and its token read back from Efí.
    assert [d["status"] for d in charges.deliveries] == [0, 200, 200]
    assert charges.tokens_read[token] == 2
    assert ledger_clean()


def test_a_late_payment_pays_with_the_fine_recorded_as_paid_amount(charges, live, merchant, settings):
    merchant.boleto_fine_bps = 200
    merchant.save()
    got = create(live, boleto={"dueDate": sao_paulo_today().isoformat()})
    charges.advance_days(3)
    payins_expire()  # the bank's boleto is the bank's to expire: it stays payable

    charges.pay_billet(charge_id_of(got))

    paid = get(live, got["id"])
    assert (paid["status"], paid["amount"], paid["boleto"]["paidAmount"]) == ("PAID", 10_000, 10_200)
    assert balance(live)["available"] == 10_200 - 349
    assert ledger_clean()


def test_every_entry_of_the_history_is_applied_even_when_earlier_notifications_were_lost(charges, live):
    got = create(live)
    charge_id = charge_id_of(got)
    charges.drop_notifications = True
    charges.pay_billet(charge_id, by="pix")
    charges.drop_notifications = False

    charges.pay_billet(charge_id, by="barcode")  # one notification: the history has both payments

    assert get(live, got["id"])["status"] == "PAID"
    assert UnmatchedPayment.objects.filter(kind="DUPLICATE").count() == 1
    entries = [e["id"] for e in charges.history(charge_id)]
    assert sorted(RailNotification.objects.filter(rail="efi").values_list("dedupe_key", flat=True)) == sorted(
        f"charge-{charge_id}-{entry}" for entry in entries)


def test_a_repeated_notification_applies_nothing_twice(charges, live):
    got = create(live)
    charge_id = charge_id_of(got)
    charges.pay_billet(charge_id)
    token = charges.charges[charge_id]["token"]

    again = Client().post(NOTIFY, data={"notification": token})

    assert (again.status_code, again.json()) == (200, {"entries": 2, "applied": 0})
    assert [e.type for e in Event.objects.filter(object_id=got["id"])].count("payin.paid") == 1


def test_settled_by_hand_at_efi_moves_no_money(charges, live):
    got = create(live)

    charges.settle(charge_id_of(got))

    assert get(live, got["id"])["status"] == "PENDING"
    assert balance(live)["available"] == 0
    assert RailNotification.objects.get(dedupe_key__endswith=str(charges.history(charge_id_of(got))[-1]["id"])
                                        ).outcome == "settled by hand at the rail: no money moved"


def test_expired_at_efi_expires_it_here(charges, live):
    got = create(live)

    charges.expire(charge_id_of(got))

    assert get(live, got["id"])["status"] == "EXPIRED"


def test_nothing_moves_on_the_form_body_alone(charges, live):
    got = create(live)

    forged = Client().post(NOTIFY, data={"notification": "0c1d2e3f-0000-4000-8000-000000000000"})
    wrong_secret = Client().post("/rails/efi/charges/notify/not-the-secret-at-all",
                                 data={"notification": charges.charges[charge_id_of(got)]["token"]})
    garbage = Client().post(NOTIFY, data={"notification": "../../charge/1/pay"})

    assert (forged.status_code, forged.json()) == (200, {"entries": 0, "applied": 0})
    assert wrong_secret.status_code == 403
    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == "invalid_notification"
    assert get(live, got["id"])["status"] == "PENDING"


def test_efi_unreachable_when_a_notification_comes_is_503_so_efi_sends_it_again(charges, live):
    got = create(live)
    token = charges.charges[charge_id_of(got)]["token"]
    charges.fail_next("GET", "/v1/notification/", mode="before", status=500)

    response = Client().post(NOTIFY, data={"notification": token})

    assert response.status_code == 503


def test_a_payment_whose_notifications_were_all_lost_is_found_by_rail_reconcile(charges, live, settings):
    got = create(live)
    charges.drop_notifications = True
    charges.pay_billet(charge_id_of(got), by="pix")
    Payin.objects.filter(pk=got["id"]).update(created_at=Payin.objects.get(pk=got["id"]).created_at
                                              - timedelta(minutes=5))

    call_command("rail_reconcile")

    assert (get(live, got["id"])["status"], get(live, got["id"])["boleto"]["paidAmount"]) == ("PAID", 10_000)
    charges.drop_notifications = False
    charges.pay_billet(charge_id_of(got), by="barcode")  # the history now: its first payment, then a second
    assert UnmatchedPayment.objects.filter(kind="DUPLICATE").count() == 1
    assert Event.objects.filter(object_id=got["id"], type="payin.paid").count() == 1
    assert ledger_clean()


def test_cancel_of_a_waiting_bolix_cancels_it_at_efi_and_a_paid_one_is_409(charges, live):
    waiting = create(live)
    paid = create(live, referenceId="order-2")
    charges.drop_notifications = True
    charges.pay_billet(charge_id_of(paid))

    canceled = live.post(f"/payin/{waiting['id']}/cancel", {}, format="json")
    refused = live.post(f"/payin/{paid['id']}/cancel", {}, format="json")

    assert (canceled.status_code, canceled.json()["status"]) == (200, "CANCELED")
    assert charges.charges[charge_id_of(waiting)]["status"] == "canceled"
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "invalid_state"
    assert get(live, paid["id"])["status"] == "PAID"  # the payment wins


def test_the_merchant_sets_its_fine_and_interest_through_the_api_and_the_change_is_audited(charges, live, merchant):
    before = live.get("/payin/boleto-settings")
    changed = live.patch("/payin/boleto-settings", {"boletoFine": 200, "boletoInterest": 100}, format="json")
    too_much = live.patch("/payin/boleto-settings", {"boletoFine": 1001, "boletoInterest": 1.5}, format="json")

    assert (before.status_code, before.json()) == (200, {"boletoFine": 0, "boletoInterest": 0})
    assert (changed.status_code, changed.json()) == (200, {"boletoFine": 200, "boletoInterest": 100})
    assert too_much.status_code == 400
    assert [d["param"] for d in too_much.json()["error"]["details"]] == ["boletoFine", "boletoInterest"]
    [line] = AccountEvent.objects.filter(merchant=merchant, action="settings_changed")
    assert (line.actor_key, line.details) == (live_key(live), {"changes": {
        "boleto_fine_bps": {"from": None, "to": 200}, "boleto_interest_bps": {"from": None, "to": 100}}})
    create(live)
    [one_step] = [r for r in charges.requests_log if r["path"] == "/v1/charge/one-step"]
    assert one_step["body"]["payment"]["banking_billet"]["configurations"] == {
        "days_to_write_off": 30, "fine": 200, "interest": {"value": 100, "type": "monthly"}}


def live_key(client) -> str:
    return ApiKey.objects.get(livemode=True).public_key
