"""Staff take back a KYC approval in the admin (issue 16): REJECTED with a reason, or back to SUBMITTED for another
review; audited, the live keys refused on the next request, the reason on the merchant's KYC page."""

from __future__ import annotations

import html

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME

from accounts import services
from accounts.models import AccountEvent, KycStatus
from core.errors import DomainError
from tests.factories import ApiKeyFactory, MerchantFactory, UserFactory

REASON = "The contract's CNPJ belongs to another company."
REFUSED = {"error": {"type": "permission_error", "code": "kyc_not_approved"}}


@pytest.fixture
def staff(db):
    return UserFactory(is_staff=True, is_superuser=True)


@pytest.fixture
def approved(db):
    return MerchantFactory(kyc_status=KycStatus.APPROVED)


def withdraw(client, staff, merchant, **extra):
    client.force_login(staff)
    return client.post("/admin/accounts/merchant/", {
        "action": "revoke_kyc", ACTION_CHECKBOX_NAME: [str(merchant.pk)], **extra}, follow=True)


def audit(merchant) -> list:
    return list(AccountEvent.objects.filter(merchant=merchant, action="kyc_revoked")
                .values_list("actor__email", "from_status", "to_status", "reason"))


def error_of(response) -> dict:
    body = response.json()
    return {"error": {k: body["error"][k] for k in ("type", "code")}}


@pytest.mark.parametrize(("outcome", "status"), [("reject", KycStatus.REJECTED), ("review", KycStatus.SUBMITTED)])
def test_withdrawing_an_approval_refuses_live_keys_at_once(client, api_client_for, staff, approved, outcome, status):
    live = api_client_for(*ApiKeyFactory.with_secret(merchant=approved, livemode=True))
    assert live.get("/account").status_code == 200  # cached by the key cache

    response = withdraw(client, staff, approved, reason=REASON, outcome=outcome)

    assert "KYC approval withdrawn" in response.content.decode()
    approved.refresh_from_db()
    assert (approved.kyc_status, approved.kyc_rejection_reason) == (status, REASON)
    assert audit(approved) == [(staff.email, "APPROVED", status.value, REASON)]
    refused = live.get("/account")
    assert refused.status_code == 403
    assert error_of(refused) == REFUSED


def test_the_action_asks_for_a_reason_first(client, staff, approved):
    response = withdraw(client, staff, approved)

    assert "Withdraw KYC approval" in response.content.decode()
    approved.refresh_from_db()
    assert approved.kyc_status == KycStatus.APPROVED
    assert audit(approved) == []


def test_only_an_approval_can_be_withdrawn(staff):
    submitted = MerchantFactory(kyc_status=KycStatus.SUBMITTED)

    with pytest.raises(DomainError) as refused:
        services.kyc_revoke(merchant=submitted, actor=staff, reason=REASON)
    with pytest.raises(DomainError):
        services.kyc_revoke(merchant=MerchantFactory(kyc_status=KycStatus.APPROVED), actor=staff, reason="  ")

    assert refused.value.message == "KYC cannot move from SUBMITTED to REJECTED"
    assert AccountEvent.objects.filter(action="kyc_revoked").count() == 0


@pytest.mark.parametrize(("review_again", "told"), [
    (False, f"Your KYC was rejected: {REASON}"),
    (True, f"Your KYC approval was withdrawn for another review: {REASON}"),
])
def test_the_merchant_is_told_why_on_the_kyc_page(client, staff, approved, review_again, told):
    services.kyc_revoke(merchant=approved, actor=staff, reason=REASON, review_again=review_again)
    client.force_login(approved.owner)

    page = html.unescape(client.get("/dashboard/kyc/").content.decode())

    assert told in " ".join(page.replace("<strong>", "").replace("</strong>", "").split())


def test_a_new_approval_clears_the_reason(staff, approved):
    services.kyc_revoke(merchant=approved, actor=staff, reason=REASON, review_again=True)
    services.kyc_approve(merchant=approved, actor=staff)

    approved.refresh_from_db()
    assert (approved.kyc_status, approved.kyc_rejection_reason) == (KycStatus.APPROVED, "")
