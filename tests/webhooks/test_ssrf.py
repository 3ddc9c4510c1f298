"""SSRF guard (SPEC §6.4): every hostile notation refused when a URL is given, and the address actually connected
to checked again at delivery (DNS rebinding)."""

import pytest
from django.db import transaction
from django.utils import translation

from core.errors import DomainError
from tests.factories import MerchantFactory
from tests.webhooks.receiver import start_receiver
from webhooks import delivery as deliveries
from webhooks import services, ssrf
from webhooks.models import Delivery


@pytest.fixture(autouse=True)
def _english():
    """The messages below are matched in English: the project's default language is Portuguese, and a test run
    alone (no earlier test left English active in the thread) would otherwise see them translated."""
    with translation.override("en"):
        yield


HOSTILE = [
    "https://127.0.0.1/hook",
    "https://127.1/hook",  # shortened
    "https://2130706433/hook",  # decimal
    "https://0177.0.0.1/hook",  # octal
    "https://0x7f.0.0.1/hook",  # hex
    "https://0x7f000001/hook",
    "https://10.0.0.5/hook",
    "https://172.16.3.4/hook",
    "https://192.168.1.1/hook",
    "https://169.254.169.254/latest/meta-data",  # cloud metadata
    "https://100.64.0.1/hook",  # CGNAT
    "https://0.0.0.0/hook",  # unspecified
    "https://224.0.0.1/hook",  # multicast
    "https://255.255.255.255/hook",
    "https://[::1]/hook",
    "https://[::]/hook",
    "https://[fd00::1]/hook",  # unique local
    "https://[fe80::1]/hook",  # link local
    "https://[::ffff:127.0.0.1]/hook",  # IPv4-mapped
    "https://[::ffff:7f00:1]/hook",
    "https://[::127.0.0.1]/hook",  # IPv4-compatible
    "https://[64:ff9b::a00:1]/hook",  # NAT64 of 10.0.0.1
    "https://[2002:a00:1::]/hook",  # 6to4 of 10.0.0.1
    "https://[ff02::1]/hook",  # multicast
    "https://localhost/hook",
    "https://localhost./hook",  # trailing dot
    "https://api.localhost/hook",
    "https://user:password@example.com/hook",  # credentials
    "https://user@example.com/hook",
    "http://example.com/hook",  # plain http without WEBHOOKS_ALLOW_HTTP
    "ftp://example.com/hook",
    "https:///hook",
    "not a url",
    "https://example.com/" + "a" * 2048,
]


@pytest.fixture(autouse=True)
def public_dns(monkeypatch, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    settings.WEBHOOKS_ALLOW_HTTP = False
    answers = {"example.com": ["93.184.216.34"], "internal.example.com": ["93.184.216.34", "10.1.2.3"],
               "rebinding.example.com": ["127.0.0.1"], "localhost": ["127.0.0.1"]}

    def resolve(host, port):
        if host not in answers:
            raise OSError("Name or service not known")
        return answers[host]

    monkeypatch.setattr(ssrf, "resolve", resolve)


@pytest.mark.parametrize("url", HOSTILE)
def test_hostile_urls_are_refused(url):
    with pytest.raises(DomainError) as raised:
        ssrf.webhook_url_validate(url)

    assert raised.value.code == "invalid_webhook_url"
    assert raised.value.status_code == 400
    assert raised.value.param == "webhookUrl"


def test_a_name_resolving_to_any_private_address_is_refused():
    with pytest.raises(DomainError, match="resolves to an address that is not public"):
        ssrf.webhook_url_validate("https://internal.example.com/hook")


@pytest.mark.parametrize("url", ["https://example.com/hook", "https://93.184.216.34/hook",
                                 "https://[2606:2800:220:1:248:1893:25c8:1946]/hook",
                                 "https://example.com:8443/hook?x=1"])
def test_public_urls_are_accepted(url):
    assert ssrf.webhook_url_validate(url) == url


def test_a_name_that_does_not_resolve_now_is_accepted():
    assert ssrf.webhook_url_validate("https://not-yet-in-dns.example.net/hook")


def test_http_is_accepted_only_when_allowed(settings):
    settings.WEBHOOKS_ALLOW_HTTP = True

    assert ssrf.webhook_url_validate("http://example.com/hook")


def test_private_targets_are_accepted_only_when_allowed(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True

    assert ssrf.webhook_url_validate("https://127.0.0.1/hook")
    assert ssrf.webhook_url_validate("https://localhost/hook")


@pytest.mark.django_db
def test_endpoint_creation_refuses_hostile_urls():
    merchant = MerchantFactory()

    with pytest.raises(DomainError) as raised:
        services.endpoint_create(merchant=merchant, livemode=False, url="https://0x7f.1/hook", event_types=[])

    assert raised.value.param == "url"
    assert not merchant.webhook_endpoints.exists()


@pytest.mark.django_db
def test_dns_rebinding_is_refused_at_delivery(monkeypatch, settings):
    """The name resolved to a public address when given, and to loopback when we connect: nothing is sent."""
    settings.WEBHOOKS_ALLOW_HTTP = True
    receiver = start_receiver()
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    monkeypatch.setattr(ssrf, "resolve", lambda host, port: next(answers))
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    url = f"http://rebinding.example.com:{receiver.server.server_port}/hook"
    merchant = MerchantFactory()
    endpoint = services.endpoint_create(merchant=merchant, livemode=False, url=url, event_types=[])
    with transaction.atomic():
        event = services.event_record(merchant=merchant, livemode=False, type="payin.created", obj={"id": "x"},
                                      endpoints=[endpoint])
    row = Delivery.objects.get(event=event)

    deliveries.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    attempt = row.attempt_log.get()
    assert attempt.status_code is None
    assert attempt.error == "refused address: rebinding.example.com resolves to 127.0.0.1 (not public)"
    assert (row.status, row.failures) == ("PENDING", 1)
    assert receiver.received() == []


@pytest.mark.django_db
def test_delivery_connects_to_the_address_it_checked(monkeypatch, settings):
    """A control for the test above: with private targets allowed, the same name reaches the receiver through the
    address our resolver gave, though no real DNS knows the name."""
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    receiver = start_receiver()
    monkeypatch.setattr(ssrf, "resolve", lambda host, port: ["127.0.0.1"])
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    merchant = MerchantFactory()
    with transaction.atomic():
        event = services.event_record(
            merchant=merchant, livemode=False, type="payin.created", obj={"id": "x"},
            webhook_url=f"http://rebinding.example.com:{receiver.server.server_port}/hook")
    row = Delivery.objects.get(event=event)

    deliveries.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert row.status == "SUCCEEDED"
    assert [r.headers["host"] for r in receiver.received("/hook")] == [
        f"rebinding.example.com:{receiver.server.server_port}"]
