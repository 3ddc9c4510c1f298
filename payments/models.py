from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Merchant
from config.ids import uuid7


class AccountKind(models.TextChoices):
    """Every merchant has one ledger account of each kind per mode. The platform's side of a movement (money that
    came in or left through the rail, fees earned, staff adjustments) is kept per merchant too: no single platform
    row is locked by every merchant's payments, and the platform's totals are sums over merchants."""

    AVAILABLE = "available", "Available (can be paid out)"
    PENDING = "pending", "Pending (card money not yet settled)"
    PAYOUTS_IN_FLIGHT = "payouts_in_flight", "Payouts in flight"
    RAIL_IN = "rail_in", "Received through the rail"
    RAIL_OUT = "rail_out", "Sent through the rail"
    FEE_REVENUE = "fee_revenue", "Fees earned by the platform"
    ADJUSTMENTS = "adjustments", "Staff adjustments"


class LineType(models.TextChoices):
    """What a movement is, as the merchant's statement names it (SPEC §5)."""

    PAYIN = "payin"
    PAYIN_FEE = "payin_fee"
    REFUND = "refund"
    PAYOUT = "payout"
    PAYOUT_FEE = "payout_fee"
    PAYOUT_REVERSAL = "payout_reversal"
    CHARGEBACK = "chargeback"
    SETTLEMENT = "settlement"
    ADJUSTMENT = "adjustment"


class LedgerAccount(models.Model):
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="ledger_accounts")
    livemode = models.BooleanField()
    kind = models.CharField(max_length=20, choices=AccountKind.choices)
    # Equal to the sum of this account's entries at every commit; `ledger_check` verifies it.
    balance = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["merchant", "livemode", "kind"], name="ledger_account_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.merchant_id} {'live' if self.livemode else 'test'} {self.kind}"


class LedgerTransaction(models.Model):
    """One movement: entries that sum to zero, written together or not at all."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="ledger_transactions")
    livemode = models.BooleanField()
    object_type = models.CharField(max_length=20)
    object_id = models.CharField(max_length=64)
    reference_id = models.CharField(max_length=64, blank=True)
    description = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["merchant", "livemode", "object_id"], name="ledger_txn_object")]

    def __str__(self) -> str:
        return f"{self.object_type} {self.object_id}"


class LedgerEntry(models.Model):
    """Append-only: a correction is a new transaction, never an edit."""

    transaction = models.ForeignKey(LedgerTransaction, on_delete=models.PROTECT, related_name="entries")
    account = models.ForeignKey(LedgerAccount, on_delete=models.PROTECT, related_name="entries")
    amount = models.BigIntegerField()
    line_type = models.CharField(max_length=20, choices=LineType.choices)
    balance_after = models.BigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.CheckConstraint(condition=~Q(amount=0), name="ledger_entry_not_zero")]
        indexes = [models.Index(fields=["account", "created_at", "id"], name="ledger_entry_statement")]

    def __str__(self) -> str:
        return f"{self.line_type} {self.amount:+d}"
