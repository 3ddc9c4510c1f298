"""Issue 13: live Pix charges on the Efí rail, through the fake Efí over mutual TLS and OAuth2. A live charge is a
`cob` at the bank with the bank's dynamic BR Code; a payment reaches the books only once the bank confirms it; a
refund is a devolução that stays PENDING until the bank says DEVOLVIDO; a lost notification is found by
`rail_reconcile`; a slow or failing bank leaves nothing payable behind."""

from __future__ import annotations

import json
import logging
import re

import pytest
from django.core.management import call_command
from django.test import Client

from payments.formats import pix
from payments.models import LedgerTransaction, Payin, RailNotification, Refund, UnmatchedPayment
from payments.unmatched import services as unmatched_services
from tests.payments.payins.test_payin_api import expected_charge, payin_body
from tests.payments.rails.conftest import WEBHOOK_SECRET, dashboard_live
from tests.payments.rails.efi_fake import CLIENT_COMMON_NAME, DEVOLVIDO, NAO_REALIZADO
from webhooks.models import Event

pytestmark = pytest.mark.django_db

WEBHOOK = f"/rails/efi/webhook/{WEBHOOK_SECRET}"


@pytest.fixture(autouse=True)
def _fees(settings):
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349


def create(client, **fields) -> dict:
    response = client.post("/payin", payin_body("PIX", **fields), format="json")
    assert response.status_code == 201, response.content
    return response.json()


def get(client, payin_id: str) -> dict:
    response = client.get(f"/payin/{payin_id}")
    assert response.status_code == 200, response.content
    return response.json()


def notify(body: dict, *, secret: str = WEBHOOK_SECRET):
    return Client().post(f"/rails/efi/webhook/{secret}/pix", data=json.dumps(body), content_type="application/json")


def calls(efi, method: str, prefix: str) -> list[dict]:
    return [r for r in efi.requests_log if r["method"] == method and r["path"].startswith(prefix)]


def balance(client) -> dict:
    return client.get("/balance").json()


# --- Creation --------------------------------------------------------------------------------------------------------
def test_a_live_pix_charge_is_a_cob_at_the_bank_and_shows_the_banks_dynamic_code(efi, live):
    got = create(live, description="Pedido 42", pix={"expiresIn": 900})

    txid = got["pix"]["txid"]
    assert txid == got["id"].replace("-", "") and re.fullmatch(r"[a-f0-9]{32}", txid)  # 26-35 letters and digits
    cob = efi.cobs[txid]
    assert {k: cob[k] for k in ("calendario", "valor", "chave", "devedor", "solicitacaoPagador", "status")} == {
        "calendario": {"criacao": cob["calendario"]["criacao"], "expiracao": 900},
        "valor": {"original": "50.00"}, "chave": efi.pix_key,
        "devedor": {"cpf": "52998224725", "nome": "Ana Souza"}, "solicitacaoPagador": "Pedido 42",
        "status": "ATIVA"}
    # The bank's code, not ours: a dynamic BR Code whose payload location the payer's bank fetches.
    assert got["pix"]["qrcode"] == cob["pixCopiaECola"]
    assert pix.parse(got["pix"]["qrcode"])["26"] == {"00": "br.gov.bcb.pix", "25": cob["location"]}
    assert got == expected_charge(got, method="PIX", amount=5000, fee=50, livemode=True, description="Pedido 42",
                                  pix={**got["pix"], "qrcode": cob["pixCopiaECola"], "txid": txid})
    # OAuth2 client credentials, then the bearer token; every call presented our client certificate.
    assert [(r["method"], r["path"], r["authorization_scheme"]) for r in efi.requests_log] == [
        ("POST", "/oauth/token", "Basic"), ("PUT", f"/v2/cob/{txid}", "Bearer")]
    assert {r["client_cert_cn"] for r in efi.requests_log} == {CLIENT_COMMON_NAME}


def test_the_token_is_reused_and_fetched_again_when_the_bank_refuses_it(efi, live):
    create(live)
    create(live, referenceId="order-2")
    assert efi.token_requests == 1
    efi.expire_tokens()
    create(live, referenceId="order-3")
    assert efi.token_requests == 2
    assert Payin.objects.count() == 3


@pytest.mark.parametrize("fault", [{"mode": "hang", "seconds": 4.0}, {"mode": "before", "status": 503},
                                   {"mode": "after", "status": 500}])
def test_a_slow_or_failing_bank_leaves_no_charge_behind(efi, live, fault):
    efi.fail_next("PUT", "/v2/cob/", **fault)  # EFI_TIMEOUT_SECONDS is 3 in these tests

    response = live.post("/payin", payin_body("PIX"), format="json")

    assert response.status_code == 502, response.content
    assert response.json()["error"] | {"requestId": None} == {
        "type": "rail_error", "code": "rail_unavailable", "requestId": None, "param": None, "details": [],
        "message": "The payment network is unavailable; nothing was charged. Try again."}
    assert not Payin.objects.exists() and not Event.objects.exists() and not LedgerTransaction.objects.exists()


# --- Payment ---------------------------------------------------------------------------------------------------------
def test_a_payment_is_confirmed_with_the_bank_before_the_charge_is_paid(efi, live):
    charge = create(live)
    txid = charge["pix"]["txid"]

    e2eid = efi.pay(txid)

    assert efi.deliveries[-1]["url"] == f"http://testserver{WEBHOOK}?ignorar=/pix"
    assert efi.deliveries[-1]["status"] == 200
    assert calls(efi, "GET", f"/v2/pix/{e2eid}")  # read back from the bank before anything moved
    paid = get(live, charge["id"])
    assert paid["status"] == "PAID"
    assert Payin.objects.get(pk=charge["id"]).pix_end_to_end_id == e2eid
    assert balance(live)["available"] == 5000 - 50

    # The same notification again (Efí retries): nothing more.
    assert notify({"pix": [efi.pix_view(e2eid)]}).status_code == 200
    assert get(live, charge["id"]) == paid
    assert LedgerTransaction.objects.filter(object_id=charge["id"]).count() == 1
    assert RailNotification.objects.filter(rail="efi", dedupe_key=f"pix-{e2eid}").count() == 1


def test_a_forged_notification_moves_nothing(efi, live, caplog):
    charge = create(live)
    forged = {"endToEndId": "E60701190202611251200abcdefghijk", "txid": charge["pix"]["txid"], "valor": "50.00",
              "horario": "2026-11-25T12:00:00.000Z", "chave": efi.pix_key}

    with caplog.at_level(logging.WARNING):
        unconfirmed = notify({"pix": [forged]})
        no_secret = notify({"pix": [forged]}, secret="x" * len(WEBHOOK_SECRET))

    assert (unconfirmed.status_code, unconfirmed.json()) == (200, {"confirmed": 0, "applied": 0})
    assert no_secret.status_code == 403 and no_secret.json()["error"]["code"] == "permission_denied"
    assert "rails.notification_not_confirmed" in caplog.messages
    assert "payments.rail_notification_refused" in caplog.messages
    assert get(live, charge["id"])["status"] == "PENDING"
    assert balance(live)["available"] == 0
    assert len(calls(efi, "GET", "/v2/pix/")) == 1  # asked the bank once (the secret-less one was never believed)


def test_a_notification_that_cannot_be_confirmed_now_is_answered_503_so_the_bank_sends_it_again(efi, live):
    charge = create(live)
    efi.drop_notifications = True
    e2eid = efi.pay(charge["pix"]["txid"])
    efi.fail_next("GET", f"/v2/pix/{e2eid}", mode="before", status=500)

    assert notify({"pix": [efi.pix_view(e2eid)]}).status_code == 503
    assert get(live, charge["id"])["status"] == "PENDING"
    assert notify({"pix": [efi.pix_view(e2eid)]}).status_code == 200
    assert get(live, charge["id"])["status"] == "PAID"


@pytest.mark.parametrize("body", [b"not json", b'{"pix": "nope"}', b'{"pix": [1]}'])
def test_a_body_efi_does_not_send_is_refused(efi, body):
    response = Client().post(WEBHOOK, data=body, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_notification"


def test_a_notification_nested_60_kb_deep_is_a_400_not_a_crash(efi):
    """Issue 37, item 17: Python's parser recursed once a level and raised RecursionError (a 500)."""
    body = b'{"pix": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"

    response = Client().post(WEBHOOK, data=body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"] == {"type": "invalid_request_error", "code": "invalid_notification",
                                        "message": "The notification body is not one the rail sends", "param": None,
                                        "details": [], "requestId": response["X-Request-Id"]}
    assert calls(efi, "GET", "/v2/") == []


def test_a_notification_naming_one_payment_a_thousand_times_asks_the_bank_once(efi, live):
    charge = create(live)
    efi.drop_notifications = True
    e2eid = efi.pay(charge["pix"]["txid"])
    named = {"endToEndId": e2eid}  # as short as an item gets: a thousand of them fit in the 64 KiB a body may have

    response = notify({"pix": [named] * 1000})

    assert (response.status_code, response.json()) == (200, {"confirmed": 1, "applied": 1})
    assert len(calls(efi, "GET", "/v2/pix/")) == 1
    assert get(live, charge["id"])["status"] == "PAID"


def test_a_notification_naming_more_than_100_payments_is_refused_before_any_call(efi, live, caplog):
    """Issue 37, item 17 and ADR 0081: each payment named costs a call to the bank, so a request names at most 100.
    One over is refused whole; what it named is found by reconciliation."""
    charge = create(live)
    efi.drop_notifications = True
    e2eid = efi.pay(charge["pix"]["txid"])
    forged = [{"endToEndId": f"E60701190202611251200{n:011d}", "valor": "1.00"} for n in range(100)]

    with caplog.at_level(logging.WARNING):
        refused = notify({"pix": [efi.pix_view(e2eid), *forged]})

    assert refused.status_code == 413
    assert refused.json()["error"] == {"type": "invalid_request_error", "code": "notification_too_large",
                                       "message": "A notification may name at most 100 payments", "param": None,
                                       "details": [], "requestId": refused["X-Request-Id"]}
    assert "payments.rail_notification_too_large" in caplog.messages
    assert calls(efi, "GET", "/v2/pix/") == []
    assert get(live, charge["id"])["status"] == "PENDING"

    accepted = notify({"pix": [efi.pix_view(e2eid), *forged[:99]]})  # 100 distinct: each asked once

    assert (accepted.status_code, accepted.json()) == (200, {"confirmed": 1, "applied": 1})
    assert len(calls(efi, "GET", "/v2/pix/")) == 100
    assert get(live, charge["id"])["status"] == "PAID"


def test_efis_registration_probe_is_answered(efi):
    response = Client().post(WEBHOOK, data=b"{}", content_type="application/json")
    assert (response.status_code, response.json()) == (200, {"confirmed": 0, "applied": 0})


def test_a_lost_notification_is_recovered_by_rail_reconcile(efi, live, capsys):
    charge = create(live)
    efi.drop_notifications = True
    e2eid = efi.pay(charge["pix"]["txid"])
    assert get(live, charge["id"])["status"] == "PENDING"

    call_command("rail_reconcile")

    assert "received=1" in capsys.readouterr().out
    assert get(live, charge["id"])["status"] == "PAID"
    assert Payin.objects.get(pk=charge["id"]).pix_end_to_end_id == e2eid
    call_command("rail_reconcile")  # again: nothing more
    assert LedgerTransaction.objects.filter(object_id=charge["id"]).count() == 1


# --- Cancel ----------------------------------------------------------------------------------------------------------
def test_cancel_removes_the_cob_at_the_bank_first(efi, live):
    charge = create(live)

    response = live.post(f"/payin/{charge['id']}/cancel")

    assert response.status_code == 200 and response.json()["status"] == "CANCELED"
    assert efi.cobs[charge["pix"]["txid"]]["status"] == "REMOVIDA_PELO_USUARIO_RECEBEDOR"
    assert calls(efi, "PATCH", f"/v2/cob/{charge['pix']['txid']}")[0]["body"] == {
        "status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"}


def test_cancel_of_a_charge_paid_at_the_bank_records_the_payment_and_is_refused(efi, live):
    charge = create(live)
    efi.drop_notifications = True
    efi.pay(charge["pix"]["txid"])

    response = live.post(f"/payin/{charge['id']}/cancel")

    assert response.status_code == 409 and response.json()["error"]["code"] == "invalid_state"
    assert get(live, charge["id"])["status"] == "PAID"


def test_cancel_while_the_bank_is_down_changes_nothing(efi, live):
    charge = create(live)
    efi.fail_next("PATCH", "/v2/cob/", mode="before", status=503)

    response = live.post(f"/payin/{charge['id']}/cancel")

    assert response.status_code == 502 and response.json()["error"]["code"] == "rail_unavailable"
    assert get(live, charge["id"])["status"] == "PENDING"
    assert efi.cobs[charge["pix"]["txid"]]["status"] == "ATIVA"


# --- Refunds ---------------------------------------------------------------------------------------------------------
def paid_charge(efi, live, amount: int = 5000) -> tuple[dict, str]:
    charge = create(live, amount=amount, items=[{"title": "Caneca", "quantity": 1, "unitPrice": amount}])
    return charge, efi.pay(charge["pix"]["txid"])


def test_a_refund_is_a_devolucao_pending_until_the_bank_returns_the_money(efi, live):
    charge, e2eid = paid_charge(efi, live)

    response = live.post(f"/payin/{charge['id']}/refunds", {"amount": 2000}, format="json")

    assert response.status_code == 201 and response.json()["status"] == "PENDING"
    refund_id = response.json()["id"]
    devolucao = efi.devolucoes[e2eid][refund_id.replace("-", "")]
    assert (devolucao["valor"], devolucao["status"]) == ("20.00", "EM_PROCESSAMENTO")
    assert balance(live)["available"] == 5000 - 50 - 2000

    assert efi.settle() == 1  # DEVOLVIDO, notified with the Pix's devolucoes

    assert Refund.objects.get(pk=refund_id).status == "SUCCEEDED"
    assert get(live, charge["id"])["status"] == "PARTIALLY_REFUNDED"
    assert efi.devolucoes[e2eid][refund_id.replace("-", "")]["status"] == DEVOLVIDO


def test_a_devolucao_the_bank_could_not_make_fails_and_the_money_returns(efi, live):
    charge, e2eid = paid_charge(efi, live)
    efi.refunds_fail = True
    refund_id = live.post(f"/payin/{charge['id']}/refunds", {"amount": 2000}, format="json").json()["id"]

    efi.settle()

    assert efi.devolucoes[e2eid][refund_id.replace("-", "")]["status"] == NAO_REALIZADO
    assert Refund.objects.get(pk=refund_id).status == "FAILED"
    assert get(live, charge["id"])["status"] == "PAID"
    assert balance(live)["available"] == 5000 - 50


def test_a_devolucao_whose_notification_was_lost_is_settled_by_reconciliation(efi, live, settings):
    charge, _ = paid_charge(efi, live)
    efi.drop_notifications = True
    refund_id = live.post(f"/payin/{charge['id']}/refunds", {"amount": 2000}, format="json").json()["id"]
    efi.settle()
    assert Refund.objects.get(pk=refund_id).status == "PENDING"

    call_command("rail_reconcile")  # the received Pix of the last hours carry their devoluções

    assert Refund.objects.get(pk=refund_id).status == "SUCCEEDED"
    assert get(live, charge["id"])["status"] == "PARTIALLY_REFUNDED"


def test_a_refund_whose_call_failed_mid_way_is_asked_for_under_the_same_id(efi, live):
    charge, e2eid = paid_charge(efi, live)
    efi.fail_next("PUT", f"/v2/pix/{e2eid}/devolucao/", mode="after", status=500)

    refund_id = live.post(f"/payin/{charge['id']}/refunds", {"amount": 2000}, format="json").json()["id"]
    assert Refund.objects.get(pk=refund_id).status == "PENDING"  # unknown outcome: not failed, not resent
    efi.settle()  # the bank had made it

    assert Refund.objects.get(pk=refund_id).status == "SUCCEEDED"
    assert len(efi.devolucoes[e2eid]) == 1


# --- Dashboard -------------------------------------------------------------------------------------------------------
def test_the_dashboard_shows_the_rails_ids_of_a_live_charge(efi, live, merchant, client):
    charge, e2eid = paid_charge(efi, live)
    dashboard_live(client, merchant.owner)

    page = client.get(f"/dashboard/charges/{charge['id']}/").content.decode()

    assert f"<code>{charge['pix']['txid']}</code>" in page
    assert f"<dt>End-to-end id</dt><dd><code>{e2eid}</code></dd>" in page


# --- Money that matches no charge (issue 14) -------------------------------------------------------------------------
def test_a_second_pix_for_a_paid_charge_is_sent_back_by_a_devolucao_at_the_bank(efi, live):
    charge, first = paid_charge(efi, live)

    second = efi.pay(charge["pix"]["txid"], force=True)  # a static copy of the code, paid again

    [duplicate] = UnmatchedPayment.objects.all()
    assert (duplicate.kind, duplicate.status, duplicate.end_to_end_id, duplicate.amount) == (
        "DUPLICATE", "REFUND_PENDING", second, 5000)
    assert (duplicate.payer_name, duplicate.payer_document) == ("Pagador Teste", "12345678909")
    unmatched_services.unmatched_refund_send(unmatched_id=duplicate.pk)  # the worker's task
    assert efi.devolucoes[second][duplicate.pk.hex]["valor"] == "50.00"
    assert first not in efi.devolucoes  # the payment that paid the charge is untouched

    efi.settle()

    duplicate.refresh_from_db()
    assert duplicate.status == "REFUNDED"
    assert get(live, charge["id"])["status"] == "PAID"
    assert balance(live)["available"] == 5000 - 50 and balance(live)["held"] == 0


def test_a_live_pix_naming_no_charge_is_kept_for_staff_and_moves_no_merchants_balance(efi, live):
    e2eid = efi.receive(1234)

    row = RailNotification.objects.get(rail="efi", dedupe_key=f"pix-{e2eid}")
    assert row.outcome == "no matching charge: unattributed"
    assert not UnmatchedPayment.objects.exists() and not LedgerTransaction.objects.exists()
