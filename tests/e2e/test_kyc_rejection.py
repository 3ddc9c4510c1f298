"""A staff user rejects a KYC in the admin, giving a reason; the merchant sees the reason on the KYC page."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from accounts import services
from accounts.models import KycStatus, User
from accounts.services import KycData
from tests.e2e.helpers import PASSWORD, admin_action, admin_log_in, log_in, section, shot
from tests.factories import MerchantFactory, totp_enrol

pytestmark = pytest.mark.browser

REASON = "The document is not legible: send a clearer scan of the company registration."


def test_rejected_kyc_shows_its_reason_to_the_merchant(new_page, server):
    staff = User.objects.create_superuser(email="staff@pagamentos.test", password=PASSWORD)
    totp_enrol(staff)  # the admin requires staff to have a second factor (issue 15)
    merchant = MerchantFactory(name="Padaria Pão Quente", kyc_status=KycStatus.NOT_SUBMITTED)
    services.kyc_submit(merchant=merchant, actor=merchant.owner, data=KycData(
        legal_name="Padaria Pão Quente Ltda", trading_name="Pão Quente", document="11222333000181",
        document_type="CNPJ", street="Rua Augusta", number="500", complement="", city="São Paulo", state="SP",
        zip_code="01305000", phone="5511987654321", website="",
        document_file=SimpleUploadedFile("registro.png", b"\x89PNG\r\n\x1a\n", content_type="image/png")))
    staff_page, page = new_page(), new_page()

    admin_log_in(staff_page, staff.email)
    staff_page.goto("/admin/accounts/merchant/?queue=pending")
    admin_action(staff_page, merchant.name, "Reject KYC of the selected merchants (asks for a reason)")
    expect(staff_page.get_by_role("heading", name="Reject KYC")).to_be_visible()
    shot(staff_page, "admin-kyc-reject")
    staff_page.get_by_label("Reason").fill(REASON)
    staff_page.get_by_role("button", name="Reject").click()
    expect(staff_page.get_by_text("KYC rejected: 1.")).to_be_visible()

    log_in(page, merchant.owner.email)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="KYC").click()
    expect(page.locator(".badge", has_text="Rejected")).to_be_visible()
    expect(page.get_by_role("alert")).to_have_text(f"Your KYC was rejected: {REASON}Correct it and submit again below.")
    expect(page.get_by_role("heading", name="Submit again")).to_be_visible()
    expect(section(page, "History").get_by_role("row").filter(has_text=REASON)).to_be_visible()
    shot(page, "kyc-rejected")
