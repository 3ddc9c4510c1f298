"""Issue 38 (d, e): what follows a live card charge at Efí. Its notification history decides a PROCESSING charge;
`rail_reconcile` reads the charge when no notification came (never paying again); refunds, full or partial, stay
PENDING until Efí confirms them; a contested charge opens a CHARGEBACK dispute whose outcome follows Efí."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command

from payments.models import Dispute, Payin
from payments.payins import cards
from tests.payments.payins.test_payin_concurrency import ledger_clean
from tests.payments.payouts.test_payout_api import fund
from tests.payments.rails.test_efi_cards import card_body, events_of
from webhooks.models import Event

pytestmark = pytest.mark.django_db

FEE = 239  # 3.99% of 5000, half up, + 39


@pytest.fixture(autouse=True)
def _fees(settings):
    settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED = 399, 39
    settings.CARD_SETTLEMENT_DAYS = 0  # the money is available at once: refunds need it there


def pay(charges, live, outcome: str = "paid", **fields) -> dict:
    response = live.post("/payin", card_body(charges.card_token(outcome=outcome), **fields), format="json")
    assert response.status_code in (201, 202), response.content
    charges.deliver_held()  # what Efí notified while it answered
    return response.json()


def get(live, payin_id: str) -> dict:
    return live.get(f"/payin/{payin_id}").json()


def charge_id(got: dict) -> int:
    return Payin.objects.get(pk=got["id"]).rail_charge_id


def age(got: dict, minutes: int = 5) -> None:
    payin = Payin.objects.get(pk=got["id"])
    Payin.objects.filter(pk=payin.pk).update(created_at=payin.created_at - timedelta(minutes=minutes))
    payin.refunds.update(created_at=payin.created_at - timedelta(minutes=minutes))


def test_an_approved_charge_is_paid_when_efis_analysis_ends_and_its_history_says_so(charges, live):
    got = pay(charges, live, outcome="approved")
    assert get(live, got["id"])["status"] == "PROCESSING"

    charges.approve(charge_id(got))

    paid = get(live, got["id"])
    assert paid["status"] == "PAID"
    assert events_of(got["id"]) == [("payin.created", None), ("payin.paid", "PROCESSING")]
    assert live.get("/balance").json()["available"] == 5000 - FEE
    assert ledger_clean()


def test_a_lost_answer_is_resolved_once_by_reading_the_charge_never_by_paying_again(charges, live):
    charges.fail_next("POST", "/v1/charge/", mode="drop")
    response = live.post("/payin", card_body(charges.card_token(outcome="paid")), format="json")
    got = response.json()
    assert (response.status_code, got["status"]) == (202, "PROCESSING")
    charges.deliver_held = lambda: []  # every notification of it lost too
    age(got)

    call_command("rail_reconcile")
    call_command("rail_reconcile")

    assert get(live, got["id"])["status"] == "PAID"
    assert charges.pays[charge_id(got)] == 1
    gets = [r for r in charges.requests_log if r["method"] == "GET" and r["path"] == f"/v1/charge/{charge_id(got)}"]
    assert len(gets) == 1  # the second run found nothing left to ask
    assert events_of(got["id"]) == [("payin.created", None), ("payin.paid", "PROCESSING")]
    assert ledger_clean()


def test_a_refusal_told_by_the_history_only_is_failed_with_efis_reason(charges, live):
    charges.fail_next("POST", "/v1/charge/", mode="after", status=502)
    token = charges.card_token(outcome="unpaid", reason="Cartão vencido.")
    response = live.post("/payin", card_body(token), format="json")
    assert response.status_code == 202

    charges.deliver_held()

    failed = get(live, response.json()["id"])
    assert (failed["status"], failed["failureCode"], failed["failureMessage"]) == (
        "FAILED", "expired_card", "Cartão vencido.")


def test_the_old_card_reconciliation_leaves_efi_charges_alone(charges, live):
    got = pay(charges, live, outcome="approved")
    age(got)

    assert cards.card_charges_reconcile(older_than=timedelta(0)) == 0

    assert get(live, got["id"])["status"] == "PROCESSING"


def test_a_partial_then_full_refund_are_pending_until_efi_confirms_each(charges, live, merchant):
    fund(merchant, 1000, livemode=True)  # the fee is not given back: the full refund needs more than the net
    got = pay(charges, live)
    charges.drop_notifications = True

    first = live.post(f"/payin/{got['id']}/refunds", {"amount": 2000}, format="json")

    assert (first.status_code, first.json()["status"]) == (201, "PENDING")
    assert live.get("/balance").json()["available"] == 1000 + 5000 - FEE - 2000
    assert charges.charges[charge_id(got)]["refunds"] == [2000]
    charges.drop_notifications = False
    assert get(live, got["id"])["status"] == "PAID"
    age(got)
    call_command("rail_reconcile")  # the charge's token is known from its payment: its history has the refund
    assert live.get(f"/payin/{got['id']}/refunds").json()["data"][0]["status"] == "SUCCEEDED"
    assert get(live, got["id"])["status"] == "PARTIALLY_REFUNDED"

    second = live.post(f"/payin/{got['id']}/refunds", {}, format="json")  # the rest: notified
    charges.deliver_held()

    refunds = live.get(f"/payin/{got['id']}/refunds").json()["data"]
    assert [(r["amount"], r["status"]) for r in refunds] == [(3000, "SUCCEEDED"), (2000, "SUCCEEDED")]
    assert second.json()["amount"] == 3000
    assert get(live, got["id"])["status"] == "REFUNDED"
    assert live.get("/balance").json()["available"] == 1000 + 5000 - FEE - 5000
    assert ledger_clean()


def test_a_refund_efi_refuses_gives_the_money_back_at_once(charges, live):
    got = pay(charges, live)
    charges.charges[charge_id(got)]["status"] = "settled"  # no longer refundable at Efí

    response = live.post(f"/payin/{got['id']}/refunds", {"amount": 1000}, format="json")

    assert (response.status_code, response.json()["status"], response.json()["failureCode"]) == (
        201, "FAILED", "rejected_by_bank")
    assert live.get("/balance").json()["available"] == 5000 - FEE


def test_a_refund_whose_answer_is_lost_is_confirmed_by_reading_the_charge(charges, live, merchant):
    fund(merchant, 1000, livemode=True)
    charges.deliver_held = lambda: []  # no notification ever: no token known, the charge itself is read
    got = pay(charges, live)
    charges.drop_notifications = True
    charges.fail_next("POST", "/v1/charge/card/", mode="drop")

    response = live.post(f"/payin/{got['id']}/refunds", {}, format="json")
    assert response.json()["status"] == "PENDING"
    age(got)
    call_command("rail_reconcile")

    assert [r["status"] for r in live.get(f"/payin/{got['id']}/refunds").json()["data"]] == ["SUCCEEDED"]
    assert get(live, got["id"])["status"] == "REFUNDED"
    assert Payin.objects.get(pk=got["id"]).rail_notification_token == ""
    assert ledger_clean()


@pytest.mark.parametrize(("won", "status", "available"), [(True, "WON", 5000 - FEE), (False, "LOST", -FEE)])
def test_a_contested_charge_is_a_chargeback_dispute_that_follows_efi(charges, live, merchant, won, status,
                                                                     available):
    got = pay(charges, live)

    charges.contest(charge_id(got))

    [dispute] = Dispute.objects.filter(payin_id=got["id"])
    assert (dispute.kind, dispute.status, dispute.amount, dispute.rail_reference) == (
        "CHARGEBACK", "OPEN", 5000, f"efi-charge-{charge_id(got)}")
    assert live.get("/balance").json()["available"] == 5000 - FEE - 5000  # held while it is decided

    charges.chargeback(charge_id(got), won=won)

    dispute.refresh_from_db()
    assert dispute.status == status
    assert get(live, got["id"])["status"] == ("PAID" if won else "CHARGEBACK")
    assert live.get("/balance").json()["available"] == available
    assert Event.objects.filter(object_id=str(dispute.pk), type="dispute.closed").count() == 1
    assert ledger_clean()


def test_the_merchants_evidence_on_an_efi_chargeback_is_not_sent_to_the_med_api(charges, live, merchant):
    got = pay(charges, live)
    charges.contest(charge_id(got))
    dispute = Dispute.objects.get(payin_id=got["id"])

    response = live.post(f"/disputes/{dispute.pk}/evidence", {"text": "Entregue com AR."}, format="json")

    assert response.status_code == 200, response.content
    dispute.refresh_from_db()
    assert (dispute.status, dispute.rail_answer) == ("UNDER_REVIEW", "")



def test_a_hosted_card_waiting_for_its_payer_is_not_asked_about(charges, live):
    response = live.post("/payin", card_body(None), format="json")
    age(response.json())

    assert cards.card_charges_reconcile(older_than=timedelta(0)) == 0
    call_command("rail_reconcile")

    assert get(live, response.json()["id"])["status"] == "PENDING"
    assert charges.requests_log == []  # nothing at Efí to ask about
