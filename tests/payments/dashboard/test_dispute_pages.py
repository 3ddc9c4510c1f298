"""The dashboard's dispute pages (issue 14): the list and a case's page with its deadline, evidence, accept and the
sandbox's decision; linked from the nav and from the charge's page; scoped to the merchant and mode."""

from __future__ import annotations

import pytest

from accounts.models import AccountEvent
from payments.disputes import services as disputes
from payments.models import Dispute, DisputeStatus, Payin, PayinStatus
from tests.factories import MerchantFactory
from tests.payments.dashboard.test_dashboard_pages import live, message_of, paid, text_of


@pytest.fixture
def dash(client, merchant):
    """The merchant's browser, logged in, in test mode."""
    client.force_login(merchant.owner)
    return client


@pytest.fixture
def card_dispute(merchant) -> Dispute:
    card = paid(merchant, "CREDIT_CARD", reference_id="disputed")
    return disputes.dispute_open(payin_id=card.pk)[0]


def test_the_list_and_the_charge_page_link_to_the_dispute(dash, card_dispute):
    listing = text_of(dash.get("/dashboard/disputes/"))
    charge_page = text_of(dash.get(f"/dashboard/charges/{card_dispute.payin_id}/"))

    assert f'href="/dashboard/disputes/{card_dispute.pk}/"' in listing
    assert 'href="/dashboard/disputes/"' in listing  # the nav
    assert f'href="/dashboard/disputes/{card_dispute.pk}/"' in charge_page
    assert "Simulate chargeback" not in charge_page  # already disputed


def test_the_dispute_page_shows_the_deadline_and_the_forms(dash, card_dispute):
    page = text_of(dash.get(f"/dashboard/disputes/{card_dispute.pk}/"))

    assert "Without evidence by then, the dispute is lost." in page
    assert 'action="/dashboard/disputes/' in page and "Send evidence" in page and "Accept dispute" in page
    assert "Simulate won" in page


def test_evidence_puts_the_dispute_under_review(dash, card_dispute):
    response = dash.post(f"/dashboard/disputes/{card_dispute.pk}/evidence/", {"text": "Entregue em 20/11."})

    assert "Evidence sent. The dispute is under review." in message_of(dash, response)
    card_dispute.refresh_from_db()
    assert (card_dispute.status, card_dispute.evidence_text) == (DisputeStatus.UNDER_REVIEW, "Entregue em 20/11.")


def test_empty_evidence_is_shown_beside_the_field(dash, card_dispute):
    response = dash.post(f"/dashboard/disputes/{card_dispute.pk}/evidence/", {"text": ""})

    assert response.status_code == 400
    assert "This field is required." in text_of(response)
    assert Dispute.objects.get(pk=card_dispute.pk).status == DisputeStatus.OPEN


def test_accept_charges_the_card_back(dash, card_dispute):
    response = dash.post(f"/dashboard/disputes/{card_dispute.pk}/accept/")

    assert "Dispute accepted. The amount went back to the payer." in message_of(dash, response)
    assert Dispute.objects.get(pk=card_dispute.pk).status == DisputeStatus.ACCEPTED
    entry = AccountEvent.objects.get(action=AccountEvent.Action.DISPUTE_ACCEPTED)
    assert (entry.obj_id, entry.before, entry.after) == (str(card_dispute.pk), {"status": "OPEN"},
                                                         {"status": "ACCEPTED"})
    assert Payin.objects.get(pk=card_dispute.payin_id).status == PayinStatus.CHARGEBACK


def test_a_refused_answer_is_a_message(dash, card_dispute):
    dash.post(f"/dashboard/disputes/{card_dispute.pk}/accept/")

    response = dash.post(f"/dashboard/disputes/{card_dispute.pk}/accept/")

    assert "A dispute in status ACCEPTED cannot become ACCEPTED" in message_of(dash, response)


def test_sandbox_decision_and_the_med_button(dash, merchant, card_dispute):
    pix = paid(merchant, "PIX", reference_id="pix-med")

    lost = message_of(dash, dash.post(f"/dashboard/disputes/{card_dispute.pk}/simulate/", {"action": "lose"}))
    med_page = text_of(dash.get(f"/dashboard/charges/{pix.pk}/"))
    med = message_of(dash, dash.post(f"/dashboard/charges/{pix.pk}/simulate/", {"action": "med"}))

    assert "Decision simulated: the dispute is lost" in lost
    assert Dispute.objects.get(pk=card_dispute.pk).status == DisputeStatus.LOST
    assert "Simulate MED" in med_page
    assert "MED simulated: a dispute is open and its amount is held." in med
    assert Dispute.objects.get(payin=pix).kind == "MED"


def test_no_sandbox_decision_in_live_mode(dash, card_dispute):
    live(dash)

    response = dash.get(f"/dashboard/disputes/{card_dispute.pk}/")

    assert response.status_code == 404  # a test-mode dispute does not exist in live mode


def test_another_merchants_dispute_is_404(client, card_dispute):
    client.force_login(MerchantFactory().owner)

    assert client.get(f"/dashboard/disputes/{card_dispute.pk}/").status_code == 404
    assert client.post(f"/dashboard/disputes/{card_dispute.pk}/accept/").status_code == 404
    assert Dispute.objects.get(pk=card_dispute.pk).status == DisputeStatus.OPEN
