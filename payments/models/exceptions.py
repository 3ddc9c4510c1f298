"""Money that did not go the way a charge said (issue 14): payments that matched no PENDING charge exactly, and
disputes (card chargebacks, Pix MED). Each is a first-class object with a status, moved by conditional updates, and
its money sits in the merchant's `held` balance until it is decided. A live Pix naming no charge at all is nobody's
(an unattributed payment): staff send it back to the payer."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Merchant
from core.ids import uuid7
from payments.models.core import Payin, RailNotification


class UnmatchedKind(models.TextChoices):
    AMOUNT_MISMATCH = "AMOUNT_MISMATCH"  # a PENDING charge paid with another amount
    DUPLICATE = "DUPLICATE"  # a second payment of a charge already paid
    AFTER_CANCEL = "AFTER_CANCEL"  # a payment of a CANCELED (or FAILED) charge
    UNKNOWN_REFERENCE = "UNKNOWN_REFERENCE"  # a payment naming no charge we know


class UnmatchedStatus(models.TextChoices):
    HELD = "HELD"
    ACCEPTED = "ACCEPTED"
    REFUND_PENDING = "REFUND_PENDING"
    REFUNDED = "REFUNDED"
    REFUND_FAILED = "REFUND_FAILED"


class UnmatchedAction(models.TextChoices):
    """What the merchant wants done with an unmatched payment of a kind, as soon as it arrives."""

    REFUND = "refund"
    ACCEPT = "accept"
    HOLD = "hold"


class UnmatchedPayment(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="unmatched_payments")
    livemode = models.BooleanField()
    kind = models.CharField(max_length=20, choices=UnmatchedKind.choices)
    status = models.CharField(max_length=16, choices=UnmatchedStatus.choices, default=UnmatchedStatus.HELD)
    payin = models.ForeignKey(Payin, on_delete=models.PROTECT, null=True, blank=True,
                              related_name="unmatched_payments")
    amount = models.BigIntegerField()
    fee = models.BigIntegerField(default=0)  # the method's fee, taken when it is accepted
    payer_name = models.CharField(max_length=200, blank=True)
    payer_document = models.CharField(max_length=14, blank=True)
    # The rail's id of the money that arrived: one unmatched payment per Pix, however often it is notified.
    end_to_end_id = models.CharField(max_length=64)
    failure_code = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["end_to_end_id"], name="unmatched_payment_once"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="unmatched_payment_amount_positive"),
        ]
        indexes = [models.Index(fields=["merchant", "livemode", "created_at", "id"], name="unmatched_list")]

    def __str__(self) -> str:
        return f"unmatched {self.kind} {self.amount} {self.status}"


class UnmatchedPolicy(models.Model):
    """A merchant's choice for one kind; a kind without a row follows `unmatched.selectors.DEFAULT_POLICY`."""

    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="unmatched_policies")
    kind = models.CharField(max_length=20, choices=UnmatchedKind.choices)
    action = models.CharField(max_length=8, choices=UnmatchedAction.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["merchant", "kind"], name="unmatched_policy_unique")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.action}"


class DisputeKind(models.TextChoices):
    CHARGEBACK = "CHARGEBACK"  # a card network's chargeback
    MED = "MED"  # Pix's Mecanismo Especial de Devolução (fraud or operational failure)


class DisputeStatus(models.TextChoices):
    OPEN = "OPEN"
    UNDER_REVIEW = "UNDER_REVIEW"
    WON = "WON"
    LOST = "LOST"
    ACCEPTED = "ACCEPTED"


class DisputeRailAnswer(models.TextChoices):
    """Where the merchant's answer to a rail's case (evidence, or accepting it) stands with the rail."""

    NONE = "", "No answer to send"
    PENDING = "PENDING"  # committed here; the worker (or reconciliation) sends it under the case's id
    SENT = "SENT"
    REFUSED = "REFUSED"  # the rail would not take it (the case was closed first): its decision still comes


class Dispute(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="disputes")
    livemode = models.BooleanField()
    payin = models.ForeignKey(Payin, on_delete=models.PROTECT, related_name="disputes")
    kind = models.CharField(max_length=10, choices=DisputeKind.choices)
    reason = models.CharField(max_length=100, blank=True)
    amount = models.BigIntegerField()
    status = models.CharField(max_length=12, choices=DisputeStatus.choices, default=DisputeStatus.OPEN)
    evidence_due_by = models.DateTimeField()
    evidence_text = models.TextField(blank=True)
    evidence_submitted_at = models.DateTimeField(null=True, blank=True)
    # The rail's id of the case (Efí's MED infraction id), when the rail opened it.
    rail_reference = models.CharField(max_length=64, blank=True)
    rail_answer = models.CharField(max_length=8, blank=True, choices=DisputeRailAnswer.choices)
    # The merchant accepted a rail's case: the acceptance is the answer sent, and the case stays open (its money held)
    # until the rail closes it, then ACCEPTED (or WON if the rail kept the money with the merchant after all).
    rail_answer_accept = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # One open case per charge and kind: a repeated notice of the same case opens nothing new.
            models.UniqueConstraint(fields=["payin", "kind"], name="dispute_open_once",
                                    condition=Q(status__in=["OPEN", "UNDER_REVIEW"])),
            models.CheckConstraint(condition=Q(amount__gt=0), name="dispute_amount_positive"),
        ]
        indexes = [
            models.Index(fields=["merchant", "livemode", "created_at", "id"], name="dispute_list"),
            models.Index(fields=["evidence_due_by"], name="dispute_due",
                         condition=Q(status__in=["OPEN", "UNDER_REVIEW"])),
            models.Index(fields=["rail_reference"], name="dispute_rail_reference", condition=~Q(rail_reference="")),
        ]

    def __str__(self) -> str:
        return f"dispute {self.kind} {self.amount} {self.status}"


class UnattributedStatus(models.TextChoices):
    RECEIVED = "RECEIVED"  # at the platform's account, nobody's: staff decide
    REFUND_PENDING = "REFUND_PENDING"  # committed here; the worker (or reconciliation) asks the rail under refund_key
    REFUNDED = "REFUNDED"
    REFUND_FAILED = "REFUND_FAILED"  # the rail could not give it back: staff may send it again


class UnattributedPayment(models.Model):
    """A Pix to the platform's key that names no charge and no merchant (a real rail's): the platform's money, in
    no merchant's ledger, until staff send it back to the payer (a devolução through the rail)."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    rail = models.CharField(max_length=20)
    notification = models.ForeignKey(RailNotification, on_delete=models.PROTECT, related_name="+",
                                     help_text="The rail's notification it arrived in.")
    # The rail's id of the money that arrived: one unattributed payment per Pix, however often it is notified.
    end_to_end_id = models.CharField(max_length=64)
    amount = models.BigIntegerField()
    payer_name = models.CharField(max_length=200, blank=True)
    payer_document = models.CharField(max_length=14, blank=True)
    status = models.CharField(max_length=16, choices=UnattributedStatus.choices, default=UnattributedStatus.RECEIVED)
    # The key of the devolução at the rail: the payment's id, and a new one only after the rail refused the last.
    refund_key = models.UUIDField(null=True, blank=True, editable=False)
    failure_code = models.CharField(max_length=40, blank=True)
    refunded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                                    related_name="+", help_text="The staff member who sent it back.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["end_to_end_id"], name="unattributed_payment_once"),
            models.UniqueConstraint(fields=["refund_key"], name="unattributed_refund_key_unique"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="unattributed_payment_amount_positive"),
        ]
        indexes = [models.Index(fields=["updated_at"], name="unattributed_refund_pending",
                                condition=Q(status="REFUND_PENDING"))]
        permissions = [("refund_unattributedpayment", "Can send an unattributed payment back to the payer")]

    def __str__(self) -> str:
        return f"unattributed {self.amount} {self.status}"
