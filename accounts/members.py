"""A merchant's team: memberships, invitations, role changes, removal, ownership transfer and the owner's
"require two-factor for everyone". Each change is audited; the checks of who may do it are here, not in the views.

Rules: only the owner changes the owner's membership (and transfers ownership); admins manage everyone else. There is
always exactly one owner (a unique constraint), and `Merchant.owner` names the same user."""

from __future__ import annotations

import datetime
import hashlib
import secrets

from django.contrib.auth import password_validation
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from accounts import emails
from accounts.audit import audit_record
from accounts.models import AccountEvent, Invitation, Membership, Merchant, Role, User
from accounts.signals import merchant_changed
from accounts.usersessions import sessions_end_all
from core.errors import DomainError

INVITATION_LIFETIME = datetime.timedelta(hours=72)


class OwnerOnly(DomainError):
    code = "owner_only"
    message = gettext_lazy("Only the owner can change the owner's access.")
    http_status = 403


class AlreadyMember(DomainError):
    code = "already_member"
    message = gettext_lazy("This person is already a member of this account.")


class InvitationInvalid(DomainError):
    code = "invitation_invalid"
    message = gettext_lazy("This invitation link is not valid: it was used, withdrawn or has expired. Ask for a new "
                           "one.")


class InvitationForSomeoneElse(DomainError):
    code = "invitation_other_email"
    message = gettext_lazy("This invitation is for another e-mail address. Log out and open the link again.")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def membership_of(*, user, merchant_id=None) -> Membership | None:
    """The user's membership in that merchant, or their first one (oldest) when none is named."""
    if not getattr(user, "is_authenticated", False):
        return None
    rows = Membership.objects.filter(user=user).select_related("merchant").order_by("created_at", "id")
    if merchant_id:
        chosen = rows.filter(merchant_id=merchant_id).first()
        if chosen is not None:
            return chosen
    return rows.first()


def memberships_of(*, user) -> list[Membership]:
    return list(Membership.objects.filter(user=user).select_related("merchant").order_by("merchant__name"))


def member_list(*, merchant: Merchant) -> list[Membership]:
    return list(merchant.memberships.select_related("user").order_by("created_at", "id"))


def invitation_list(*, merchant: Merchant) -> list[Invitation]:
    return list(merchant.invitations.filter(accepted_at__isnull=True, revoked_at__isnull=True,
                                            expires_at__gt=timezone.now()).order_by("-created_at"))


def owner_membership_create(*, merchant: Merchant) -> Membership:
    """The signing-up user becomes the owner member (sign-up and operator commands call this)."""
    return Membership.objects.get_or_create(user=merchant.owner, merchant=merchant, defaults={"role": Role.OWNER})[0]


def invitation_create(request: HttpRequest | None, *, merchant: Merchant, email: str, role: str,
                      invited_by: User) -> Invitation:
    """E-mail a single-use link valid 72 hours. Inviting someone as owner is a transfer, not an invitation."""
    email = User.objects.normalize_email(email).lower()
    if role == Role.OWNER:
        raise OwnerOnly(param="role")
    if Membership.objects.filter(merchant=merchant, user__email=email).exists():
        raise AlreadyMember(param="email")
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        invitation = Invitation.objects.create(merchant=merchant, email=email, role=role, invited_by=invited_by,
                                               token_digest=_digest(token),
                                               expires_at=timezone.now() + INVITATION_LIFETIME)
        audit_record(request, merchant=merchant, action=AccountEvent.Action.MEMBER_INVITED, obj_type="invitation",
                     obj_id=str(invitation.pk), after={"email": email, "role": role})
    emails.email_send(to=email, template="invitation", context={
        "merchant": merchant, "role": role, "invited_by": invited_by, "path": f"/dashboard/invitations/{token}/"})
    return invitation


def invitation_get(*, token: str) -> Invitation:
    invitation = Invitation.objects.select_related("merchant").filter(token_digest=_digest(token)).first()
    if (invitation is None or invitation.accepted_at or invitation.revoked_at
            or invitation.expires_at <= timezone.now()):
        raise InvitationInvalid()
    return invitation


def invitation_accept(request: HttpRequest | None, *, token: str, user: User | None,
                      password: str | None = None) -> Membership:
    """Join with the signed-in account (same e-mail), or create the account with `password` when there is none."""
    invitation = invitation_get(token=token)
    with transaction.atomic():
        # Conditional: of two acceptances of one link, one wins.
        if not Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(accepted_at=timezone.now()):
            raise InvitationInvalid()
        if user is None:
            if User.objects.filter(email=invitation.email).exists():
                raise InvitationForSomeoneElse()
            password_validation.validate_password(password, User(email=invitation.email))
            user = User.objects.create_user(email=invitation.email, password=password)
        elif user.email.lower() != invitation.email:
            raise InvitationForSomeoneElse()
        try:
            with transaction.atomic():
                membership = Membership.objects.create(user=user, merchant=invitation.merchant, role=invitation.role)
        except IntegrityError as exc:
            raise AlreadyMember() from exc
        audit_record(request, merchant=invitation.merchant, action=AccountEvent.Action.MEMBER_JOINED,
                     actor_user=user, obj_type="member", obj_id=str(user.pk),
                     after={"email": user.email, "role": invitation.role})
    return membership


def invitation_revoke(request: HttpRequest | None, *, merchant: Merchant, invitation_id: int) -> None:
    Invitation.objects.filter(merchant=merchant, pk=invitation_id, accepted_at__isnull=True).update(
        revoked_at=timezone.now())


def _guard(actor: Membership, target: Membership) -> None:
    if target.role == Role.OWNER and actor.role != Role.OWNER:
        raise OwnerOnly()


def member_role_change(request: HttpRequest | None, *, actor: Membership, member_id: int, role: str) -> Membership:
    target = Membership.objects.select_related("user").get(merchant=actor.merchant, pk=member_id)
    _guard(actor, target)
    if role == Role.OWNER or target.role == Role.OWNER:
        raise OwnerOnly(gettext("Use the ownership transfer to give or take the owner's role."))
    before = target.role
    with transaction.atomic():
        Membership.objects.filter(pk=target.pk).update(role=role)
        audit_record(request, merchant=actor.merchant, action=AccountEvent.Action.MEMBER_ROLE_CHANGED,
                     obj_type="member", obj_id=str(target.user_id), before={"role": before}, after={"role": role},
                     reason=target.user.email)
    target.role = role
    return target


def member_remove(request: HttpRequest | None, *, actor: Membership, member_id: int) -> None:
    """Remove a member; their sessions end at once (and every request checks the membership anyway)."""
    target = Membership.objects.select_related("user").get(merchant=actor.merchant, pk=member_id)
    _guard(actor, target)
    if target.role == Role.OWNER:
        raise OwnerOnly(gettext("Transfer the ownership before the owner leaves."))
    with transaction.atomic():
        target.delete()
        audit_record(request, merchant=actor.merchant, action=AccountEvent.Action.MEMBER_REMOVED, obj_type="member",
                     obj_id=str(target.user_id), before={"role": target.role}, reason=target.user.email)
    sessions_end_all(user=target.user)


def ownership_transfer(request: HttpRequest | None, *, actor: Membership, member_id: int) -> None:
    """The owner hands the owner's role to another member and becomes an admin."""
    if actor.role != Role.OWNER:
        raise OwnerOnly()
    target = Membership.objects.select_related("user").get(merchant=actor.merchant, pk=member_id)
    if target.pk == actor.pk:
        raise OwnerOnly(gettext("You are the owner already: choose another member."))
    with transaction.atomic():
        # The merchant row, locked, orders two transfers of the same merchant: the second finds its sender no longer
        # the owner (a double click, two tabs) and is refused instead of breaking the one-owner constraint.
        Merchant.objects.select_for_update().filter(pk=actor.merchant_id).first()
        if not Membership.objects.filter(pk=actor.pk, role=Role.OWNER).exists():
            raise OwnerOnly()
        Membership.objects.filter(pk=actor.pk).update(role=Role.ADMIN)
        Membership.objects.filter(pk=target.pk).update(role=Role.OWNER)
        Merchant.objects.filter(pk=actor.merchant_id).update(owner=target.user)
        audit_record(request, merchant=actor.merchant, action=AccountEvent.Action.MEMBER_ROLE_CHANGED,
                     obj_type="member", obj_id=str(target.user_id), before={"role": target.role},
                     after={"role": Role.OWNER}, reason=f"ownership transferred to {target.user.email}")
        merchant_changed.send(sender=Merchant, merchant_id=actor.merchant_id)


def require_two_factor_set(request: HttpRequest | None, *, actor: Membership, required: bool) -> None:
    if actor.role != Role.OWNER:
        raise OwnerOnly()
    merchant = actor.merchant
    with transaction.atomic():
        Merchant.objects.filter(pk=merchant.pk).update(require_two_factor=required)
        audit_record(request, merchant=merchant, action=AccountEvent.Action.SETTINGS_CHANGED, obj_type="merchant",
                     obj_id=str(merchant.pk), before={"require_two_factor": merchant.require_two_factor},
                     after={"require_two_factor": required})
    merchant.require_two_factor = required
