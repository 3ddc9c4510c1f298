from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm

from accounts.models import User
from accounts.services import KycData
from payments.formats import contact, documents

KYC_DOCUMENT_TYPES = {"application/pdf", "image/png", "image/jpeg"}


class SignupForm(forms.Form):
    name = forms.CharField(label="Business name", max_length=120)
    email = forms.EmailField(max_length=254)
    password = forms.CharField(widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))
    password_confirm = forms.CharField(label="Confirm password",
                                       widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].lower()
        if User.objects.filter(email=email).exists():
            raise forms.ValidationError("An account with this email already exists. Log in instead?")
        return email

    def clean(self) -> dict:
        data = super().clean()
        password, confirm = data.get("password"), data.get("password_confirm")
        if password and confirm and password != confirm:
            self.add_error("password_confirm", "The passwords do not match.")
        elif password:
            try:
                password_validation.validate_password(password, User(email=data.get("email", "")))
            except forms.ValidationError as error:
                self.add_error("password", error)
        return data


class LoginForm(AuthenticationForm):
    username = forms.EmailField(label="Email", widget=forms.EmailInput(attrs={"autofocus": True,
                                                                            "autocomplete": "email"}))


class KycForm(forms.Form):
    legal_name = forms.CharField(max_length=150)
    trading_name = forms.CharField(max_length=150, help_text="The name your customers see (on Pix QR codes too).")
    document = forms.CharField(label="CPF or CNPJ", max_length=20,
                               help_text="Numeric or the alphanumeric CNPJ; dots, dashes and slashes are fine.")
    street = forms.CharField(max_length=150)
    number = forms.CharField(max_length=20)
    complement = forms.CharField(max_length=100, required=False)
    city = forms.CharField(max_length=80)
    state = forms.ChoiceField(choices=[("", "Choose…")] + [(uf, uf) for uf in contact.UF_CODES])
    zip_code = forms.CharField(label="CEP", max_length=9)
    phone = forms.CharField(max_length=20, help_text="With area code, e.g. +55 11 98765-4321.")
    website = forms.URLField(required=False, max_length=200, assume_scheme="https")
    document_file = forms.FileField(label="Document (PDF, PNG or JPEG)",
                                    help_text="Company registration or the owner's ID, up to 10 MB.")

    def clean_document(self) -> str:
        value = documents.normalize(self.cleaned_data["document"])
        if documents.document_type(value) is None:
            raise forms.ValidationError("This is not a valid CPF or CNPJ: check the digits.")
        return value

    def clean_zip_code(self) -> str:
        value = contact.normalize_zip_code(self.cleaned_data["zip_code"])
        if value is None:
            raise forms.ValidationError("A CEP has 8 digits, e.g. 01310-100.")
        return value

    def clean_phone(self) -> str:
        value = contact.normalize_phone(self.cleaned_data["phone"])
        if value is None:
            raise forms.ValidationError("A phone has 10 to 13 digits with its area code.")
        return value

    def clean_document_file(self):
        upload = self.cleaned_data["document_file"]
        if upload.size > settings.KYC_DOCUMENT_MAX_BYTES:
            raise forms.ValidationError("The file is larger than 10 MB.")
        if getattr(upload, "content_type", None) not in KYC_DOCUMENT_TYPES:
            raise forms.ValidationError("Upload a PDF, PNG or JPEG file.")
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
