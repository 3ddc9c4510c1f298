"""Two-factor sign-in: TOTP (RFC 6238, an authenticator app) and ten single-use recovery codes.

The secret is made on the server, shown once as a QR code (segno) and confirmed by the first code the app shows.
Recovery codes are shown once and stored as HMAC digests (each has 50 random bits, so a fast digest is enough). A
code is accepted once: `last_step` moves forward with a conditional update, so the same 30-second code cannot sign
in twice, even from two requests at once. Enrolling, disabling and using a recovery code are audited and mailed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

import pyotp
import segno
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy

from accounts import emails
from accounts.audit import audit_record_for_user
from accounts.models import AccountEvent, RecoveryCode, TotpDevice, User
from core.errors import DomainError

ISSUER = "Pagamentos"
RECOVERY_CODES = 10
VALID_WINDOW = 1  # the step before and after the current one: clocks drift, people type slowly


class InvalidCode(DomainError):
    code = "invalid_code"
    message = gettext_lazy("That code is not right. Enter the 6-digit code your app shows now.")


def user_has_second_factor(user) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    if not hasattr(user, "_has_second_factor"):
        user._has_second_factor = TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).exists()
    return user._has_second_factor


def totp_start(*, user: User) -> TotpDevice:
    """A new, unconfirmed secret for the enrolment page (replacing an earlier unconfirmed one)."""
    TotpDevice.objects.filter(user=user, confirmed_at__isnull=True).delete()
    device, _ = TotpDevice.objects.get_or_create(user=user, defaults={"secret": pyotp.random_base32(32)})
    return device


def totp_uri(device: TotpDevice) -> str:
    return pyotp.TOTP(device.secret).provisioning_uri(name=device.user.email, issuer_name=ISSUER)


def totp_qr_data_uri(device: TotpDevice) -> str:
    """The provisioning URI as an SVG QR code in a data: URI (the Content-Security-Policy allows data: images). An
    SVG image needs its xmlns to render (segno's svg_inline, meant for inline <svg>, leaves it out), and a white
    background with the quiet zone, so a phone's camera reads it on any page colour."""
    return segno.make(totp_uri(device), error="m").svg_data_uri(scale=4, light="#fff")


def _code_digest(user: User, code: str) -> str:
    normalized = code.replace("-", "").replace(" ", "").lower()
    return hmac.new(settings.SECRET_KEY.encode(), f"recovery:{user.pk}:{normalized}".encode(),
                    hashlib.sha256).hexdigest()


def _recovery_codes_new(user: User) -> list[str]:
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = base64.b32encode(secrets.token_bytes(7)).decode().lower()[:10]  # 50 bits
        codes.append(f"{raw[:5]}-{raw[5:]}")
    RecoveryCode.objects.filter(user=user).delete()
    RecoveryCode.objects.bulk_create([RecoveryCode(user=user, code_hash=_code_digest(user, c)) for c in codes])
    return codes


def _step_accept(device: TotpDevice, code: str) -> bool:
    code = code.strip().replace(" ", "")
    if not (len(code) == 6 and code.isdigit()):
        return False
    totp = pyotp.TOTP(device.secret)
    now = totp.timecode(timezone.now())
    for step in range(now - VALID_WINDOW, now + VALID_WINDOW + 1):
        if hmac.compare_digest(totp.generate_otp(step), code):
            # Conditional: a step already used (or an older one) is refused, whoever asks first wins.
            return bool(TotpDevice.objects.filter(pk=device.pk, last_step__lt=step).update(last_step=step))
    return False


def totp_confirm(request: HttpRequest | None, *, user: User, code: str) -> list[str]:
    """Confirm enrolment with the app's first code; returns the recovery codes, to be shown once."""
    device = TotpDevice.objects.filter(user=user, confirmed_at__isnull=True).first()
    if device is None or not _step_accept(device, code):
        raise InvalidCode(param="code")
    with transaction.atomic():
        TotpDevice.objects.filter(pk=device.pk).update(confirmed_at=timezone.now())
        codes = _recovery_codes_new(user)
        audit_record_for_user(request, user=user, action=AccountEvent.Action.TWO_FACTOR_ENABLED)
    user._has_second_factor = True
    emails.email_send(to=user.email, template="two_factor_changed", context={"user": user, "enabled": True})
    return codes


def second_factor_verify(request: HttpRequest | None, *, user: User, code: str) -> str | None:
    """"totp" or "recovery" when the code signs the user in (a recovery code is used up), else None."""
    device = TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).first()
    if device is None:
        return None
    if _step_accept(device, code):
        return "totp"
    used = RecoveryCode.objects.filter(user=user, used_at__isnull=True,
                                       code_hash=_code_digest(user, code)).update(used_at=timezone.now())
    if not used:
        return None
    audit_record_for_user(request, user=user, action=AccountEvent.Action.RECOVERY_CODE_USED,
                          after={"recovery_codes_left": recovery_codes_left(user=user)})
    emails.email_send(to=user.email, template="recovery_code_used", context={"user": user})
    return "recovery"


def recovery_codes_left(*, user: User) -> int:
    return RecoveryCode.objects.filter(user=user, used_at__isnull=True).count()


def recovery_codes_regenerate(request: HttpRequest | None, *, user: User) -> list[str]:
    """Ten new recovery codes in place of the old ones. The caller has had the person prove it is them
    (`accounts.reauth`): with a session alone, new codes would let a thief turn the second factor off."""
    with transaction.atomic():
        codes = _recovery_codes_new(user)
        audit_record_for_user(request, user=user, action=AccountEvent.Action.TWO_FACTOR_ENABLED,
                              reason="new recovery codes")
    emails.email_send(to=user.email, template="two_factor_changed", context={"user": user, "enabled": True})
    return codes


def totp_disable(request: HttpRequest | None, *, user: User) -> None:
    """Turn two-factor sign-in off. The caller has had the person prove it is them (`accounts.reauth`): a session
    alone is not enough."""
    with transaction.atomic():
        TotpDevice.objects.filter(user=user).delete()
        RecoveryCode.objects.filter(user=user).delete()
        audit_record_for_user(request, user=user, action=AccountEvent.Action.TWO_FACTOR_DISABLED)
    user._has_second_factor = False
    emails.email_send(to=user.email, template="two_factor_changed", context={"user": user, "enabled": False})
