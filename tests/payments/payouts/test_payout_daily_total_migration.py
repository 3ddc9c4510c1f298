"""Migration 0006 gives the days that already had payouts their totals, as the daily limit summed them before; the
`payout_totals_rebuild` command repairs what processes of the previous release did while it ran."""

from __future__ import annotations

import io
from datetime import date

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from core import dates
from payments.ledger import services as ledger
from payments.ledger.services import Leg
from payments.management.commands.ledger_check import Command as LedgerCheck
from payments.models import AccountKind, LineType, Payout, PayoutDailyTotal
from payments.payouts import services as payouts
from payments.rails.base import OperationStatus
from tests.factories import MerchantFactory
from tests.payments.payouts.test_payout_api import fund, payout_test_setup, post_payout

BEFORE = [("payments", "0005_pix_key_type_labels")]
AFTER = [("payments", "0006_payout_daily_total")]


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.fixture(autouse=True)
def _latest_schema_after():
    """Each test ends at 0006; the migrations after it (and the tables they add) come back before the flush."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def payout(merchant, n: int, *, livemode=False, day=date(2026, 11, 20), amount=1000, status="PENDING") -> None:
    Payout.objects.create(merchant=merchant, livemode=livemode, amount=amount, fee=0, pix_key="k", pix_key_type="EVP",
                          pix_key_normalized="k", reference_id=f"r-{n}", external_id=f"E{n:031d}", local_date=day,
                          status=status)


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_in_the_totals_of_days_with_payouts():
    migrate(BEFORE)
    try:
        a, b = MerchantFactory(), MerchantFactory()
        payout(a, 1, amount=1000)
        payout(a, 2, amount=2500, status="COMPLETED")
        payout(a, 3, amount=700, status="RETURNED")
        payout(a, 4, amount=9999, status="FAILED")  # failed and canceled payouts never counted
        payout(a, 5, amount=8888, status="CANCELED")
        payout(a, 6, amount=400, livemode=True)
        payout(a, 7, amount=300, day=date(2026, 11, 21))
        payout(b, 8, amount=50)
    finally:
        migrate(AFTER)
    totals = {(t.merchant_id, t.livemode, t.day): t.amount for t in PayoutDailyTotal.objects.all()}
    assert totals == {
        (a.pk, False, date(2026, 11, 20)): 4200,
        (a.pk, True, date(2026, 11, 20)): 400,
        (a.pk, False, date(2026, 11, 21)): 300,
        (b.pk, False, date(2026, 11, 20)): 50,
    }


def accepted_by_the_previous_release(merchant, amount: int, reference: str) -> Payout:
    """A payout accepted by a process still on the release before 0006: its money moved, no daily total counts it."""
    with transaction.atomic():
        old = Payout.objects.create(
            merchant=merchant, livemode=False, amount=amount, fee=0, pix_key="52998224725",
            pix_key_normalized="52998224725", pix_key_type="CPF", reference_id=reference,
            external_id=f"E12345678202611210000{reference:0>11}"[:32], local_date=dates.sao_paulo_today())
        ledger.post(merchant=merchant, livemode=False, object_type="payout", object_id=str(old.pk),
                    legs=[Leg(AccountKind.AVAILABLE, -amount, LineType.PAYOUT),
                          Leg(AccountKind.PAYOUTS_IN_FLIGHT, amount, LineType.PAYOUT)])
    return old


@pytest.mark.django_db
def test_the_rebuild_repairs_totals_the_previous_release_missed(merchant, api, settings, monkeypatch):
    """Payouts the previous release accepted while 0006 migrated: one still pending (the total misses it), one
    failed under the new release (its amount was taken off a total that never had it). After the rebuild the
    totals are the payouts' again, and the day's limit holds exactly."""
    payout_test_setup(settings, monkeypatch)
    settings.PAYOUT_DAILY_MAX = 10_000
    fund(merchant, 100_000)
    accepted_by_the_previous_release(merchant, 3_000, "old-1")
    failed = accepted_by_the_previous_release(merchant, 5_000, "old-2")
    payouts.payout_resolve(payout_id=failed.pk,
                           answer=OperationStatus(status="FAILED", failure_code="rejected_by_bank"))
    assert PayoutDailyTotal.objects.get(merchant=merchant).amount == -5_000
    assert LedgerCheck().inspect_payout_days() != []

    out = io.StringIO()
    call_command("payout_totals_rebuild", stdout=out)

    assert PayoutDailyTotal.objects.get(merchant=merchant).amount == 3_000
    assert LedgerCheck().inspect_payout_days() == []
    assert out.getvalue().splitlines()[-1] == "payout daily totals: 1 merchant-modes checked, 1 day(s) corrected"
    assert post_payout(api, amount=7_000, referenceId="new-1").status_code == 201
    assert post_payout(api, amount=1, referenceId="new-2").status_code == 400
