"""Disputes under concurrency, on PostgreSQL with real row locks: racing notices of one case open one dispute, and
racing answers to one case move it once (the charge, then the dispute, then the ledger accounts are locked)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.errors import InvalidState
from payments.disputes import services as disputes
from payments.models import Dispute, DisputeStatus
from tests.conftest import run_in_threads
from tests.payments.disputes.helpers import held, open_dispute
from tests.payments.payins.test_payin_api import assert_ledger_balanced, balance, create, paid_pix
from webhooks.models import Event

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_rate_limit(settings):
    settings.API_RATE_LIMIT = 1_000_000


def event_types(object_id: str) -> list[str]:
    return sorted(Event.objects.filter(object_id=object_id).values_list("type", flat=True))


def test_ten_concurrent_opens_of_one_case_make_one_dispute(api, merchant):
    charge = create(api, "CREDIT_CARD", amount=10_000)

    results = run_in_threads(10, lambda i: disputes.dispute_open(payin_id=charge["id"]))

    assert not [r for r in results if isinstance(r, Exception)]
    assert sum(created for _, created in results) == 1
    (dispute,) = Dispute.objects.all()
    assert {d.pk for d, _ in results} == {dispute.pk}
    assert (held(merchant), balance(api)["available"]) == (10_000, charge["netAmount"] - 10_000)
    assert event_types(str(dispute.pk)) == ["dispute.created"]
    assert_ledger_balanced()


@pytest.mark.parametrize("round_", range(3))
def test_concurrent_accept_and_evidence_move_the_dispute_once(api, merchant, round_):
    charge = paid_pix(api, 10_000)
    dispute = open_dispute(api, charge["id"], "med")

    def act(i: int):
        try:
            if i == 0:
                return disputes.dispute_accept(merchant=merchant, livemode=False, dispute_id=dispute["id"])
            return disputes.dispute_evidence_submit(merchant=merchant, livemode=False, dispute_id=dispute["id"],
                                                    text="Delivered.")
        except InvalidState as exc:
            return exc

    accepted, reviewed = run_in_threads(2, act)

    winners = [r for r in (accepted, reviewed) if isinstance(r, Dispute)]
    assert len(winners) == 1 and sum(isinstance(r, InvalidState) for r in (accepted, reviewed)) == 1
    final = Dispute.objects.get(pk=dispute["id"])
    assert final.status == winners[0].status
    if final.status == DisputeStatus.ACCEPTED:
        assert event_types(dispute["id"]) == ["dispute.closed", "dispute.created"]
        assert held(merchant) == 0 and final.evidence_text == ""
    else:
        assert final.status == DisputeStatus.UNDER_REVIEW
        assert event_types(dispute["id"]) == ["dispute.created", "dispute.updated"]
        assert held(merchant) == 10_000
    assert_ledger_balanced()


def test_concurrent_decisions_and_the_deadline_job_close_a_dispute_once(api, merchant):
    charge = create(api, "CREDIT_CARD", amount=10_000)
    dispute = open_dispute(api, charge["id"], "chargeback")
    Dispute.objects.filter(pk=dispute["id"]).update(evidence_due_by=timezone.now() - timedelta(seconds=1))

    def act(i: int):
        try:
            if i % 3 == 0:
                return disputes.disputes_expire()
            return disputes.dispute_decide(dispute_id=dispute["id"], won=i % 3 == 1)
        except InvalidState as exc:
            return exc

    results = run_in_threads(6, act)

    moved = sum(isinstance(r, Dispute) for r in results) + sum(r for r in results if isinstance(r, int))
    assert moved == 1
    assert event_types(dispute["id"]) == ["dispute.closed", "dispute.created"]
    assert held(merchant) == 0
    assert_ledger_balanced()
