"""Whatever a receiver or the environment does, an attempt ends on time and is recorded (review findings)."""

import socket
import threading
import time

import pytest
from django.db import transaction

from core.errors import DomainError
from tests.factories import MerchantFactory
from tests.webhooks.receiver import start_receiver
from webhooks import delivery as engine
from webhooks import services, ssrf
from webhooks.models import Delivery


@pytest.fixture(autouse=True)
def local_targets(settings, monkeypatch):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOK_RETRY_SCHEDULE = [60, 300]
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    monkeypatch.setattr("webhooks.tasks.delivery_attempt.apply_async", lambda **kwargs: None)


def record(url: str, merchant=None) -> Delivery:
    with transaction.atomic():
        event = services.event_record(merchant=merchant or MerchantFactory(), livemode=False, type="payin.paid",
                                      obj={"id": "c1"}, webhook_url=url)
    return Delivery.objects.get(event=event)


def raw_server(answer) -> int:
    """A TCP server on 127.0.0.1 whose handler is `answer(connection)`; returns its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve():
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=answer, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


@pytest.mark.django_db
def test_a_receiver_trickling_its_headers_is_cut_at_the_deadline(settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS = 0.5

    def trickle(connection):
        connection.recv(65536)
        try:
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100:
                connection.send(bytes([byte]))
                time.sleep(0.1)  # each read is quick; the whole answer never ends
        except OSError:
            pass

    row = record(f"http://127.0.0.1:{raw_server(trickle)}/hook")
    started = time.monotonic()

    engine.delivery_attempt(delivery_id=str(row.id))

    assert time.monotonic() - started < 2.5
    row.refresh_from_db()
    assert (row.status, row.failures, row.locked_until) == ("PENDING", 1, None)
    assert row.attempt_log.get().error == "timeout: no complete answer within 0.5 s"


@pytest.mark.django_db
def test_an_answer_with_nul_bytes_is_recorded():
    def nul(connection):
        connection.recv(65536)
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nok\x00!")
        connection.close()

    row = record(f"http://127.0.0.1:{raw_server(nul)}/hook")

    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert row.status == "SUCCEEDED"
    assert row.attempt_log.get().response_excerpt == "ok\ufffd!"


@pytest.mark.django_db
def test_a_failure_before_sending_is_a_recorded_attempt(monkeypatch):
    receiver = start_receiver()

    def unreadable(**kwargs):
        raise ValueError("InvalidTag")

    monkeypatch.setattr(engine, "signing_secrets_active", unreadable)
    row = record(receiver.url("/ok"))

    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert (row.status, row.failures, row.locked_until, row.last_error) == (
        "PENDING", 1, None, "internal error: ValueError")
    assert receiver.received() == []


@pytest.mark.django_db
def test_plain_http_is_not_sent_once_it_is_disallowed(settings):
    receiver = start_receiver()
    row = record(receiver.url("/ok"))
    settings.WEBHOOKS_ALLOW_HTTP = False

    engine.delivery_attempt(delivery_id=str(row.id))

    row.refresh_from_db()
    assert row.last_error == "refused: plain http:// is not allowed (WEBHOOKS_ALLOW_HTTP is off)"
    assert receiver.received() == []


@pytest.mark.parametrize("url", [
    "https://" + "a" * 70 + ".example.com/hook",  # a label over 63 characters
    "https://a..example.com/hook",
    "https://-bad.example.com/hook",
    "https://127.0.0.1\\.example.com/hook",
    "https://%31%32%37.0.0.1/hook",
    "https://exa mple.com/hook",
])
def test_host_names_the_client_would_read_differently_are_refused(url, settings, monkeypatch):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    monkeypatch.setattr(ssrf, "resolve", lambda host, port: ["93.184.216.34"])

    with pytest.raises(DomainError) as raised:
        ssrf.webhook_url_validate(url)

    assert raised.value.code == "invalid_webhook_url"


@pytest.mark.django_db
def test_pending_retries_follow_an_edited_endpoint_and_stop_when_it_is_disabled():
    merchant = MerchantFactory()
    endpoint = services.endpoint_create(merchant=merchant, livemode=False, url="http://127.0.0.1:9/old",
                                        event_types=[])
    with transaction.atomic():
        event = services.event_record(merchant=merchant, livemode=False, type="payin.paid", obj={"id": "c2"})
    pending = Delivery.objects.get(event=event, endpoint=endpoint)

    services.endpoint_update(endpoint=endpoint, url="http://127.0.0.1:9/new", event_types=[], description="",
                             enabled=True)
    pending.refresh_from_db()
    assert (pending.url, pending.status) == ("http://127.0.0.1:9/new", "PENDING")

    services.endpoint_update(endpoint=endpoint, url="http://127.0.0.1:9/new", event_types=[], description="",
                             enabled=False)
    pending.refresh_from_db()
    assert (pending.status, pending.last_error) == ("FAILED", "endpoint disabled")


def test_a_half_read_answer_never_becomes_the_next_deliverys_answer(settings):
    """A body still arriving at the deadline must not leave its tail in a pooled connection, where the next delivery
    would read it as its own answer."""
    from webhooks import http

    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0
    settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS = 0.5
    forged = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"
    filler = b"x" * (2048 + 65536)

    def steady_body_then_forgery(connection):
        connection.recv(65536)
        body = filler + forged
        connection.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n" % len(body) + filler[:2048])
        piece = 65536 // 6 + 1
        try:
            for i in range(6):  # the body keeps coming, and is complete only after the 1 s budget
                time.sleep(0.2)
                connection.sendall(filler[2048 + i * piece: 2048 + min(65536, (i + 1) * piece)])
            time.sleep(0.5)
            connection.sendall(forged)  # read by the next request, if it came on this connection
            time.sleep(5)
        except OSError:
            pass

    port = raw_server(steady_body_then_forgery)
    first = http.post(f"http://127.0.0.1:{port}/a", body=b"{}", headers={})
    time.sleep(0.1)

    second = http.post(f"http://127.0.0.1:{port}/b", body=b"{}", headers={})

    assert first.status == 500 and first.error.startswith("timeout")
    assert (second.status, second.body_excerpt) != (200, "forged")
