from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.core.validators import MaxValueValidator
from django.db import models
from django.utils import timezone

from core import crypto
from core.formats.text import refuse_hidden_characters
from core.ids import uuid7


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
    name = models.CharField(max_length=120, validators=[refuse_hidden_characters])  # payers read it
    # A person may own several merchants (a second company, or one handed over by a transfer): one owner per
    # merchant (Membership's `membership_one_owner`), any number of merchants per person (issue 37, item 16).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_merchants")
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
    # Live boletos (registered at the bank): what a late payer pays on top. Empty or 0: nothing (the default).
    boleto_fine_bps = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(1000)],
        help_text="boletoFine: fine on a late live boleto, in basis points of the amount (200 = 2%, at most 1000); "
                  "default BOLETO_FINE_BPS (0: none).")
    boleto_interest_bps = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(1000)],
        help_text="boletoInterest: interest on a late live boleto, in basis points of the amount a month (100 = 1% "
                  "a month, charged by the day; at most 1000); default BOLETO_INTEREST_BPS (0: none).")
    require_two_factor = models.BooleanField(
        default=False, help_text="Every member must use a second factor before the dashboard opens (set by the owner).")
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
    legal_name = models.CharField(max_length=150, validators=[refuse_hidden_characters])
    trading_name = models.CharField(max_length=150, validators=[refuse_hidden_characters])  # payers read it
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
    """The audit log, append-only: every KYC decision, suspension, staff change, sign-in, second-factor change,
    member change and security- or money-relevant action, who made it (a user, or an API key pair), on which merchant
    (empty for a sign-in of a user with no merchant, such as staff), on which object, from where, when, and from what
    to what. `reason` is the line a person reads; `details` holds the same facts for a program. Written only through
    `accounts.audit.audit_record` (and the services that call it); rows are never changed or deleted."""

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
        SIGNED_IN = "signed_in", "Signed in"
        SIGN_IN_FAILED = "sign_in_failed", "Sign-in failed"
        TWO_FACTOR_ENABLED = "two_factor_enabled", "Two-factor sign-in enabled"
        TWO_FACTOR_DISABLED = "two_factor_disabled", "Two-factor sign-in disabled"
        RECOVERY_CODE_USED = "recovery_code_used", "Recovery code used"
        MEMBER_INVITED = "member_invited", "Member invited"
        MEMBER_JOINED = "member_joined", "Member joined"
        MEMBER_ROLE_CHANGED = "member_role_changed", "Member role changed"
        MEMBER_REMOVED = "member_removed", "Member removed"
        SESSION_ENDED = "session_ended", "Session ended"
        KEY_CREATED = "key_created", "API key created"
        KEY_REVOKED = "key_revoked", "API key revoked"
        SECRET_REVEALED = "signing_secret_revealed", "Signing secret revealed"
        SECRET_ROTATED = "signing_secret_rotated", "Signing secret rotated"
        ENDPOINT_ADDED = "endpoint_added", "Webhook endpoint added"
        ENDPOINT_CHANGED = "endpoint_changed", "Webhook endpoint changed"
        PAYOUT_CREATED = "payout_created", "Payout created"
        PAYOUT_CANCELED = "payout_canceled", "Payout canceled"
        REFUND_CREATED = "refund_created", "Refund created"
        CHARGE_CANCELED = "charge_canceled", "Charge canceled"
        UNMATCHED_ACCEPTED = "unmatched_accepted", "Unmatched payment accepted"
        UNMATCHED_REFUNDED = "unmatched_refunded", "Unmatched payment sent back"
        UNMATCHED_POLICY_CHANGED = "unmatched_policy_changed", "Unmatched payment policy changed"
        DISPUTE_EVIDENCE_SENT = "dispute_evidence_sent", "Dispute evidence sent"
        DISPUTE_ACCEPTED = "dispute_accepted", "Dispute accepted"
        STAFF_ACTION = "staff_action", "Staff action in the admin"

    # No index of their own: each is the first column of one of Meta.indexes, and every payout writes a row here.
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="account_events", null=True,
                                 blank=True, db_index=False)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                              related_name="+", help_text="Empty for operator commands and API key pairs.",
                              db_index=False)
    actor_key = models.CharField(max_length=64, blank=True, help_text="The public key of the API key pair that acted.")
    action = models.CharField(max_length=40, choices=Action.choices)
    obj_type = models.CharField(max_length=40, blank=True)
    obj_id = models.CharField(max_length=64, blank=True)
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["merchant", "created_at"]), models.Index(fields=["actor", "created_at"])]

    def __str__(self) -> str:
        return f"{self.action} {self.from_status}→{self.to_status}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise ValueError("The audit log is append-only: an entry is never changed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("The audit log is append-only: an entry is never deleted")


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    DEVELOPER = "developer", "Developer"
    FINANCE = "finance", "Finance"
    VIEWER = "viewer", "Viewer"


class Membership(models.Model):
    """A person's place in a merchant's team. The owner's membership mirrors `Merchant.owner`."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "merchant"], name="membership_once_per_merchant"),
            models.UniqueConstraint(fields=["merchant"], condition=models.Q(role="owner"),
                                    name="membership_one_owner"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) at {self.merchant}"


class Invitation(models.Model):
    """An e-mailed, single-use link to join a merchant; only the link's digest is stored."""

    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=16, choices=Role.choices)
    token_digest = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.email} to {self.merchant} as {self.role}"


TOTP_SEALED = {"key_setting": "TOTP_SECRET_ENCRYPTION_KEY", "purpose": b"totp-seed", "aad": b"totp"}


class TotpDevice(models.Model):
    """A user's authenticator app (RFC 6238). Unconfirmed until the first code is entered; `last_step` refuses a
    code's reuse within its 30 seconds."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="totp")
    # The seed, encrypted (core.crypto): the codes are computed from it, so it cannot be a digest.
    secret_sealed = models.CharField(max_length=200)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    last_step = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"authenticator of {self.user}"

    @property
    def secret(self) -> str:
        return crypto.unseal(self.secret_sealed, **TOTP_SEALED)

    @secret.setter
    def secret(self, value: str) -> None:
        self.secret_sealed = crypto.seal(value, **TOTP_SEALED)


class RecoveryCode(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="recovery_codes")
    code_hash = models.CharField(max_length=128)
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"recovery code of {self.user}"


class UserSession(models.Model):
    """What the sessions page lists: one row per signed-in session (the session itself is Django's)."""

    session_key = models.CharField(max_length=40, primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sessions")
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"session of {self.user} from {self.ip}"
