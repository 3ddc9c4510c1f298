"""SPEC §10: staff actions in the admin are audited in the merchant's AccountEvent trail, with the actor; and the KYC
review queue."""

from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.utils import timezone

from accounts import services
from accounts.models import AccountEvent, KycStatus, KycSubmission, Merchant
from payments.models import BalanceAdjustment
from tests.factories import MerchantFactory, UserFactory
from webhooks.models import Delivery, Event

pytestmark = pytest.mark.django_db

SETTINGS_CHANGED = AccountEvent.Action.SETTINGS_CHANGED


@pytest.fixture
def staff(db):
    return UserFactory(is_staff=True, is_superuser=True, email="ops@pagamentos.example")


@pytest.fixture
def admin_client(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture
def merchant(db):
    return MerchantFactory(name="Loja da Bia")


def change_form_data(admin_client, url: str, **changes) -> dict:
    """What the browser posts back from an admin change page: every field as shown, then the given changes."""
    page = admin_client.get(url)
    data = {}
    form = page.context["adminform"].form
    forms = [form] + [f for inline in page.context["inline_admin_formsets"] for f in inline.formset.forms]
    for each in forms:
        for field in each:
            value = field.value()
            data[field.html_name] = "" if value is None else value
    for inline in page.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        for field in management:
            data[field.html_name] = field.value()
    data.update(changes)
    return data


def merchant_url(merchant: Merchant) -> str:
    return f"/admin/accounts/merchant/{merchant.pk}/change/"


# --- Fees, limits and rate limit ------------------------------------------------------------------------------------
def test_a_fee_and_limit_change_is_audited_with_each_field_from_and_to(admin_client, staff, merchant):
    Merchant.objects.filter(pk=merchant.pk).update(payout_max_amount=5_000_000)
    url = merchant_url(merchant)

    response = admin_client.post(url, change_form_data(admin_client, url, pix_fee_bps="79",
                                                       payout_max_amount="1000000", api_rate_limit="25"))

    assert response.status_code == 302
    merchant.refresh_from_db()
    assert (merchant.pix_fee_bps, merchant.payout_max_amount, merchant.api_rate_limit) == (79, 1_000_000, 25)
    event = AccountEvent.objects.get(merchant=merchant, action=SETTINGS_CHANGED)
    assert event.actor == staff
    assert event.details == {"changes": {
        "api_rate_limit": {"from": None, "to": 25},
        "pix_fee_bps": {"from": None, "to": 79},
        "payout_max_amount": {"from": 5_000_000, "to": 1_000_000},
    }}
    assert event.reason == ("api_rate_limit: default → 25; pix_fee_bps: default → 79; "
                            "payout_max_amount: 5000000 → 1000000")


def test_clearing_an_override_is_audited_as_back_to_the_default(admin_client, merchant):
    Merchant.objects.filter(pk=merchant.pk).update(card_fee_bps=299)
    url = merchant_url(merchant)

    admin_client.post(url, change_form_data(admin_client, url, card_fee_bps=""))

    event = AccountEvent.objects.get(merchant=merchant, action=SETTINGS_CHANGED)
    assert event.details == {"changes": {"card_fee_bps": {"from": 299, "to": None}}}
    assert event.reason == "card_fee_bps: 299 → default"


def test_saving_without_a_change_records_nothing(admin_client, merchant):
    url = merchant_url(merchant)

    response = admin_client.post(url, change_form_data(admin_client, url))

    assert response.status_code == 302
    assert not AccountEvent.objects.filter(merchant=merchant, action=SETTINGS_CHANGED).exists()


def test_a_stale_change_page_does_not_undo_a_kyc_decision_or_suspension(admin_client, staff):
    merchant = MerchantFactory(kyc_status=KycStatus.SUBMITTED)
    url = merchant_url(merchant)
    data = change_form_data(admin_client, url, pix_fee_bps="50")  # the page is open...
    services.kyc_approve(merchant=merchant, actor=staff)  # ...while another staff member decides
    services.merchant_suspend(merchant=merchant, actor=staff)

    admin_client.post(url, data)

    merchant.refresh_from_db()
    assert (merchant.kyc_status, merchant.is_suspended, merchant.pix_fee_bps) == (KycStatus.APPROVED, True, 50)


def test_a_name_change_is_audited(admin_client, merchant):
    url = merchant_url(merchant)

    admin_client.post(url, change_form_data(admin_client, url, name="Loja da Bia ME"))

    event = AccountEvent.objects.get(merchant=merchant, action=SETTINGS_CHANGED)
    assert event.reason == "name: 'Loja da Bia' → 'Loja da Bia ME'"


def test_the_change_page_lists_the_trail_readably(admin_client, staff, merchant):
    services.merchant_settings_change(merchant=merchant, actor=staff, changes={"pix_fee_bps": 79})

    html = admin_client.get(merchant_url(merchant)).content.decode()

    assert "Audit trail" in html
    assert "Settings changed" in html
    assert "pix_fee_bps: default → 79" in html
    assert "ops@pagamentos.example" in html


def test_staff_edits_are_not_part_of_the_merchants_kyc_history(client, staff, merchant):
    services.merchant_suspend(merchant=merchant, actor=staff, reason="Chargeback ratio")
    services.merchant_settings_change(merchant=merchant, actor=staff, changes={"pix_fee_bps": 79})
    client.force_login(merchant.owner)

    response = client.get("/dashboard/kyc/")

    assert [event.action for event in response.context["history"]] == [AccountEvent.Action.SUSPENDED]
    assert "pix_fee_bps" not in response.content.decode()


def test_only_merchant_settings_go_through_the_settings_service(staff, merchant):
    with pytest.raises(ValueError):
        services.merchant_settings_change(merchant=merchant, actor=staff, changes={"kyc_status": "APPROVED"})


# --- Balance adjustments --------------------------------------------------------------------------------------------
def test_a_balance_adjustment_is_audited_with_amount_mode_and_reason(admin_client, staff, merchant):
    response = admin_client.post("/admin/payments/balanceadjustment/add/", {
        "merchant": str(merchant.pk), "livemode": "on", "amount": "-1050", "reason": "Chargeback 4412"})

    assert response.status_code == 302
    adjustment = BalanceAdjustment.objects.get(merchant=merchant)
    event = AccountEvent.objects.get(merchant=merchant, action=AccountEvent.Action.BALANCE_ADJUSTED)
    assert event.actor == staff
    assert event.details == {"adjustment_id": str(adjustment.pk), "amount": -1050, "livemode": True}
    assert event.reason == "-R$ 10,50 in live mode: Chargeback 4412"


def test_a_test_mode_credit_is_audited(admin_client, merchant):
    admin_client.post("/admin/payments/balanceadjustment/add/", {
        "merchant": str(merchant.pk), "amount": "2500", "reason": "Goodwill"})

    event = AccountEvent.objects.get(merchant=merchant, action=AccountEvent.Action.BALANCE_ADJUSTED)
    assert (event.details["amount"], event.details["livemode"]) == (2500, False)
    assert event.reason == "R$ 25,00 in test mode: Goodwill"


# --- Webhook resend -------------------------------------------------------------------------------------------------
def failed_delivery(merchant: Merchant) -> Delivery:
    event = Event.objects.create(merchant=merchant, livemode=False, type="payin.paid", object_id="pay_1",
                                 payload={"id": "x", "type": "payin.paid"})
    return Delivery.objects.create(event=event, merchant=merchant, livemode=False, url="https://hooks.example.com/x",
                                   status=Delivery.Status.FAILED, attempts=3, failures=3)


def test_a_staff_resend_is_audited(admin_client, staff, merchant):
    delivery = failed_delivery(merchant)

    admin_client.post("/admin/webhooks/delivery/", {"action": "resend", ACTION_CHECKBOX_NAME: [str(delivery.pk)]})

    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.PENDING
    event = AccountEvent.objects.get(merchant=merchant, action=AccountEvent.Action.DELIVERY_RESENT)
    assert event.actor == staff
    assert event.details == {"delivery_id": str(delivery.pk), "event_id": str(delivery.event_id),
                             "url": "https://hooks.example.com/x", "livemode": False}


def test_a_refused_resend_is_not_audited(admin_client, merchant):
    delivery = failed_delivery(merchant)
    Delivery.objects.filter(pk=delivery.pk).update(status=Delivery.Status.PENDING,
                                                   locked_until=timezone.now() + timedelta(minutes=1))

    response = admin_client.post("/admin/webhooks/delivery/", {
        "action": "resend", ACTION_CHECKBOX_NAME: [str(delivery.pk)]}, follow=True)

    assert "This delivery is being sent right now" in response.content.decode()
    assert not AccountEvent.objects.filter(action=AccountEvent.Action.DELIVERY_RESENT).exists()


# --- The owner's login ----------------------------------------------------------------------------------------------
def test_staff_changing_the_owners_email_is_audited(admin_client, staff, merchant):
    owner = merchant.owner
    url = f"/admin/accounts/user/{owner.pk}/change/"
    old_email = owner.email

    response = admin_client.post(url, {"email": "new-owner@example.com", "is_active": "on",
                                       "date_joined_0": "2026-11-20", "date_joined_1": "10:00:00"})

    assert response.status_code == 302
    event = AccountEvent.objects.get(merchant=merchant, action=SETTINGS_CHANGED)
    assert event.actor == staff
    assert event.details == {"changes": {"email": {"from": old_email, "to": "new-owner@example.com"}}}


def test_staff_setting_the_owners_password_is_audited(admin_client, staff, merchant):
    url = f"/admin/accounts/user/{merchant.owner.pk}/password/"

    response = admin_client.post(url, {"password1": "a-staff-chosen-pass", "password2": "a-staff-chosen-pass"})

    assert response.status_code == 302
    event = AccountEvent.objects.get(merchant=merchant, action=AccountEvent.Action.PASSWORD_CHANGED)
    assert (event.actor, event.reason) == (staff, "by staff in the admin")


# --- KYC review queue -----------------------------------------------------------------------------------------------
def submit(merchant: Merchant, *, days_ago: int) -> None:
    Merchant.objects.filter(pk=merchant.pk).update(kyc_status=KycStatus.SUBMITTED)
    KycSubmission.objects.create(merchant=merchant, legal_name="L", trading_name="T", document="52998224725",
                                 document_type="CPF", street="S", number="1", city="C", state="SP",
                                 zip_code="01310100", phone="11987654321",
                                 submitted_at=timezone.now() - timedelta(days=days_ago))


def test_the_pending_review_queue_lists_submissions_oldest_first(admin_client):
    newer, older = MerchantFactory(name="Newer"), MerchantFactory(name="Older")
    submit(newer, days_ago=1)
    submit(older, days_ago=3)
    MerchantFactory(kyc_status=KycStatus.APPROVED)
    MerchantFactory(kyc_status=KycStatus.REJECTED)

    listing = admin_client.get("/admin/accounts/merchant/")
    queue = admin_client.get("/admin/accounts/merchant/?queue=pending")

    assert "Pending review" in listing.content.decode()
    assert "?queue=pending" in listing.content.decode()
    assert [m.name for m in queue.context["cl"].result_list] == ["Older", "Newer"]


def test_the_change_page_shows_the_submitted_data(admin_client):
    merchant = MerchantFactory()
    submit(merchant, days_ago=0)

    html = admin_client.get(merchant_url(merchant)).content.decode()

    assert "52998224725" in html
    assert "01310100" in html
