"""Staff decide KYC in the admin; every decision is recorded with who, when, from and to."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME

from accounts import services
from accounts.models import AccountEvent, KycStatus, Merchant
from core.errors import DomainError
from tests.conftest import run_in_threads
from tests.factories import MerchantFactory, UserFactory


@pytest.fixture
def staff(db):
    return UserFactory(is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture
def submitted(db):
    return MerchantFactory(kyc_status=KycStatus.SUBMITTED)


def run_action(admin_client, action: str, merchants, **extra):
    return admin_client.post("/admin/accounts/merchant/", {
        "action": action, ACTION_CHECKBOX_NAME: [str(m.pk) for m in merchants], **extra}, follow=True)


def test_review_queue_filters_by_status(admin_client, submitted):
    MerchantFactory(kyc_status=KycStatus.APPROVED, name="Already approved")

    response = admin_client.get("/admin/accounts/merchant/?kyc_status__exact=SUBMITTED")

    assert list(response.context["cl"].result_list) == [submitted]


def test_approve_action(admin_client, staff, submitted):
    run_action(admin_client, "approve_kyc", [submitted])

    submitted.refresh_from_db()
    assert submitted.kyc_status == KycStatus.APPROVED
    event = AccountEvent.objects.get(merchant=submitted, action="kyc_approved")
    assert (event.actor, event.from_status, event.to_status) == (staff, "SUBMITTED", "APPROVED")
    assert event.created_at is not None


def test_reject_action_asks_for_a_reason_first(admin_client, submitted):
    response = run_action(admin_client, "reject_kyc", [submitted])

    assert "Reject KYC" in response.content.decode()
    submitted.refresh_from_db()
    assert submitted.kyc_status == KycStatus.SUBMITTED


def test_reject_action_with_reason(admin_client, staff, submitted):
    run_action(admin_client, "reject_kyc", [submitted], reason="CNPJ does not match the contract.")

    submitted.refresh_from_db()
    assert submitted.kyc_status == KycStatus.REJECTED
    assert submitted.kyc_rejection_reason == "CNPJ does not match the contract."
    event = AccountEvent.objects.get(merchant=submitted, action="kyc_rejected")
    assert (event.actor, event.from_status, event.to_status, event.reason) == (
        staff, "SUBMITTED", "REJECTED", "CNPJ does not match the contract.")


def test_approving_an_unsubmitted_kyc_is_refused(admin_client):
    merchant = MerchantFactory(kyc_status=KycStatus.NOT_SUBMITTED)

    response = run_action(admin_client, "approve_kyc", [merchant])

    assert "KYC cannot move from NOT_SUBMITTED to APPROVED" in response.content.decode()
    merchant.refresh_from_db()
    assert merchant.kyc_status == KycStatus.NOT_SUBMITTED
    assert not AccountEvent.objects.filter(merchant=merchant, action="kyc_approved").exists()


def test_suspend_and_reactivate(admin_client, staff, submitted):
    run_action(admin_client, "suspend", [submitted])
    submitted.refresh_from_db()
    assert submitted.is_suspended is True

    run_action(admin_client, "reactivate", [submitted])

    submitted.refresh_from_db()
    assert submitted.is_suspended is False
    assert list(AccountEvent.objects.filter(merchant=submitted).values_list("action", "actor")) == [
        ("reactivated", staff.pk), ("suspended", staff.pk)]


def test_admin_change_page_shows_submission(admin_client, submitted):
    response = admin_client.get(f"/admin/accounts/merchant/{submitted.pk}/change/")

    assert response.status_code == 200
    assert "Audit trail" in response.content.decode()


def test_reject_needs_a_reason(staff, submitted):
    with pytest.raises(DomainError) as raised:
        services.kyc_reject(merchant=submitted, actor=staff, reason="   ")

    assert raised.value.code == "reason_required"
    submitted.refresh_from_db()
    assert submitted.kyc_status == KycStatus.SUBMITTED


@pytest.mark.django_db(transaction=True)
def test_concurrent_decisions_have_one_winner():
    merchant = MerchantFactory(kyc_status=KycStatus.SUBMITTED)
    staff = [UserFactory(is_staff=True) for _ in range(10)]

    def decide(i: int):
        if i % 2:
            return services.kyc_approve(merchant=Merchant.objects.get(pk=merchant.pk), actor=staff[i])
        return services.kyc_reject(merchant=Merchant.objects.get(pk=merchant.pk), actor=staff[i], reason="no")

    results = run_in_threads(10, decide)

    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, DomainError) and r.code == "invalid_state" for r in results if r is not None)
    assert AccountEvent.objects.filter(merchant=merchant, action__in=["kyc_approved", "kyc_rejected"]).count() == 1


def test_staff_download_the_kyc_document_and_nobody_else(admin_client, client, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from accounts.models import KycSubmission

    settings.MEDIA_ROOT = tmp_path
    merchant = MerchantFactory(kyc_status=KycStatus.SUBMITTED)
    submission = KycSubmission(merchant=merchant, legal_name="L", trading_name="T", document="52998224725",
                               document_type="CPF", street="S", number="1", city="C", state="SP",
                               zip_code="01310100", phone="11987654321")
    submission.document_file.save("id.pdf", SimpleUploadedFile("id.pdf", b"%PDF-secret"), save=True)
    url = f"/admin/accounts/merchant/{merchant.pk}/kyc-document/"

    staff_response = admin_client.get(url)
    page = admin_client.get(f"/admin/accounts/merchant/{merchant.pk}/change/").content.decode()
    merchant_client = Client()
    merchant_client.force_login(merchant.owner)
    merchant_response = merchant_client.get(url)

    assert b"".join(staff_response.streaming_content) == b"%PDF-secret"
    assert url in page
    assert merchant_response.status_code == 302  # to the admin login: not staff
    assert Client().get(f"/media/{submission.document_file.name}").status_code == 404
