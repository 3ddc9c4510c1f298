"""Writes to accounts: sign-up, KYC submission and decisions, suspension, settings and password changes. Each one is
audited in AccountEvent; other apps record their staff actions there through `audit_record`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from accounts.members import owner_membership_create
from accounts.models import AccountEvent, KycStatus, KycSubmission, Merchant, User
from accounts.signals import merchant_changed
from core.errors import DomainError, InvalidState


class EmailTaken(DomainError):
    code = "email_taken"
    message = gettext_lazy("An account with this email already exists")


class RejectionReasonRequired(DomainError):
    code = "reason_required"
    message = gettext_lazy("A rejection needs a reason; the merchant will see it")


@dataclass(frozen=True)
class KycData:
    legal_name: str
    trading_name: str
    document: str
    document_type: str
    street: str
    number: str
    complement: str
    city: str
    state: str
    zip_code: str
    phone: str
    website: str
    document_file: UploadedFile | None


def merchant_signup(*, email: str, password: str, name: str) -> Merchant:
    email = User.objects.normalize_email(email).lower()
    with transaction.atomic():
        if User.objects.filter(email=email).exists():
            raise EmailTaken(param="email")
        user = User.objects.create_user(email=email, password=password)
        merchant = Merchant.objects.create(owner=user, name=name)
        owner_membership_create(merchant=merchant)
        AccountEvent.objects.create(merchant=merchant, actor=user, action=AccountEvent.Action.SIGNED_UP,
                                    to_status=KycStatus.NOT_SUBMITTED)
    return merchant


def _kyc_transition(*, merchant: Merchant, to: KycStatus, actor: User | None, action: str, reason: str = "",
                    sources: set[KycStatus] | None = None, shown: bool = False) -> None:
    """The only writer of kyc_status: one conditional update, so two staff members deciding at once cannot both win.
    The reason is shown to the merchant (kyc_rejection_reason) after a rejection, or when `shown`."""
    sources = sources if sources is not None else Merchant.KYC_TRANSITIONS[to]
    current = Merchant.objects.filter(pk=merchant.pk).values_list("kyc_status", flat=True).first()
    shown_reason = reason if shown or to == KycStatus.REJECTED else ""
    updated = Merchant.objects.filter(pk=merchant.pk, kyc_status__in=sources, kyc_status=current).update(
        kyc_status=to, kyc_rejection_reason=shown_reason)
    if not updated:
        raise InvalidState(gettext("KYC cannot move from %(current)s to %(to)s") % {"current": current, "to": to})
    AccountEvent.objects.create(merchant=merchant, actor=actor, action=action, from_status=current, to_status=to,
                                reason=reason)
    # Caches of the merchant (the API's key cache) drop it: live keys follow the KYC status from the next request on.
    merchant_changed.send(sender=Merchant, merchant_id=merchant.pk)
    merchant.kyc_status = to
    merchant.kyc_rejection_reason = shown_reason


def kyc_submit(*, merchant: Merchant, data: KycData, actor: User) -> KycSubmission:
    with transaction.atomic():
        _kyc_transition(merchant=merchant, to=KycStatus.SUBMITTED, actor=actor,
                        action=AccountEvent.Action.KYC_SUBMITTED)
        fields = {k: v for k, v in data.__dict__.items() if k != "document_file"}
        submission, _ = KycSubmission.objects.update_or_create(
            merchant=merchant, defaults={**fields, "submitted_at": timezone.now()})
        if data.document_file is not None:
            submission.document_file.save(data.document_file.name, data.document_file, save=True)
    return submission


def kyc_approve(*, merchant: Merchant, actor: User | None, operator: bool = False) -> None:
    """Staff approve a submitted KYC. `operator` (the createmerchant command) may approve from any status."""
    with transaction.atomic():
        _kyc_transition(merchant=merchant, to=KycStatus.APPROVED, actor=actor, action=AccountEvent.Action.KYC_APPROVED,
                        reason="approved by an operator command" if operator else "",
                        sources=set(KycStatus) - {KycStatus.APPROVED} if operator else None)


def kyc_reject(*, merchant: Merchant, actor: User, reason: str) -> None:
    reason = reason.strip()
    if not reason:
        raise RejectionReasonRequired(param="reason")
    with transaction.atomic():
        _kyc_transition(merchant=merchant, to=KycStatus.REJECTED, actor=actor, action=AccountEvent.Action.KYC_REJECTED,
                        reason=reason)


def kyc_revoke(*, merchant: Merchant, actor: User, reason: str, review_again: bool = False) -> None:
    """Staff take back an approval: REJECTED, or SUBMITTED to be reviewed again (the submission stays). Either way
    the merchant's live keys are refused from the next request on and the KYC page shows the reason."""
    reason = reason.strip()
    if not reason:
        raise RejectionReasonRequired(param="reason")
    with transaction.atomic():
        _kyc_transition(merchant=merchant, to=KycStatus.SUBMITTED if review_again else KycStatus.REJECTED,
                        actor=actor, action=AccountEvent.Action.KYC_REVOKED, reason=reason,
                        sources={KycStatus.APPROVED}, shown=True)


def merchant_suspend(*, merchant: Merchant, actor: User | None, reason: str = "") -> None:
    with transaction.atomic():
        if not Merchant.objects.filter(pk=merchant.pk, is_suspended=False).update(
                is_suspended=True, suspended_at=timezone.now()):
            raise InvalidState(gettext("The account is already suspended"))
        AccountEvent.objects.create(merchant=merchant, actor=actor, action=AccountEvent.Action.SUSPENDED,
                                    from_status="active", to_status="suspended", reason=reason)
        merchant_changed.send(sender=Merchant, merchant_id=merchant.pk)
    merchant.is_suspended = True


def merchant_reactivate(*, merchant: Merchant, actor: User | None, reason: str = "") -> None:
    with transaction.atomic():
        if not Merchant.objects.filter(pk=merchant.pk, is_suspended=True).update(is_suspended=False,
                                                                                 suspended_at=None):
            raise InvalidState(gettext("The account is not suspended"))
        AccountEvent.objects.create(merchant=merchant, actor=actor, action=AccountEvent.Action.REACTIVATED,
                                    from_status="suspended", to_status="active", reason=reason)
        merchant_changed.send(sender=Merchant, merchant_id=merchant.pk)
    merchant.is_suspended = False


def audit_record(*, merchant: Merchant, actor: User | None, action: str, reason: str = "", details: dict | None = None,
                 from_status: str = "", to_status: str = "", actor_key: str = "") -> AccountEvent:
    """Add a line to the merchant's audit trail. Call it inside the transaction of the change it records, so the
    change and its audit line are committed together or not at all."""
    return AccountEvent.objects.create(merchant=merchant, actor=actor, action=action, reason=reason,
                                       details=details or {}, from_status=from_status, to_status=to_status,
                                       actor_key=actor_key)


# Fields of a merchant staff may change in the admin. Status fields have their own services (KYC, suspension).
MERCHANT_SETTINGS = (
    "name", "api_rate_limit", "pix_fee_bps", "card_fee_bps", "card_fee_fixed", "boleto_fee_fixed", "payout_fee_fixed",
    "charge_max_amount", "payout_max_amount", "payout_daily_max", "card_settlement_days",
    "boleto_fine_bps", "boleto_interest_bps",
)
# Of those, what a merchant sets for itself (the API's boleto settings): a late live boleto's fine and interest.
MERCHANT_OWN_SETTINGS = ("boleto_fine_bps", "boleto_interest_bps")


def _shown(value: Any) -> str:
    return "default" if value is None else repr(value) if isinstance(value, str) else str(value)


def merchant_settings_change(*, merchant: Merchant, actor: User | None, changes: dict[str, Any],
                             actor_key: str = "") -> AccountEvent | None:
    """Staff override a merchant's name, fees, limits or rate limit (None: back to the setting's default). Only the
    changed columns are written, so a KYC decision or suspension made meanwhile is not overwritten with a stale
    value; the audit line records each field's old and new value."""
    unknown = set(changes) - set(MERCHANT_SETTINGS)
    if unknown:
        raise ValueError(f"not merchant settings: {sorted(unknown)}")
    with transaction.atomic():
        current = Merchant.objects.select_for_update().values(*changes).get(pk=merchant.pk) if changes else {}
        diff = {field: {"from": current[field], "to": value} for field, value in changes.items()
                if current[field] != value}
        if not diff:
            return None
        Merchant.objects.filter(pk=merchant.pk).update(**{field: change["to"] for field, change in diff.items()})
        event = audit_record(
            merchant=merchant, actor=actor, actor_key=actor_key, action=AccountEvent.Action.SETTINGS_CHANGED,
            details={"changes": diff},
            reason="; ".join(f"{field}: {_shown(c['from'])} → {_shown(c['to'])}" for field, c in diff.items()))
        # The API serves the name and rate limit from its key cache: it drops the merchant.
        merchant_changed.send(sender=Merchant, merchant_id=merchant.pk)
    for field, change in diff.items():
        setattr(merchant, field, change["to"])
    return event


def password_change(*, user: User, password: str, actor: User | None, how: str) -> None:
    """Set a new password (already validated by the form). Every other session of the user ends: Django checks a
    session against a hash of the password; the caller keeps its own with `update_session_auth_hash`."""
    with transaction.atomic():
        user.set_password(password)
        user.save(update_fields=["password"])
        for merchant in Merchant.objects.filter(owner=user).order_by("created_at"):  # a person may own several
            audit_record(merchant=merchant, actor=actor, action=AccountEvent.Action.PASSWORD_CHANGED, reason=how)
