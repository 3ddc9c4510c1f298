"""Verify every invariant of the ledger; exit non-zero naming what drifted."""

from django.core.management.base import BaseCommand, CommandError, no_translations
from django.db import connection, transaction
from django.db.models import Count, F, Sum, Window

from payments.models import (
    AccountKind,
    Dispute,
    DisputeKind,
    DisputeStatus,
    LedgerAccount,
    LedgerEntry,
    LedgerTransaction,
    Payin,
    PayinStatus,
    Payout,
    PayoutDailyTotal,
    Refund,
    RefundStatus,
    UnmatchedPayment,
    UnmatchedStatus,
)
from payments.payouts.selectors import payout_day_totals

RETURNED_DISPUTES = [DisputeStatus.LOST, DisputeStatus.ACCEPTED]
PAID_STATUSES = [PayinStatus.PAID, PayinStatus.PARTIALLY_REFUNDED, PayinStatus.REFUNDED, PayinStatus.CHARGEBACK]


class Command(BaseCommand):
    help = "Check the ledger: balances equal their entries, transactions and merchants sum to zero."

    @no_translations  # operators read English, whatever LANGUAGE_CODE the dashboard uses
    def handle(self, *args, **options) -> None:
        # One consistent snapshot: read while movements commit, separate queries would see different moments and
        # report drift that is not there.
        outermost = not connection.in_atomic_block  # inside a caller's transaction, its snapshot is the one we have
        with transaction.atomic():
            if outermost:
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            problems, summary = self.inspect()
        if problems:
            for problem in problems:
                self.stderr.write(problem)
            raise CommandError(f"ledger check failed: {len(problems)} problem(s)")
        self.stdout.write(summary)

    def inspect(self) -> tuple[list[str], str]:
        problems: list[str] = []
        sums = dict(LedgerEntry.objects.values("account_id").annotate(total=Sum("amount"))
                    .values_list("account_id", "total"))
        accounts = list(LedgerAccount.objects.order_by("pk"))
        for account in accounts:
            if account.balance != sums.get(account.pk, 0):
                problems.append(f"account {account.pk} ({account}): balance {account.balance} but its entries sum to "
                                f"{sums.get(account.pk, 0)}")
        for txn_id, total in (LedgerEntry.objects.values("transaction_id").annotate(total=Sum("amount"))
                              .exclude(total=0).values_list("transaction_id", "total")):
            problems.append(f"transaction {txn_id}: entries sum to {total}, not 0")
        running = LedgerEntry.objects.annotate(
            running=Window(Sum("amount"), partition_by=[F("account_id")], order_by=F("id").asc()))
        for entry in running.exclude(running=F("balance_after")).values("id", "account_id", "balance_after",
                                                                        "running")[:100]:
            problems.append(f"entry {entry['id']} of account {entry['account_id']}: balance_after "
                            f"{entry['balance_after']} but the running sum is {entry['running']}")
        totals: dict[tuple, int] = {}
        for account in accounts:
            key = (account.merchant_id, account.livemode)
            totals[key] = totals.get(key, 0) + account.balance
        for (merchant_id, livemode), total in totals.items():
            if total != 0:
                problems.append(f"merchant {merchant_id} ({'live' if livemode else 'test'}): accounts sum to {total}, "
                                "not 0 (money was created or lost)")
        problems += self.inspect_charges()
        problems += self.inspect_payout_days()
        problems += self.inspect_disputes()
        problems += self.inspect_unmatched()
        return problems, (f"ledger ok: {len(accounts)} accounts, {len(sums)} with entries, "
                          f"{LedgerEntry.objects.count()} entries, every invariant holds")

    def inspect_charges(self) -> list[str]:
        """Charges against their money: a charge was credited exactly when it was paid, and what it counts as
        refunded is what its refunds that did not fail add up to."""
        problems: list[str] = []
        credited = dict(LedgerTransaction.objects.filter(object_type="payin", entries__line_type="payin",
                                                         entries__amount__gt=0)
                        .values("object_id").annotate(n=Count("id", distinct=True)).values_list("object_id", "n"))
        for payin_id, status in Payin.objects.values_list("pk", "status"):
            expected = 1 if status in PAID_STATUSES else 0
            if credited.get(str(payin_id), 0) != expected:
                problems.append(f"charge {payin_id} ({status}) was credited {credited.get(str(payin_id), 0)} "
                                f"time(s), not {expected}")
        refunds = dict(Refund.objects.exclude(status=RefundStatus.FAILED).values("payin_id")
                       .annotate(total=Sum("amount")).values_list("payin_id", "total"))
        # A MED lost or accepted is a return the payer's bank made: it counts as refunded too.
        for payin_id, returned in (Dispute.objects.filter(kind=DisputeKind.MED, status__in=RETURNED_DISPUTES)
                                   .values("payin_id").annotate(total=Sum("amount"))
                                   .values_list("payin_id", "total")):
            refunds[payin_id] = refunds.get(payin_id, 0) + returned
        for payin_id, refunded in Payin.objects.filter(refunded_amount__gt=0).values_list("pk", "refunded_amount"):
            if refunds.get(payin_id, 0) != refunded:
                problems.append(f"charge {payin_id}: refundedAmount {refunded} but its refunds add up to "
                                f"{refunds.get(payin_id, 0)}")
        for payin_id in set(refunds) - set(Payin.objects.filter(refunded_amount__gt=0).values_list("pk", flat=True)):
            problems.append(f"charge {payin_id}: refundedAmount 0 but it has refunds of {refunds[payin_id]}")
        return problems

    def inspect_disputes(self) -> list[str]:
        """A dispute's amount is in `held` exactly while it is open: its movements there add up to its amount while
        OPEN or UNDER_REVIEW, and to 0 once it is closed (other held money, unmatched payments, is not a dispute's)."""
        problems: list[str] = []
        held = dict(LedgerEntry.objects.filter(transaction__object_type="dispute", account__kind=AccountKind.HELD)
                    .values("transaction__object_id").annotate(total=Sum("amount"))
                    .values_list("transaction__object_id", "total"))
        for dispute_id, status, amount in Dispute.objects.values_list("pk", "status", "amount"):
            expected = amount if status in (DisputeStatus.OPEN, DisputeStatus.UNDER_REVIEW) else 0
            if held.get(str(dispute_id), 0) != expected:
                problems.append(f"dispute {dispute_id} ({status}): {held.get(str(dispute_id), 0)} held, not "
                                f"{expected}")
        return problems

    def inspect_unmatched(self) -> list[str]:
        """An unmatched payment's money is where its status says: in `held` while HELD or REFUND_FAILED, in flight
        while REFUND_PENDING, and in neither once ACCEPTED or REFUNDED; it came in through the rail exactly once."""
        problems: list[str] = []
        where: dict[tuple[str, str], int] = {}
        for object_id, kind, total in (LedgerEntry.objects.filter(transaction__object_type="unmatched_payment")
                                       .values("transaction__object_id", "account__kind").annotate(t=Sum("amount"))
                                       .values_list("transaction__object_id", "account__kind", "t")):
            where[(object_id, kind)] = total
        for unmatched_id, status, amount in UnmatchedPayment.objects.values_list("pk", "status", "amount"):
            key = str(unmatched_id)
            expected = {
                AccountKind.RAIL_IN: -amount,
                AccountKind.HELD: amount if status in (UnmatchedStatus.HELD, UnmatchedStatus.REFUND_FAILED) else 0,
                AccountKind.PAYOUTS_IN_FLIGHT: amount if status == UnmatchedStatus.REFUND_PENDING else 0,
            }
            for kind, want in expected.items():
                if where.get((key, kind), 0) != want:
                    problems.append(f"unmatched payment {unmatched_id} ({status}): {where.get((key, kind), 0)} in "
                                    f"{kind}, not {want}")
        return problems

    def inspect_payout_days(self) -> list[str]:
        """The daily totals the payout limit is checked against equal what the day's payouts add up to."""
        problems: list[str] = []
        sums = payout_day_totals(Payout.objects.all())
        stored = {(row.merchant_id, row.livemode, row.day): row.amount for row in PayoutDailyTotal.objects.all()}
        for key in sorted(set(sums) | set(stored), key=str):
            if sums.get(key, 0) != stored.get(key, 0):
                problems.append(f"payouts of merchant {key[0]} ({'live' if key[1] else 'test'}) on {key[2]}: the daily "
                                f"total says {stored.get(key, 0)} but they add up to {sums.get(key, 0)}")
        return problems
