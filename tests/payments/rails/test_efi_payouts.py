"""Issue 13: live payouts on the Efí rail, through the fake Efí. The worker's task (`payout_process`) sends
`PUT /v3/gn/pix/{idEnvio}` with the payout's id as idEnvio; the payout completes or fails when the bank says
REALIZADO or NAO_REALIZADO; a send whose outcome is unknown is asked about under the same idEnvio, never sent anew."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from payments.models import Payout
from payments.payouts.sending import payout_process, payouts_reconcile
from payments.rails import efi as efi_rail
from tests.payments.payouts.test_payout_api import CPF, fund, payout_test_setup
from tests.payments.rails.conftest import dashboard_live
from tests.payments.rails.efi_fake import NAO_REALIZADO, REALIZADO

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def queued(settings, monkeypatch, efi) -> list:
    """Celery messages captured, as in the other payout tests (the worker's part is called by the test)."""
    captured = payout_test_setup(settings, monkeypatch)
    settings.API_RATE_LIMIT = 1_000_000
    return captured


@pytest.fixture
def funded(merchant) -> None:
    fund(merchant, 100_000, livemode=True)


def create(live, **fields) -> dict:
    response = live.post("/payout", {"amount": 1234, "pixKey": CPF, "pixKeyType": "CPF", "referenceId": "p-1",
                                      **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def get(live, payout_id: str) -> dict:
    return live.get(f"/payout/{payout_id}").json()


def balance(live) -> dict:
    return live.get("/balance").json()


def test_a_live_payout_is_sent_under_its_id_and_completes_when_the_bank_says_realizado(efi, live, funded):
    payout = create(live, beneficiaryDocument="529.982.247-25")
    id_envio = payout["id"].replace("-", "")
    assert efi.sends == {}  # the worker sends it, not the request

    payout_process(payout_id=payout["id"])

    send = efi.sends[id_envio]
    put = [r for r in efi.requests_log if r["method"] == "PUT" and r["path"] == f"/v3/gn/pix/{id_envio}"]
    assert put[0]["body"] == {"valor": "12.34", "pagador": {"chave": efi.pix_key},
                              "favorecido": {"chave": CPF, "cpf": CPF}}
    processing = get(live, payout["id"])
    assert processing["status"] == "PROCESSING"
    assert processing["externalId"] == send["endToEndId"]  # the end-to-end id the network gave the Pix

    efi.settle()

    completed = get(live, payout["id"])
    assert (completed["status"], efi.sends[id_envio]["status"]) == ("COMPLETED", REALIZADO)
    assert balance(live)["available"] == 100_000 - 1234


def test_a_payout_the_bank_could_not_make_fails_and_the_money_returns(efi, live, funded):
    payout = create(live, pixKey="someone@fail.example.com", pixKeyType="EMAIL")
    payout_process(payout_id=payout["id"])

    efi.settle()

    failed = get(live, payout["id"])
    assert efi.sends[payout["id"].replace("-", "")]["status"] == NAO_REALIZADO
    assert (failed["status"], failed["failureCode"]) == ("FAILED", "rejected_by_bank")
    assert balance(live)["available"] == 100_000


@pytest.mark.parametrize("fault", [
    {"mode": "after", "status": 500},  # the bank sent it, then failed to say so
    {"mode": "hang", "seconds": 4.0},  # the bank answered after our 3 s timeout
    {"mode": "before", "status": 502},  # the bank never took it
])
def test_a_send_with_an_unknown_outcome_is_settled_under_the_same_id_envio_and_pays_once(efi, live, funded, fault):
    payout = create(live)
    id_envio = payout["id"].replace("-", "")
    efi.fail_next("PUT", "/v3/gn/pix/", **fault)

    payout_process(payout_id=payout["id"])
    assert get(live, payout["id"])["status"] == "PROCESSING"  # unknown: neither failed nor sent anew
    if fault["mode"] == "hang":
        time.sleep(1.5)  # the bank finishes the send it got late (reconciliation waits 30 s in production)

    assert payouts_reconcile(older_than=timedelta(0)) == 1
    efi.settle()

    assert get(live, payout["id"])["status"] == "COMPLETED"
    assert efi.sends_created[id_envio] == 1
    puts = [r for r in efi.requests_log if r["method"] == "PUT" and r["path"] == f"/v3/gn/pix/{id_envio}"]
    assert len(puts) == (2 if fault["mode"] == "before" else 1)  # sent again, same idEnvio, only if never taken
    assert balance(live)["available"] == 100_000 - 1234


def test_a_repeated_send_is_refused_by_the_bank_and_answered_with_the_first(efi, live, funded):
    payout = create(live)
    payout_process(payout_id=payout["id"])
    rail = efi_rail.EfiRail()

    again = rail.payout_send(key=payout["id"], livemode=True, amount=1234, pix_key=CPF, pix_key_type="CPF",
                             end_to_end_id="")

    id_envio = payout["id"].replace("-", "")
    assert (again.status, again.end_to_end_id) == ("PENDING", efi.sends[id_envio]["endToEndId"])
    assert (efi.send_attempts[id_envio], efi.sends_created[id_envio]) == (2, 1)


def test_a_lost_send_notification_is_recovered_by_reconciliation(efi, live, funded):
    payout = create(live)
    payout_process(payout_id=payout["id"])
    efi.drop_notifications = True
    efi.settle()
    assert Payout.objects.get(pk=payout["id"]).status == "PROCESSING"

    payouts_reconcile(older_than=timedelta(0))

    assert get(live, payout["id"])["status"] == "COMPLETED"


def test_the_dashboard_shows_the_rails_ids_of_a_live_payout(efi, live, funded, merchant, client):
    payout = create(live)
    payout_process(payout_id=payout["id"])
    dashboard_live(client, merchant.owner)

    page = client.get(f"/dashboard/payouts/{payout['id']}/").content.decode()

    send = efi.sends[payout["id"].replace("-", "")]
    assert f"<dt>End-to-end id</dt><dd><code>{send['endToEndId']}</code></dd>" in page
    assert f"<dt>Rail send id (idEnvio)</dt><dd><code>{send['idEnvio']}</code></dd>" in page


def test_a_rate_limited_send_is_an_unknown_outcome_not_a_failure(efi, live, funded):
    payout = create(live)
    efi.fail_next("PUT", "/v3/gn/pix/", mode="before", status=429)

    payout_process(payout_id=payout["id"])

    assert get(live, payout["id"])["status"] == "PROCESSING"  # not FAILED: the money stays in flight
    payouts_reconcile(older_than=timedelta(0))  # never received: sent now, under the same idEnvio
    efi.settle()
    assert get(live, payout["id"])["status"] == "COMPLETED"
