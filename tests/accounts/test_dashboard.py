"""Sign-up, log in, password reset and the KYC page, as a merchant uses them."""

import re

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from accounts.models import AccountEvent, KycStatus, Merchant, User
from accounts.services import kyc_reject
from tests.factories import MerchantFactory, UserFactory, totp_code

KYC_FORM = {
    "legal_name": "Loja Exemplo LTDA", "trading_name": "Loja Exemplo", "document": "12.ABC.345/01DE-35",
    "street": "Av. Paulista", "number": "1000", "complement": "", "city": "São Paulo", "state": "SP",
    "zip_code": "01310-100", "phone": "+55 11 98765-4321", "website": "https://loja.example.com",
}


def kyc_file(name="contrato.pdf", content_type="application/pdf", size=100):
    return SimpleUploadedFile(name, b"%PDF-1.4" + b"0" * size, content_type=content_type)


@pytest.fixture
def new_merchant(db):
    return MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED)


@pytest.fixture
def logged_in(client, new_merchant):
    client.force_login(new_merchant.owner)
    return client


@pytest.mark.django_db
def test_signup_creates_a_merchant_in_test_mode_and_logs_in(client):
    form = {"name": "Café da Ana", "email": "Ana@Example.com", "password": "a-long-passphrase",
            "password_confirm": "a-long-passphrase"}

    response = client.post("/dashboard/signup/", form)

    assert response.status_code == 302
    merchant = Merchant.objects.get(owner__email="ana@example.com")
    assert merchant.name == "Café da Ana"
    assert merchant.kyc_status == KycStatus.NOT_SUBMITTED
    assert client.session["livemode"] is False
    page = client.get("/dashboard/")
    assert "Test mode" in page.content.decode()
    assert AccountEvent.objects.filter(merchant=merchant, action="signed_up").count() == 1


@pytest.mark.django_db
def test_signup_shows_errors_beside_fields(client):
    UserFactory(email="taken@example.com")

    response = client.post("/dashboard/signup/", {"name": "X", "email": "taken@example.com",
                                                  "password": "short", "password_confirm": "other"})

    assert response.status_code == 400
    assert response.context["form"].errors == {
        "email": ["An account with this email already exists. Log in instead?"],
        "password_confirm": ["The passwords do not match."],
    }
    assert Merchant.objects.count() == 0


@pytest.mark.django_db
def test_weak_password_is_refused(client):
    response = client.post("/dashboard/signup/", {"name": "X", "email": "x@example.com",
                                                  "password": "12345678", "password_confirm": "12345678"})

    assert "password" in response.context["form"].errors
    assert not User.objects.filter(email="x@example.com").exists()


@pytest.mark.django_db
def test_login_and_logout(client, new_merchant):
    response = client.post("/dashboard/login/", {"username": new_merchant.owner.email,
                                                 "password": "correct-horse-battery"})
    assert response.status_code == 302
    assert client.get("/dashboard/").status_code == 302  # the owner has a second factor: the code comes next
    client.post("/dashboard/login/verify/", {"code": totp_code(new_merchant.owner)})
    assert client.get("/dashboard/").status_code == 200

    client.post("/dashboard/logout/")

    assert client.get("/dashboard/").status_code == 302


@pytest.mark.django_db
def test_dashboard_requires_login(client):
    response = client.get("/dashboard/kyc/")

    assert response.status_code == 302
    assert response["Location"].startswith("/dashboard/login/")


@pytest.mark.django_db
def test_password_reset_by_email(client, new_merchant):
    client.post("/dashboard/password-reset/", {"email": new_merchant.owner.email})

    assert len(mail.outbox) == 1
    link = re.search(r"https?://[^/]+(/dashboard/password-reset/\S+/)", mail.outbox[0].body).group(1)
    form_page = client.get(link, follow=True)
    client.post(form_page.redirect_chain[-1][0], {"new_password1": "a-new-long-passphrase",
                                                  "new_password2": "a-new-long-passphrase"})
    new_merchant.owner.refresh_from_db()
    assert new_merchant.owner.check_password("a-new-long-passphrase")


@pytest.mark.django_db
def test_forms_are_csrf_protected(new_merchant):
    client = Client(enforce_csrf_checks=True)
    client.force_login(new_merchant.owner)

    response = client.post("/dashboard/kyc/", {**KYC_FORM, "document_file": kyc_file()})

    assert response.status_code == 403
    new_merchant.refresh_from_db()
    assert new_merchant.kyc_status == KycStatus.NOT_SUBMITTED


@pytest.mark.django_db
def test_kyc_submission(logged_in, new_merchant, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path

    response = logged_in.post("/dashboard/kyc/", {**KYC_FORM, "document_file": kyc_file()})

    assert response.status_code == 302
    new_merchant.refresh_from_db()
    assert new_merchant.kyc_status == KycStatus.SUBMITTED
    kyc = new_merchant.kyc
    assert (kyc.document, kyc.document_type, kyc.zip_code, kyc.phone) == ("12ABC34501DE35", "CNPJ", "01310100",
                                                                          "5511987654321")
    assert kyc.document_file.read().startswith(b"%PDF")
    event = AccountEvent.objects.get(merchant=new_merchant, action="kyc_submitted")
    assert (event.actor, event.from_status, event.to_status) == (new_merchant.owner, "NOT_SUBMITTED", "SUBMITTED")


@pytest.mark.django_db
def test_kyc_errors_are_shown_beside_fields(logged_in, new_merchant):
    form = {**KYC_FORM, "document": "111.111.111-11", "zip_code": "123", "phone": "12", "state": "XX"}

    response = logged_in.post("/dashboard/kyc/", {**form, "document_file": kyc_file("x.exe", "application/x-msdos")})

    assert response.status_code == 400
    assert set(response.context["form"].errors) == {"document", "zip_code", "phone", "state", "document_file"}
    assert "This is not a valid CPF or CNPJ: check the digits." in response.content.decode()
    new_merchant.refresh_from_db()
    assert new_merchant.kyc_status == KycStatus.NOT_SUBMITTED


@pytest.mark.django_db
def test_rejected_kyc_shows_its_reason_and_can_be_resubmitted(logged_in, new_merchant, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    logged_in.post("/dashboard/kyc/", {**KYC_FORM, "document_file": kyc_file()})
    staff = UserFactory(is_staff=True)
    kyc_reject(merchant=new_merchant, actor=staff, reason="The document photo is unreadable.")

    page = logged_in.get("/dashboard/kyc/").content.decode()
    resubmitted = logged_in.post("/dashboard/kyc/", {**KYC_FORM, "document": "529.982.247-25",
                                                     "document_file": kyc_file()})

    assert "The document photo is unreadable." in page
    assert resubmitted.status_code == 302
    new_merchant.refresh_from_db()
    assert new_merchant.kyc_status == KycStatus.SUBMITTED
    assert new_merchant.kyc.document_type == "CPF"
    assert list(new_merchant.account_events.values_list("action", flat=True))[:3] == [
        "kyc_submitted", "kyc_rejected", "kyc_submitted"]


@pytest.mark.django_db
def test_submitted_kyc_has_no_form(logged_in, new_merchant):
    Merchant.objects.filter(pk=new_merchant.pk).update(kyc_status=KycStatus.SUBMITTED)

    response = logged_in.get("/dashboard/kyc/")

    assert response.context["form"] is None
    assert "We are reviewing your submission" in response.content.decode()


@pytest.mark.django_db
def test_suspended_dashboard_is_read_only(logged_in, new_merchant, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    Merchant.objects.filter(pk=new_merchant.pk).update(is_suspended=True)

    response = logged_in.post("/dashboard/kyc/", {**KYC_FORM, "document_file": kyc_file()}, follow=True)

    assert "read-only" in response.content.decode()
    new_merchant.refresh_from_db()
    assert new_merchant.kyc_status == KycStatus.NOT_SUBMITTED


@pytest.mark.django_db
def test_mode_switch_and_banner(logged_in):
    logged_in.post("/dashboard/mode/", {"mode": "live", "next": "/dashboard/kyc/"})

    page = logged_in.get("/dashboard/").content.decode()

    assert logged_in.session["livemode"] is True
    assert "Live mode runs on the simulator rail: no money moves." in page


@pytest.mark.django_db
def test_mode_switch_does_not_redirect_off_site(logged_in):
    response = logged_in.post("/dashboard/mode/", {"mode": "test", "next": "https://evil.example.com/"})

    assert response["Location"] == "/dashboard/"


@pytest.mark.django_db
def test_staff_without_merchant_is_pointed_to_admin(client):
    client.force_login(UserFactory(is_staff=True))

    response = client.get("/dashboard/")

    assert response.status_code == 403
    assert "/admin/" in response.content.decode()
