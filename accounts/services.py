"""Writes to accounts: sign-up, KYC submission and decisions, suspension. Each decision is audited."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from accounts.models import AccountEvent, KycStatus, KycSubmission, Merchant, User
from config.errors import DomainError, InvalidState
from integrations import authcache


class EmailTaken(DomainError):
    code = "email_taken"
    message = "An account with this email already exists"


class RejectionReasonRequired(DomainError):
    code = "reason_required"
    message = "A rejection needs a reason; the merchant will see it"


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
        AccountEvent.objects.create(merchant=merchant, actor=user, action=AccountEvent.Action.SIGNED_UP,
                                    to_status=KycStatus.NOT_SUBMITTED)
    return merchant


def _kyc_transition(*, merchant: Merchant, to: KycStatus, actor: User | None, action: str, reason: str = "",
                    sources: set[KycStatus] | None = None) -> None:
    """The only writer of kyc_status: one conditional update, so two staff members deciding at once cannot both win."""
    sources = sources if sources is not None else Merchant.KYC_TRANSITIONS[to]
    current = Merchant.objects.filter(pk=merchant.pk).values_list("kyc_status", flat=True).first()
    updated = Merchant.objects.filter(pk=merchant.pk, kyc_status__in=sources, kyc_status=current).update(
        kyc_status=to, kyc_rejection_reason=reason if to == KycStatus.REJECTED else "")
    if not updated:
        raise InvalidState(f"KYC cannot move from {current} to {to}")
    AccountEvent.objects.create(merchant=merchant, actor=actor, action=action, from_status=current, to_status=to,
                                reason=reason)
    authcache.invalidate_merchant(merchant.pk)  # live keys follow the KYC status from the next request on
    merchant.kyc_status = to
    merchant.kyc_rejection_reason = reason if to == KycStatus.REJECTED else ""


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


def merchant_suspend(*, merchant: Merchant, actor: User | None, reason: str = "") -> None:
    with transaction.atomic():
        if not Merchant.objects.filter(pk=merchant.pk, is_suspended=False).update(
                is_suspended=True, suspended_at=timezone.now()):
            raise InvalidState("The account is already suspended")
        AccountEvent.objects.create(merchant=merchant, actor=actor, action=AccountEvent.Action.SUSPENDED,
                                    from_status="active", to_status="suspended", reason=reason)
        authcache.invalidate_merchant(merchant.pk)
    merchant.is_suspended = True


def merchant_reactivate(*, merchant: Merchant, actor: User | None, reason: str = "") -> None:
    with transaction.atomic():
        if not Merchant.objects.filter(pk=merchant.pk, is_suspended=True).update(is_suspended=False,
                                                                                 suspended_at=None):
            raise InvalidState("The account is not suspended")
        AccountEvent.objects.create(merchant=merchant, actor=actor, action=AccountEvent.Action.REACTIVATED,
                                    from_status="suspended", to_status="active", reason=reason)
        authcache.invalidate_merchant(merchant.pk)
    merchant.is_suspended = False
