"""Another merchant's charge, payout and webhook delivery are not reachable from the dashboard: each is a 404, as an
object that does not exist."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import Api, charge_body, log_in, shot
from tests.factories import ApiKeyFactory, MerchantFactory
from webhooks.models import Delivery, WebhookEndpoint

pytestmark = pytest.mark.browser


def test_another_merchants_objects_are_404(page, server, receiver):
    owner_a = MerchantFactory(name="Loja A")
    key_a, secret_a = ApiKeyFactory.with_secret(merchant=owner_a, livemode=False)
    api_a = Api(server.url, key_a.public_key, secret_a)
    WebhookEndpoint.objects.create(merchant=owner_a, livemode=False, url=receiver.url("/a"), event_types=[])
    charge = api_a.ok("POST", "/payin", charge_body(amount=20_000, reference_id="a-secret-order"))
    api_a.ok("POST", f"/sandbox/payin/{charge['id']}/simulate", {"action": "pay"})
    payout = api_a.ok("POST", "/payout", {"amount": 1_000, "pixKeyType": "EVP", "referenceId": "a-payout",
                                          "pixKey": "123e4567-e12b-12d1-a456-426655440000"})
    delivery = Delivery.objects.filter(merchant=owner_a).first()
    owner_b = MerchantFactory(name="Loja B")

    log_in(page, owner_b.owner.email)

    for path in (f"/dashboard/charges/{charge['id']}/", f"/dashboard/payouts/{payout['id']}/",
                 f"/dashboard/webhooks/deliveries/{delivery.pk}/"):
        for mode in ("Test", "Live"):
            page.goto("/dashboard/")
            page.get_by_role("group", name="Mode").get_by_role("button", name=mode).click()
            response = page.goto(path)
            assert response.status == 404, (path, mode, response.status)
            assert "a-secret-order" not in page.content()
    shot(page, "not-found")
    page.goto("/dashboard/")
    page.get_by_role("group", name="Mode").get_by_role("button", name="Test").click()
    page.goto("/dashboard/charges/?q=a-secret-order")
    expect(page.get_by_text("No charges match.")).to_be_visible()
    page.goto("/dashboard/webhooks/deliveries/")
    expect(page.get_by_text("No deliveries.")).to_be_visible()
    response = page.request.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/resend/", headers={
        "X-CSRFToken": next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken"),
        "Referer": server.url + "/dashboard/webhooks/deliveries/"})
    assert response.status == 404
