from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm, SetPasswordForm
from django.utils.translation import gettext_lazy as _

from accounts import reauth, throttle, twofactor
from accounts.models import Role, User
from accounts.services import KycData
from core.formats import contact, documents
from core.forms import day_field
from core.requests import client_ip

KYC_DOCUMENT_TYPES = {"application/pdf", "image/png", "image/jpeg"}


class TelInput(forms.TextInput):
    input_type = "tel"


class SignupForm(forms.Form):
    name = forms.CharField(label=_("Business name"), max_length=120,
                           widget=forms.TextInput(attrs={"autocomplete": "organization"}))
    email = forms.EmailField(label=_("Email"), max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    password = forms.CharField(label=_("Password"),
                               widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))
    password_confirm = forms.CharField(label=_("Confirm password"),
                                       widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].lower()
        if User.objects.filter(email=email).exists():
            raise forms.ValidationError(_("An account with this email already exists. Log in instead?"))
        return email

    def clean(self) -> dict:
        data = super().clean()
        password, confirm = data.get("password"), data.get("password_confirm")
        if password and confirm and password != confirm:
            self.add_error("password_confirm", _("The passwords do not match."))
        elif password:
            try:
                password_validation.validate_password(password, User(email=data.get("email", "")))
            except forms.ValidationError as error:
                self.add_error("password", error)
        return data


class LoginForm(AuthenticationForm):
    """Django's log-in form behind the brute-force limit: a locked email or IP is refused before the password is
    checked, so guessing stops rather than only its answers."""

    username = forms.EmailField(label=_("Email"), widget=forms.EmailInput(attrs={"autofocus": True,
                                                                            "autocomplete": "email"}))
    retry_after: int | None = None

    def clean(self) -> dict:
        email, password = self.cleaned_data.get("username"), self.cleaned_data.get("password")
        ip = client_ip(self.request) if self.request is not None else ""
        if email and password:
            self.retry_after = throttle.login_attempt(email=email, ip=ip)
            if self.retry_after:
                raise forms.ValidationError(throttle.login_refused_message(self.retry_after), code="throttled")
        data = super().clean()  # authenticates; raises on a wrong password
        if self.get_user() is not None:  # not merely "no error": a blank password is never checked
            throttle.login_succeeded(email=email, ip=ip)
        return data


def _autocomplete(token: str, **attrs) -> forms.TextInput:
    return forms.TextInput(attrs={"autocomplete": token, **attrs})


class KycForm(forms.Form):
    legal_name = forms.CharField(label=_("Legal name"), max_length=150, widget=_autocomplete("organization"))
    trading_name = forms.CharField(label=_("Trading name"), max_length=150,
                                   help_text=_("The name your customers see (on Pix QR codes too)."),
                                   widget=_autocomplete("off"))
    document = forms.CharField(label=_("CPF or CNPJ"), max_length=20, widget=_autocomplete("off"),
                               help_text=_("Numeric or the alphanumeric CNPJ; dots, dashes and slashes are fine."))
    street = forms.CharField(label=_("Street"), max_length=150, widget=_autocomplete("address-line1"))
    number = forms.CharField(label=_("Number"), max_length=20, widget=_autocomplete("off"))
    complement = forms.CharField(label=_("Complement"), max_length=100, required=False,
                                 widget=_autocomplete("address-line2"))
    city = forms.CharField(label=_("City"), max_length=80, widget=_autocomplete("address-level2"))
    state = forms.ChoiceField(label=_("State"), choices=[("", _("Choose…"))] + [(uf, uf) for uf in contact.UF_CODES],
                              widget=forms.Select(attrs={"autocomplete": "address-level1"}))
    zip_code = forms.CharField(label=_("CEP"), max_length=9, widget=_autocomplete("postal-code", inputmode="numeric"))
    phone = forms.CharField(label=_("Phone"), max_length=20, help_text=_("With area code, e.g. +55 11 98765-4321."),
                            widget=TelInput(attrs={"autocomplete": "tel"}))
    website = forms.URLField(label=_("Website"), required=False, max_length=200, assume_scheme="https",
                             widget=forms.URLInput(attrs={"autocomplete": "url"}))
    document_file = forms.FileField(label=_("Document (PDF, PNG or JPEG)"),
                                    help_text=_("Company registration or the owner's ID, up to 10 MB."))

    def clean_document(self) -> str:
        value = documents.normalize(self.cleaned_data["document"])
        if documents.document_type(value) is None:
            raise forms.ValidationError(_("This is not a valid CPF or CNPJ: check the digits."))
        return value

    def clean_zip_code(self) -> str:
        value = contact.normalize_zip_code(self.cleaned_data["zip_code"])
        if value is None:
            raise forms.ValidationError(_("A CEP has 8 digits, e.g. 01310-100."))
        return value

    def clean_phone(self) -> str:
        value = contact.normalize_phone(self.cleaned_data["phone"])
        if value is None:
            raise forms.ValidationError(_("A phone has 10 to 13 digits with its area code."))
        return value

    def clean_document_file(self):
        upload = self.cleaned_data["document_file"]
        if upload.size > settings.KYC_DOCUMENT_MAX_BYTES:
            raise forms.ValidationError(_("The file is larger than 10 MB."))
        if getattr(upload, "content_type", None) not in KYC_DOCUMENT_TYPES:
            raise forms.ValidationError(_("Upload a PDF, PNG or JPEG file."))
        return upload

    def kyc_data(self) -> KycData:
        data = self.cleaned_data
        return KycData(
            legal_name=data["legal_name"], trading_name=data["trading_name"], document=data["document"],
            document_type=documents.document_type(data["document"]), street=data["street"], number=data["number"],
            complement=data["complement"], city=data["city"], state=data["state"], zip_code=data["zip_code"],
            phone=data["phone"], website=data["website"], document_file=data["document_file"],
        )


class RejectForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="Shown to the merchant.")


class RevokeForm(RejectForm):
    outcome = forms.ChoiceField(choices=[("reject", "Reject"), ("review", "Review again (back to submitted)")],
                                widget=forms.RadioSelect, initial="reject")


class CodeForm(forms.Form):
    code = forms.CharField(label=_("Code"), max_length=20, help_text=_(
        "The 6-digit code your authenticator app shows, or one of your recovery codes."),
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "autofocus": True, "inputmode": "text"}))


class ProofForm(forms.Form):
    """The proof a change to one's own sign-in asks for (accounts.reauth): the password, or a current code from the
    authenticator app for a person who has one. Not needed again within five minutes of the last proof."""

    password = forms.CharField(label=_("Your password"), required=False, strip=False,
                               widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))
    code = forms.CharField(label=_("Or the code your app shows now"), required=False, max_length=20,
                           help_text=_("A recovery code works too. After you confirm, neither is asked again for 5 "
                                       "minutes."),
                           widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "text"}))

    def __init__(self, *args, request, **kwargs):
        super().__init__(*args, **kwargs)
        self.request = request
        self.retry_after: int | None = None
        if not twofactor.user_has_second_factor(request.user):
            del self.fields["code"]
            self.fields["password"].help_text = _("After you confirm, it is not asked again for 5 minutes.")

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data  # the change itself is wrong: no proof attempt is spent on it
        password, code = data.get("password") or "", data.get("code") or ""
        try:
            reauth.reauth_check(self.request, user=self.request.user, password=password, code=code)
        except reauth.ProofThrottled as error:
            self.retry_after = error.retry_after
            raise forms.ValidationError(error.message, code="throttled") from None
        except reauth.ProofRefused:
            if "code" not in self.fields:
                self.add_error("password", _("That is not your password."))
            else:
                self.add_error("code" if code and not password else "password" if password and not code else None,
                               reauth.ProofRefused.message)
        except reauth.ProofRequired as error:
            if "code" not in self.fields:
                self.add_error("password", _("Enter your password to confirm it is you."))
            else:
                raise forms.ValidationError(error.message, code=error.code) from None
        return data


class PasswordChangeProofForm(ProofForm, SetPasswordForm):
    """A new password, after the proof (the current password, or a current code)."""

    field_order = ["password", "code", "new_password1", "new_password2"]

    def __init__(self, user, *args, request, **kwargs):
        super().__init__(user, *args, request=request, **kwargs)
        self.fields["password"].label = _("Current password")


def _role_choices(include_owner: bool = False) -> list[tuple[str, str]]:
    choices = [(Role.ADMIN, _("Admin")), (Role.DEVELOPER, _("Developer")), (Role.FINANCE, _("Finance")),
               (Role.VIEWER, _("Viewer"))]
    return [(Role.OWNER, _("Owner")), *choices] if include_owner else choices


class InviteForm(forms.Form):
    email = forms.EmailField(label=_("Email"), max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "off"}))
    role = forms.ChoiceField(label=_("Role"), choices=_role_choices)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=_role_choices)


class AcceptInvitationForm(forms.Form):
    """For an invited person with no account yet: the password of the account the invitation creates."""

    password = forms.CharField(label=_("Password"), widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))
    password_confirm = forms.CharField(label=_("Confirm password"),
                                       widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def __init__(self, *args, email: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.email = email

    def clean(self) -> dict:
        data = super().clean()
        password, confirm = data.get("password"), data.get("password_confirm")
        if password and confirm and password != confirm:
            self.add_error("password_confirm", _("The passwords do not match."))
        elif password:
            try:
                password_validation.validate_password(password, User(email=self.email))
            except forms.ValidationError as error:
                self.add_error("password", error)
        return data


class AuditFilterForm(forms.Form):
    member = forms.TypedChoiceField(label=_("Member"), required=False, coerce=int, empty_value=None)
    action = forms.ChoiceField(label=_("Action"), required=False)
    since = day_field(_("From"))
    until = day_field(_("To"))

    def __init__(self, *args, members: list, actions: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["member"].choices = [("", _("Everyone")), *[(m.user_id, m.user.email) for m in members]]
        self.fields["action"].choices = [("", _("Every action")), *actions]
