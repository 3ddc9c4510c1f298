import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import transaction

from tests.factories import MerchantFactory, UserFactory
from webhooks import services
from webhooks.models import Delivery


@pytest.mark.django_db
def test_staff_see_a_delivery_and_resend_it(client, monkeypatch, settings, django_capture_on_commit_callbacks):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = settings.WEBHOOKS_ALLOW_HTTP = True
    enqueued = []
    monkeypatch.setattr(services, "_enqueue", enqueued.extend)
    with transaction.atomic():
        event = services.event_record(merchant=MerchantFactory(), livemode=False, type="payin.paid", obj={"id": "c"},
                                      webhook_url="http://127.0.0.1:9/hook")
    delivery = Delivery.objects.get(event=event)
    Delivery.objects.filter(pk=delivery.pk).update(status="FAILED", failures=9)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))

    page = client.get(f"/admin/webhooks/delivery/{delivery.pk}/change/")
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/webhooks/delivery/", {"action": "resend", ACTION_CHECKBOX_NAME: [str(delivery.pk)]})

    assert page.status_code == 200
    delivery.refresh_from_db()
    assert (delivery.status, delivery.failures) == ("PENDING", 0)
    assert enqueued == [str(delivery.pk)]
