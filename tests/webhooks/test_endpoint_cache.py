"""An API request keeps its merchant's webhook endpoints with the key cache; a change to an endpoint must reach the
very next event."""

import pytest

from webhooks import services
from webhooks.models import Delivery

PIX = {"paymentMethod": "PIX", "amount": 1000, "referenceId": "r-1", "payerIp": "203.0.113.1",
       "isPhysicalProduct": False, "customer": {"name": "Ana", "document": "52998224725", "email": "a@example.com"},
       "items": [{"title": "x", "quantity": 1, "unitPrice": 1000}]}


@pytest.fixture(autouse=True)
def _local_targets(settings, monkeypatch):
    settings.WEBHOOKS_ALLOW_HTTP = True
    monkeypatch.setattr("webhooks.ssrf.resolve", lambda host, port: ["93.184.216.34"])


def charge(api) -> str:
    api.get("/account")  # a key pair enters the process's key cache on its second request: make sure it is there
    response = api.post("/payin", PIX, format="json")
    assert response.status_code == 201
    return response.json()["id"]


def urls_of(payin_id: str) -> list[str]:
    return sorted(Delivery.objects.filter(event__object_id=payin_id).values_list("url", flat=True))


def test_an_endpoint_added_disabled_or_moved_reaches_the_next_event(api, test_key):
    merchant = test_key[0].merchant
    assert urls_of(charge(api)) == []  # the merchant (and its empty endpoint list) is now cached

    endpoint = services.endpoint_create(merchant=merchant, livemode=False, url="https://a.example.com/hook",
                                        event_types=[])
    assert urls_of(charge(api)) == ["https://a.example.com/hook"]

    services.endpoint_update(endpoint=endpoint, url="https://b.example.com/hook", event_types=[], description="",
                             enabled=True)
    assert urls_of(charge(api)) == ["https://b.example.com/hook"]

    services.endpoint_update(endpoint=endpoint, url="https://b.example.com/hook", event_types=[], description="",
                             enabled=False)
    assert urls_of(charge(api)) == []


def test_another_modes_endpoint_is_not_used(api, test_key):
    services.endpoint_create(merchant=test_key[0].merchant, livemode=True, url="https://live.example.com/hook",
                             event_types=[])
    assert urls_of(charge(api)) == []
