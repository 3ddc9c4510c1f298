from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.utils import timezone

from config.ids import uuid7


class UserManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra) -> User:
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra) -> User:
        extra.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    """A person who logs in: a merchant's owner, or staff. The email is the login."""

    email = models.EmailField(unique=True, max_length=254)
    is_staff = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)
    date_joined = models.DateTimeField(default=timezone.now)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"

    def __str__(self) -> str:
        return self.email


class KycStatus(models.TextChoices):
    NOT_SUBMITTED = "NOT_SUBMITTED"
    SUBMITTED = "SUBMITTED"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"


class Merchant(models.Model):
    # Which KYC statuses each status may be reached from; `kyc_transition` is the only writer of kyc_status.
    KYC_TRANSITIONS = {
        KycStatus.SUBMITTED: {KycStatus.NOT_SUBMITTED, KycStatus.REJECTED},
        KycStatus.APPROVED: {KycStatus.SUBMITTED},
        KycStatus.REJECTED: {KycStatus.SUBMITTED},
    }

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    name = models.CharField(max_length=120)
    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="merchant")
    kyc_status = models.CharField(max_length=16, choices=KycStatus.choices, default=KycStatus.NOT_SUBMITTED)
    kyc_rejection_reason = models.TextField(blank=True)
    is_suspended = models.BooleanField(default=False)
    suspended_at = models.DateTimeField(null=True, blank=True)
    api_rate_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="Requests per second per key pair; empty means the default (API_RATE_LIMIT).")
    # Pricing and limits: empty means the default of the setting named in the help text (SPEC §4.1, §5).
    pix_fee_bps = models.PositiveIntegerField(
        null=True, blank=True, help_text="PIX pay-in fee in basis points (99 = 0.99%); default FEE_PIX_BPS.")
    card_fee_bps = models.PositiveIntegerField(
        null=True, blank=True, help_text="Card fee in basis points (399 = 3.99%); default FEE_CARD_BPS.")
    card_fee_fixed = models.PositiveIntegerField(
        null=True, blank=True, help_text="Card fee, fixed part in cents; default FEE_CARD_FIXED.")
    boleto_fee_fixed = models.PositiveIntegerField(
        null=True, blank=True, help_text="Boleto fee in cents; default FEE_BOLETO_FIXED.")
    payout_fee_fixed = models.PositiveIntegerField(
        null=True, blank=True, help_text="Payout fee in cents; default FEE_PAYOUT_FIXED.")
    charge_max_amount = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Largest charge in cents; default CHARGE_MAX_AMOUNT.")
    payout_max_amount = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Largest payout in cents; default PAYOUT_MAX_AMOUNT.")
    payout_daily_max = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Payouts per day (America/Sao_Paulo) in cents; default PAYOUT_DAILY_MAX.")
    card_settlement_days = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Days before live card money becomes available; default CARD_SETTLEMENT_DAYS (test mode: 0).")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["kyc_status", "created_at"])]

    def __str__(self) -> str:
        return self.name

    @property
    def kyc_approved(self) -> bool:
        return self.kyc_status == KycStatus.APPROVED


class KycSubmission(models.Model):
    """What the merchant last submitted for review. A resubmission replaces it; decisions are kept in AccountEvent."""

    class DocumentType(models.TextChoices):
        CPF = "CPF"
        CNPJ = "CNPJ"

    merchant = models.OneToOneField(Merchant, on_delete=models.CASCADE, related_name="kyc")
    legal_name = models.CharField(max_length=150)
    trading_name = models.CharField(max_length=150)
    document = models.CharField(max_length=14)
    document_type = models.CharField(max_length=4, choices=DocumentType.choices)
    street = models.CharField(max_length=150)
    number = models.CharField(max_length=20)
    complement = models.CharField(max_length=100, blank=True)
    city = models.CharField(max_length=80)
    state = models.CharField(max_length=2)
    zip_code = models.CharField(max_length=8)
    phone = models.CharField(max_length=13)
    website = models.URLField(max_length=200, blank=True)
    document_file = models.FileField(upload_to="kyc/%Y/%m/")
    submitted_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"KYC of {self.merchant}"


class AccountEvent(models.Model):
    """The audit trail of an account: every KYC decision, suspension and staff change, who made it, when, from what
    to what. `reason` is the line a person reads; `details` holds the same facts for a program (changed fields with
    their old and new values, an adjustment's amount and mode, a delivery's id)."""

    class Action(models.TextChoices):
        SIGNED_UP = "signed_up", "Signed up"
        KYC_SUBMITTED = "kyc_submitted", "KYC submitted"
        KYC_APPROVED = "kyc_approved", "KYC approved"
        KYC_REJECTED = "kyc_rejected", "KYC rejected"
        KYC_REVOKED = "kyc_revoked", "KYC approval withdrawn"
        SUSPENDED = "suspended", "Suspended"
        REACTIVATED = "reactivated", "Reactivated"
        SETTINGS_CHANGED = "settings_changed", "Settings changed"
        BALANCE_ADJUSTED = "balance_adjusted", "Balance adjusted"
        DELIVERY_RESENT = "delivery_resent", "Webhook delivery resent"
        PASSWORD_CHANGED = "password_changed", "Password changed"

    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="account_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                              related_name="+", help_text="Empty for operator commands.")
    action = models.CharField(max_length=20, choices=Action.choices)
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16, blank=True)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["merchant", "created_at"])]

    def __str__(self) -> str:
        return f"{self.action} {self.from_status}→{self.to_status}"
