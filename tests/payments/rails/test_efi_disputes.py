"""Issue 14: Pix MED on the Efí rail, through the fake Efí over mutual TLS. An infraction the payer's bank opened
against a Pix we received (`GET /v2/gn/infracoes`) becomes a MED dispute at reconciliation, holding the money; the
merchant's evidence or acceptance is sent to the bank as its answer (`POST /v2/gn/infracoes/{id}/defesa`) by the
worker, under the case's id, never twice; the bank's decision closes the dispute."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from payments.disputes import services as disputes
from payments.inbound import services as inbound
from payments.models import Dispute, LedgerTransaction
from tests.payments.payins.test_payin_api import assert_ledger_balanced, iso
from tests.payments.rails.conftest import dashboard_live
from tests.payments.rails.efi_fake import ACEITA, CANCELADA_EFI, EM_DEFESA, REJEITADA, parse_rfc3339
from tests.payments.rails.test_efi_payins import balance, get, paid_charge
from webhooks.models import Event

pytestmark = pytest.mark.django_db

EVIDENCE = "Pedido 42 entregue em 20/11 com assinatura do comprador; conversa anexa ao pedido."


@pytest.fixture(autouse=True)
def _fees(settings):
    settings.FEE_PIX_BPS = 99


@pytest.fixture
def queued(monkeypatch) -> list:
    """The tasks services queue once their transaction commits (the worker's part is called by the test)."""
    sent: list = []
    monkeypatch.setattr("payments.disputes.services.task_enqueue", lambda name, **kwargs: sent.append((name, kwargs)))
    return sent


def warnings(caplog) -> list:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "payments.disputes.services"]


def reconcile() -> dict:
    return inbound.rail_reconcile(payouts_too=False)


def infraction(efi, live, *, amount: int = 5000, disputed: int | None = None) -> tuple[dict, str]:
    """A paid live charge and a MED infraction against the Pix that paid it; (charge, idInfracao)."""
    charge, e2eid = paid_charge(efi, live, amount)
    return charge, efi.open_infraction(e2eid, amount=disputed)


def the_dispute(live) -> dict:
    (dispute,) = live.get("/disputes").json()["data"]
    return dispute


def answer(live, dispute_id: str, path: str, capture, **body) -> dict:
    with capture(execute=True):
        response = live.post(f"/disputes/{dispute_id}/{path}", body or None, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_an_infraction_at_the_bank_becomes_a_med_dispute_holding_the_money_once(efi, live, merchant):
    charge, reference = infraction(efi, live)
    assert balance(live)["available"] == 4950

    assert reconcile()["disputes"] == 1

    dispute = the_dispute(live)
    due_by = parse_rfc3339(efi.infracoes[reference]["dadosAnalise"]["prazoFinalizacao"])
    assert dispute == {"id": dispute["id"], "payinId": charge["id"], "kind": "MED", "reason": "golpe", "amount": 5000,
                       "status": "OPEN", "evidenceDueBy": iso(due_by), "evidence": {"text": None, "submittedAt": None},
                       "createdAt": dispute["createdAt"], "closedAt": None, "livemode": True}
    assert Dispute.objects.get(pk=dispute["id"]).rail_reference == reference
    assert (balance(live)["available"], balance(live)["held"]) == (4950 - 5000, 5000)
    assert Event.objects.filter(type="dispute.created", livemode=True).count() == 1
    # The infraction is listed again at every run: it opens nothing more and moves no more money.
    transactions = LedgerTransaction.objects.count()
    reconcile()
    assert Dispute.objects.count() == 1 and LedgerTransaction.objects.count() == transactions
    assert_ledger_balanced()


def test_the_merchants_evidence_is_sent_to_the_bank_as_its_defence_and_a_rejection_wins(
        efi, live, queued, django_capture_on_commit_callbacks):
    charge, reference = infraction(efi, live)
    reconcile()
    dispute_id = the_dispute(live)["id"]

    reviewed = answer(live, dispute_id, "evidence", django_capture_on_commit_callbacks, text=EVIDENCE)

    assert reviewed["status"] == "UNDER_REVIEW" and reviewed["evidence"]["text"] == EVIDENCE
    assert queued == [("payments.disputes.tasks.dispute_answer_send", {"dispute_id": dispute_id})]
    assert efi.defences == []  # the worker sends it, with no transaction open

    disputes.dispute_answer_send(dispute_id=dispute_id)

    assert efi.defences == [{"idInfracao": reference, "analise": "rejeitado", "justificativa": EVIDENCE}]
    assert efi.infracoes[reference]["status"] == EM_DEFESA
    assert Dispute.objects.get(pk=dispute_id).rail_answer == "SENT"
    disputes.dispute_answer_send(dispute_id=dispute_id)  # a repeated task sends nothing more
    assert len(efi.defences) == 1
    reconcile()
    assert the_dispute(live)["status"] == "UNDER_REVIEW"

    efi.decide_infraction(reference, REJEITADA)
    reconcile()

    won = the_dispute(live)
    assert (won["status"], won["closedAt"] is not None) == ("WON", True)
    assert get(live, charge["id"])["status"] == "PAID"
    assert (balance(live)["available"], balance(live)["held"]) == (4950, 0)
    assert [event.type for event in Event.objects.filter(livemode=True, type__startswith="dispute.")
            .order_by("created_at")] == ["dispute.created", "dispute.updated", "dispute.closed"]
    assert_ledger_balanced()


def test_accepting_tells_the_bank_and_the_money_leaves_when_the_bank_closes_the_case(
        efi, live, queued, django_capture_on_commit_callbacks):
    charge, reference = infraction(efi, live)
    reconcile()
    dispute_id = the_dispute(live)["id"]

    accepted = answer(live, dispute_id, "accept", django_capture_on_commit_callbacks)

    # The bank closes a MED case, not us: the acceptance is our answer, and the money stays held until then.
    assert (accepted["status"], accepted["closedAt"]) == ("OPEN", None)
    assert (balance(live)["available"], balance(live)["held"]) == (4950 - 5000, 5000)
    assert queued == [("payments.disputes.tasks.dispute_answer_send", {"dispute_id": dispute_id})]
    again = live.post(f"/disputes/{dispute_id}/accept", None, format="json")  # a repeat changes nothing
    assert again.status_code == 200 and again.json() == accepted
    disputes.dispute_answer_send(dispute_id=dispute_id)
    assert efi.defences == [{"idInfracao": reference, "analise": "aceito", "justificativa": disputes.ACCEPT_TEXT}]
    assert efi.infracoes[reference]["status"] == ACEITA
    refused = live.post(f"/disputes/{dispute_id}/evidence", {"text": EVIDENCE}, format="json")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "invalid_state"

    reconcile()  # the bank says ACEITA: now the money goes to the payer, once

    closed = the_dispute(live)
    assert (closed["status"], closed["closedAt"] is not None) == ("ACCEPTED", True)
    refunded = get(live, charge["id"])
    assert (refunded["status"], refunded["refundedAmount"]) == ("REFUNDED", 5000)
    transactions = LedgerTransaction.objects.count()
    reconcile()
    assert LedgerTransaction.objects.count() == transactions
    assert (balance(live)["available"], balance(live)["held"]) == (4950 - 5000, 0)
    assert_ledger_balanced()


def test_an_acceptance_the_bank_overrides_leaves_the_money_with_the_merchant(
        efi, live, queued, monkeypatch, django_capture_on_commit_callbacks):
    charge, reference = infraction(efi, live)
    reconcile()
    dispute_id = the_dispute(live)["id"]
    efi.fail_next("POST", "/v2/gn/infracoes/", mode="before", status=503)  # our acceptance does not get through
    answer(live, dispute_id, "accept", django_capture_on_commit_callbacks)
    disputes.dispute_answer_send(dispute_id=dispute_id)

    efi.decide_infraction(reference, REJEITADA)  # meanwhile the bank rejects the infraction
    monkeypatch.setattr(inbound, "RECONCILE_AFTER", timedelta(0))
    reconcile()

    assert the_dispute(live)["status"] == "WON"
    assert get(live, charge["id"])["status"] == "PAID"
    assert (balance(live)["available"], balance(live)["held"]) == (4950, 0)
    assert Dispute.objects.get(pk=dispute_id).rail_answer == "REFUSED"  # sent again, refused: the case is closed
    assert efi.defences == []
    assert_ledger_balanced()


def test_a_case_older_than_the_window_is_followed_while_it_is_open(efi, live):
    _, reference = infraction(efi, live)
    reconcile()
    long_ago = timezone.now() - timedelta(days=45)
    Dispute.objects.update(created_at=long_ago)
    efi.infracoes[reference]["criadoEm"] = long_ago.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    efi.decide_infraction(reference, ACEITA)

    reconcile()

    assert the_dispute(live)["status"] == "LOST"


def test_a_malformed_infraction_is_skipped_and_the_others_are_read(efi, live, caplog):
    _, first = infraction(efi, live)
    efi.infracoes[first]["valor"] = "cinquenta reais"
    charge, e2eid = paid_charge(efi, live, 3000)
    efi.open_infraction(e2eid)

    with caplog.at_level(logging.WARNING, logger="payments.rails.efi"):
        assert reconcile()["disputes"] == 1

    assert the_dispute(live)["payinId"] == charge["id"]
    assert [r.message for r in caplog.records if r.name == "payments.rails.efi"] == ["rails.infraction_unreadable"]


@pytest.mark.parametrize(("decision", "outcome", "charge_status", "available"), [
    (ACEITA, "LOST", "REFUNDED", 4950 - 5000),
    (REJEITADA, "WON", "PAID", 4950),
    (CANCELADA_EFI, "WON", "PAID", 4950),
])
@pytest.mark.parametrize("seen_open", [True, False], ids=["seen-open", "first-seen-decided"])
def test_the_banks_decision_closes_the_dispute(efi, live, decision, outcome, charge_status, available, seen_open):
    charge, reference = infraction(efi, live)
    if seen_open:
        reconcile()

    efi.decide_infraction(reference, decision)
    reconcile()

    dispute = the_dispute(live)
    assert (dispute["status"], dispute["closedAt"] is not None) == (outcome, True)
    assert get(live, charge["id"])["status"] == charge_status
    assert (balance(live)["available"], balance(live)["held"]) == (available, 0)
    assert_ledger_balanced()


def test_an_infraction_for_part_of_the_pix_returns_only_that_part(efi, live):
    charge, reference = infraction(efi, live, amount=5000, disputed=2000)
    reconcile()
    assert the_dispute(live)["amount"] == 2000
    assert (balance(live)["available"], balance(live)["held"]) == (4950 - 2000, 2000)

    efi.decide_infraction(reference, ACEITA)
    reconcile()

    refunded = get(live, charge["id"])
    assert (refunded["status"], refunded["refundedAmount"]) == ("PARTIALLY_REFUNDED", 2000)
    assert (balance(live)["available"], balance(live)["held"]) == (4950 - 2000, 0)


def test_a_defence_the_bank_never_received_is_sent_by_reconciliation_under_the_same_case(
        efi, live, queued, monkeypatch, django_capture_on_commit_callbacks):
    _, reference = infraction(efi, live)
    reconcile()
    dispute_id = the_dispute(live)["id"]
    answer(live, dispute_id, "evidence", django_capture_on_commit_callbacks, text=EVIDENCE)
    efi.fail_next("POST", "/v2/gn/infracoes/", mode="before", status=503)

    disputes.dispute_answer_send(dispute_id=dispute_id)

    assert efi.defences == [] and Dispute.objects.get(pk=dispute_id).rail_answer == "PENDING"
    monkeypatch.setattr(inbound, "RECONCILE_AFTER", timedelta(0))
    assert reconcile()["dispute_answers"] == 1
    assert [d["idInfracao"] for d in efi.defences] == [reference]
    assert Dispute.objects.get(pk=dispute_id).rail_answer == "SENT"


def test_a_defence_the_bank_took_before_failing_is_not_sent_twice(
        efi, live, queued, monkeypatch, django_capture_on_commit_callbacks):
    _, reference = infraction(efi, live)
    reconcile()
    dispute_id = the_dispute(live)["id"]
    answer(live, dispute_id, "evidence", django_capture_on_commit_callbacks, text=EVIDENCE)
    efi.fail_next("POST", "/v2/gn/infracoes/", mode="after", status=500)

    disputes.dispute_answer_send(dispute_id=dispute_id)  # taken, then a 500: unknown outcome, still PENDING

    assert Dispute.objects.get(pk=dispute_id).rail_answer == "PENDING"
    monkeypatch.setattr(inbound, "RECONCILE_AFTER", timedelta(0))
    reconcile()  # asked again under the case's id: the bank refuses a second defence, and its case says it has one
    defence_posts = [r for r in efi.requests_log if r["method"] == "POST" and r["path"].endswith("/defesa")]
    assert [r["status"] for r in defence_posts] == [500, 400]
    assert efi.defences == [{"idInfracao": reference, "analise": "rejeitado", "justificativa": EVIDENCE}]
    assert Dispute.objects.get(pk=dispute_id).rail_answer == "SENT"


def test_a_defence_after_the_bank_closed_the_case_is_refused_and_the_banks_decision_stands(
        efi, live, queued, caplog, django_capture_on_commit_callbacks):
    _, reference = infraction(efi, live)
    reconcile()
    dispute_id = the_dispute(live)["id"]
    efi.decide_infraction(reference, ACEITA)  # decided at the bank before our next reconciliation
    answer(live, dispute_id, "evidence", django_capture_on_commit_callbacks, text=EVIDENCE)

    with caplog.at_level(logging.WARNING, logger="payments.disputes.services"):
        disputes.dispute_answer_send(dispute_id=dispute_id)

    assert efi.defences == [] and Dispute.objects.get(pk=dispute_id).rail_answer == "REFUSED"
    assert [(r.message, r.outcome) for r in warnings(caplog)] == [("payments.dispute_answer_sent", "REFUSED")]
    reconcile()
    assert the_dispute(live)["status"] == "LOST"
    assert_ledger_balanced()


def test_an_infraction_against_a_pix_that_paid_no_charge_opens_nothing_and_is_logged(efi, live, caplog):
    e2eid = efi.receive(3000)  # a Pix to our key naming no charge: no merchant's money
    reference = efi.open_infraction(e2eid)

    with caplog.at_level(logging.WARNING, logger="payments.disputes.services"):
        assert reconcile()["disputes"] == 0

    assert Dispute.objects.count() == 0
    assert [(r.message, r.rail_reference) for r in warnings(caplog)] == [
        ("payments.rail_dispute_unmatched", reference)]


def test_the_banks_case_has_no_local_deadline_the_bank_decides(efi, live):
    infraction(efi, live)
    reconcile()
    dispute = Dispute.objects.get()

    assert disputes.disputes_expire(now=timezone.now() + timedelta(days=30)) == 0

    assert Dispute.objects.get(pk=dispute.pk).status == "OPEN"


def test_the_dashboard_shows_the_bank_case_and_where_the_answer_stands(
        efi, live, merchant, client, queued, django_capture_on_commit_callbacks):
    _, reference = infraction(efi, live)
    reconcile()
    dispute_id = the_dispute(live)["id"]
    answer(live, dispute_id, "evidence", django_capture_on_commit_callbacks, text=EVIDENCE)
    dashboard_live(client, merchant.owner)

    pending = client.get(f"/dashboard/disputes/{dispute_id}/").content.decode()
    disputes.dispute_answer_send(dispute_id=dispute_id)
    sent = client.get(f"/dashboard/disputes/{dispute_id}/").content.decode()

    assert f"<dt>Bank case</dt><dd><code>{reference}</code></dd>" in pending
    assert "<dt>Answer to the bank</dt><dd>Pending</dd>" in pending
    assert "<dt>Answer to the bank</dt><dd>Sent</dd>" in sent


def test_the_dashboard_says_an_accepted_case_waits_for_the_bank_and_offers_no_more_answers(
        efi, live, merchant, client, queued, django_capture_on_commit_callbacks):
    infraction(efi, live)
    reconcile()
    dispute_id = the_dispute(live)["id"]
    answer(live, dispute_id, "accept", django_capture_on_commit_callbacks)
    dashboard_live(client, merchant.owner)

    page = client.get(f"/dashboard/disputes/{dispute_id}/").content.decode()

    assert "You accepted this dispute: the bank returns the money to the payer" in page
    assert "<dt>Answer to the bank</dt><dd>Accepted · Pending</dd>" in page
    assert f"/dashboard/disputes/{dispute_id}/accept/" not in page
    assert f"/dashboard/disputes/{dispute_id}/evidence/" not in page
