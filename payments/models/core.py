from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Merchant
from core.ids import uuid7


class AccountKind(models.TextChoices):
    """Every merchant has one ledger account of each kind per mode. The platform's side of a movement (money that
    came in or left through the rail, fees earned, staff adjustments) is kept per merchant too: no single platform
    row is locked by every merchant's payments, and the platform's totals are sums over merchants."""

    AVAILABLE = "available", "Available (can be paid out)"
    PENDING = "pending", "Pending (card money not yet settled)"
    PAYOUTS_IN_FLIGHT = "payouts_in_flight", "Payouts in flight"
    # Money that reached the rail but is not (yet) the merchant's to spend: unmatched payments awaiting a decision,
    # and the amount of an open dispute.
    HELD = "held", "Held (unmatched payments, open disputes)"
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
    UNMATCHED_PAYMENT = "unmatched_payment"
    UNMATCHED_PAYMENT_FEE = "unmatched_fee"
    DISPUTE = "dispute"
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
    # No index of its own: `ledger_txn_object` starts with it (migration 0015).
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="ledger_transactions",
                                 db_index=False)
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
    # No index of its own: `ledger_entry_statement` starts with it (migration 0015).
    account = models.ForeignKey(LedgerAccount, on_delete=models.PROTECT, related_name="entries", db_index=False)
    amount = models.BigIntegerField()
    line_type = models.CharField(max_length=20, choices=LineType.choices)
    balance_after = models.BigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.CheckConstraint(condition=~Q(amount=0), name="ledger_entry_not_zero")]
        indexes = [models.Index(fields=["account", "created_at", "id"], name="ledger_entry_statement")]

    def __str__(self) -> str:
        return f"{self.line_type} {self.amount:+d}"


# --- Pay-in ----------------------------------------------------------------------------------------------------------
class PaymentMethod(models.TextChoices):
    PIX = "PIX"
    CREDIT_CARD = "CREDIT_CARD"
    BOLETO = "BOLETO"


class PayinStatus(models.TextChoices):
    PENDING = "PENDING"
    # A live card the rail is deciding: asked to pay, with no final answer yet (a lost answer, or the issuer's yes
    # under the rail's analysis). Never paid twice: the rail is read, not asked again (ADR 0085).
    PROCESSING = "PROCESSING"
    PAID = "PAID"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"
    CANCELED = "CANCELED"
    PARTIALLY_REFUNDED = "PARTIALLY_REFUNDED"
    REFUNDED = "REFUNDED"
    CHARGEBACK = "CHARGEBACK"


class Payin(models.Model):
    """A charge. What the request sent (customer, items, metadata) is kept as it was validated; the method's own
    data lives in its columns. Card numbers and CVVs are never here: only brand, BIN, last 4, expiry, holder name and
    the token (SPEC §3.7)."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # No index of its own: the list indexes start with it (migration 0015).
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="payins", db_index=False)
    livemode = models.BooleanField()
    status = models.CharField(max_length=20, choices=PayinStatus.choices, default=PayinStatus.PENDING)
    payment_method = models.CharField(max_length=12, choices=PaymentMethod.choices)
    amount = models.BigIntegerField()
    fee = models.BigIntegerField()
    refunded_amount = models.BigIntegerField(default=0)  # succeeded and pending refunds: what can no longer be refunded
    reference_id = models.CharField(max_length=64)
    description = models.CharField(max_length=140, blank=True)
    metadata = models.JSONField(default=dict)
    customer = models.JSONField()
    items = models.JSONField()
    payer_ip = models.GenericIPAddressField()
    is_physical_product = models.BooleanField()
    webhook_url = models.CharField(max_length=2048, blank=True)
    # The hosted payment page and the QR image are public behind this unguessable token (SPEC §3.5).
    public_token = models.CharField(max_length=43)  # unique: `payin_public_token_unique`
    # PIX
    # 25 characters on the simulator's static codes (SPEC); 32 (the id's hex digits) for a rail's `cob`.
    pix_txid = models.CharField(max_length=35, null=True, blank=True)  # unique: `payin_pix_txid_unique`
    pix_end_to_end_id = models.CharField(max_length=32, blank=True)  # the Pix that paid it, as the network named it
    pix_payload = models.TextField(blank=True)
    pix_expires_at = models.DateTimeField(null=True, blank=True)
    # BOLETO
    boleto_nosso_numero = models.BigIntegerField(null=True, blank=True, unique=True)
    boleto_barcode = models.CharField(max_length=44, blank=True)
    boleto_digitable_line = models.CharField(max_length=47, blank=True)
    boleto_due_date = models.DateField(null=True, blank=True)
    boleto_instructions = models.CharField(max_length=255, blank=True)
    # CREDIT_CARD
    # brand, bin, last4, holderName, expirationMonth, expirationYear, installments, token
    card = models.JSONField(null=True, blank=True)
    authorization_code = models.CharField(max_length=32, blank=True)
    # Card money waits in `pending` until this moment; the settlement job moves it and clears the field.
    settle_at = models.DateTimeField(null=True, blank=True)
    failure_code = models.CharField(max_length=40, blank=True)
    failure_message = models.CharField(max_length=255, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    # What the payer paid, when it is not simply `amount`: a boleto paid late, with its fine and interest.
    paid_amount = models.BigIntegerField(null=True, blank=True)
    # A rail that numbers its own charges (Efí's Charges API: live cards and bolix): its id, stored before anything
    # can be paid; its notification token once a notification named it; the boleto's PDF.
    rail_charge_id = models.BigIntegerField(null=True, blank=True)  # unique: `payin_rail_charge_unique`
    rail_notification_token = models.CharField(max_length=64, blank=True, default="", db_default="")
    boleto_pdf_url = models.CharField(max_length=500, blank=True, default="", db_default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["merchant", "livemode", "created_at", "id"], name="payin_list"),
            models.Index(fields=["merchant", "livemode", "status", "created_at", "id"], name="payin_list_status"),
            models.Index(fields=["merchant", "livemode", "reference_id", "created_at", "id"], name="payin_list_ref"),
            models.Index(fields=["merchant", "livemode", "payment_method", "created_at", "id"],
                         name="payin_list_method"),
            models.Index(fields=["pix_expires_at"], name="payin_pix_expiry",
                         condition=Q(status="PENDING", payment_method="PIX")),
            models.Index(fields=["boleto_due_date"], name="payin_boleto_expiry",
                         condition=Q(status="PENDING", payment_method="BOLETO")),
            models.Index(fields=["created_at"], name="payin_card_pending",
                         condition=Q(status="PENDING", payment_method="CREDIT_CARD")),
            # Reconciliation of a rail's charges still waiting on it (live cards PROCESSING, bolix PENDING).
            models.Index(fields=["created_at"], name="payin_rail_charge_open",
                         condition=Q(status__in=["PENDING", "PROCESSING"], rail_charge_id__isnull=False)),
            models.Index(fields=["settle_at"], name="payin_settlement", condition=Q(settle_at__isnull=False)),
            # A rail's MED case names the Pix it disputes by its end-to-end id.
            models.Index(fields=["pix_end_to_end_id"], name="payin_pix_e2e", condition=~Q(pix_end_to_end_id="")),
        ]
        constraints = [
            # Declared as constraints rather than `unique=True`, which on PostgreSQL adds a LIKE index beside each
            # (`varchar_pattern_ops`) that nothing uses and every charge writes (migration 0015).
            models.UniqueConstraint(fields=["public_token"], name="payin_public_token_unique"),
            models.UniqueConstraint(fields=["pix_txid"], name="payin_pix_txid_unique"),
            # Partial: the write path of every other charge (Pix, test mode) writes no entry in it.
            models.UniqueConstraint(fields=["rail_charge_id"], name="payin_rail_charge_unique",
                                    condition=Q(rail_charge_id__isnull=False)),
            models.CheckConstraint(condition=Q(amount__gt=0), name="payin_amount_positive"),
            models.CheckConstraint(condition=Q(fee__gte=0, fee__lte=models.F("amount")), name="payin_fee_in_range"),
            models.CheckConstraint(condition=Q(refunded_amount__gte=0, refunded_amount__lte=models.F("amount")),
                                   name="payin_refunded_in_range"),
        ]

    def __str__(self) -> str:
        return f"{self.payment_method} {self.amount} {self.status}"

    @property
    def net_amount(self) -> int:
        return self.amount - self.fee


class RefundStatus(models.TextChoices):
    PENDING = "PENDING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class Refund(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    payin = models.ForeignKey(Payin, on_delete=models.PROTECT, related_name="refunds")
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="refunds")
    livemode = models.BooleanField()
    amount = models.BigIntegerField()
    status = models.CharField(max_length=10, choices=RefundStatus.choices, default=RefundStatus.PENDING)
    reason = models.CharField(max_length=255, blank=True)
    failure_code = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["created_at"], name="refund_pending", condition=Q(status="PENDING"))]
        constraints = [models.CheckConstraint(condition=Q(amount__gt=0), name="refund_amount_positive")]

    def __str__(self) -> str:
        return f"refund {self.amount} {self.status}"


class CardToken(models.Model):
    """A card the rail tokenized, reusable by the same merchant and mode (`card.token`). No number, no CVV."""

    token = models.CharField(max_length=40, primary_key=True)
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="card_tokens")
    livemode = models.BooleanField()
    rail_token = models.CharField(max_length=64)
    brand = models.CharField(max_length=20)
    bin = models.CharField(max_length=6)
    last4 = models.CharField(max_length=4)
    holder_name = models.CharField(max_length=100)
    expiration_month = models.CharField(max_length=2)
    expiration_year = models.CharField(max_length=4)
    fingerprint = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.brand} •••• {self.last4}"


# --- Rails -----------------------------------------------------------------------------------------------------------
class RailNotification(models.Model):
    """A rail's notification, stored raw before it is processed; `dedupe_key` (the rail's own id for the
    notification) makes a second delivery of the same notification a no-op."""

    id = models.BigAutoField(primary_key=True)
    rail = models.CharField(max_length=20)
    dedupe_key = models.CharField(max_length=100)
    body = models.TextField()
    received_at = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=255, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rail", "dedupe_key"], name="rail_notification_unique")]
        indexes = [models.Index(fields=["received_at"], name="rail_notification_unprocessed",
                                condition=Q(processed_at__isnull=True))]

    def __str__(self) -> str:
        return f"{self.rail} {self.dedupe_key}"


class SimulatorOperation(models.Model):
    """The simulator rail's own books: what "the network" saw. Keyed by the idempotency key each call carries (a
    charge, refund or payout id), so a call repeated after a crash finds the first one instead of sending twice."""

    key = models.CharField(max_length=64, primary_key=True)
    kind = models.CharField(max_length=20)  # pix_charge, boleto, card, refund, payout
    livemode = models.BooleanField()
    amount = models.BigIntegerField()
    status = models.CharField(max_length=20)  # PENDING, SUCCEEDED, FAILED, RETURNED, CHARGEBACK
    outcome = models.CharField(max_length=40, blank=True)  # a failure code, or a card's test outcome
    reference = models.CharField(max_length=64, blank=True)  # txid, nosso número, card token
    calls = models.PositiveIntegerField(default=1)  # how many times the rail was asked to do it (tests: at most once)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["reference"], name="simulator_reference")]

    def __str__(self) -> str:
        return f"{self.kind} {self.key} {self.status}"


class BalanceAdjustment(models.Model):
    """A staff correction of a merchant's available balance: a ledger movement against the platform's adjustments
    account, with who and why. Never edited: a wrong adjustment is corrected by another."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="balance_adjustments")
    livemode = models.BooleanField(help_text="Live balance (checked) or test balance.")
    amount = models.BigIntegerField(help_text="Signed cents: positive credits the merchant, negative debits.")
    reason = models.CharField(max_length=255)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.CheckConstraint(condition=~Q(amount=0), name="adjustment_not_zero")]

    def __str__(self) -> str:
        return f"{self.amount:+d} {self.reason}"


# --- Payouts ---------------------------------------------------------------------------------------------------------
class PayoutStatus(models.TextChoices):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    RETURNED = "RETURNED"


class PixKeyType(models.TextChoices):
    CPF = "CPF"
    CNPJ = "CNPJ"
    EMAIL = "EMAIL", "E-mail"
    PHONE = "PHONE", "Phone"
    EVP = "EVP", "EVP (random key)"


class Payout(models.Model):
    """A Pix sent from the merchant's balance (SPEC §4). Its amount + fee left `available` when it was accepted."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # No index of its own: payout_list starts with it. Every status change of a payout rewrites an entry in each of
    # the table's indexes (status is indexed, so no change is a HOT update): no index that another one covers.
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="payouts", db_index=False)
    livemode = models.BooleanField()
    status = models.CharField(max_length=12, choices=PayoutStatus.choices, default=PayoutStatus.PENDING)
    amount = models.BigIntegerField()
    fee = models.BigIntegerField()
    pix_key = models.CharField(max_length=77)  # as the merchant sent it (echoed)
    pix_key_normalized = models.CharField(max_length=77)  # what the rail gets
    pix_key_type = models.CharField(max_length=5, choices=PixKeyType.choices)
    reference_id = models.CharField(max_length=64)
    external_id = models.CharField(max_length=32)  # the Pix end-to-end id, unique (payout_external_id_unique)
    beneficiary_name = models.CharField(max_length=120, blank=True)
    beneficiary_document = models.CharField(max_length=14, blank=True)
    description = models.CharField(max_length=140, blank=True)
    metadata = models.JSONField(default=dict)
    webhook_url = models.CharField(max_length=2048, blank=True)
    failure_code = models.CharField(max_length=40, blank=True)
    failure_message = models.CharField(max_length=255, blank=True)
    # The Sao Paulo calendar day the payout counts against for the daily limit.
    local_date = models.DateField()
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["merchant", "livemode", "created_at", "id"], name="payout_list"),
            models.Index(fields=["merchant", "livemode", "status", "created_at", "id"], name="payout_list_status"),
            models.Index(fields=["merchant", "livemode", "local_date"], name="payout_daily_total"),
            models.Index(fields=["updated_at"], name="payout_unfinished",
                         condition=Q(status__in=["PENDING", "PROCESSING"])),
        ]
        constraints = [
            models.UniqueConstraint(fields=["merchant", "livemode", "reference_id"], name="payout_reference_unique"),
            # A constraint rather than unique=True, which adds a second index for LIKE on PostgreSQL: nothing searches
            # end-to-end ids by prefix.
            models.UniqueConstraint(fields=["external_id"], name="payout_external_id_unique"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="payout_amount_positive"),
            models.CheckConstraint(condition=Q(fee__gte=0), name="payout_fee_not_negative"),
        ]

    def __str__(self) -> str:
        return f"payout {self.amount} {self.status}"


class PayoutDailyTotal(models.Model):
    """What a merchant's payouts of one Sao Paulo day add up to, FAILED and CANCELED ones left out: the daily limit
    is checked against this one row, under the ledger lock, however many payouts the day already has."""

    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="+")
    livemode = models.BooleanField()
    day = models.DateField()
    amount = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["merchant", "livemode", "day"], name="payout_daily_total_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.merchant_id} {'live' if self.livemode else 'test'} {self.day}: {self.amount}"
