"""The brokers' transports (core/broker.py). The embedded one: a message is in the queue whole or not at all, so a
worker reading while a web process writes never gets a half-written file. Redis: one client per channel, not one per
command, and every message still goes through."""

import contextlib
import os
import subprocess
import sys
import threading
import time
import uuid
from queue import Empty

import pytest
import redis as redis_py
from django.conf import settings
from kombu import Connection
from kombu.transport import filesystem, redis
from kombu.utils import json as kombu_json

from core import broker


def channel_of(transport, folder):
    connection = Connection("filesystem://", transport=transport, transport_options={
        "data_folder_in": str(folder), "data_folder_out": str(folder), "processed_folder": str(folder / "done"),
        "control_folder": str(folder / "control"), "store_processed": False})
    return connection, connection.default_channel


def read_while_written(transport, folder, monkeypatch, count=40) -> list:
    """A writer puts `count` messages, each taking a moment to encode after its file is opened, while a reader takes
    from the queue as fast as it can (a worker polling at the wrong moment): what the reader got."""
    for sub in ("done", "control"):
        (folder / sub).mkdir(exist_ok=True)
    slow = lambda payload: (time.sleep(0.01), kombu_json.dumps(payload))[1]  # noqa: E731
    monkeypatch.setattr(filesystem, "dumps", slow)
    monkeypatch.setattr(broker, "dumps", slow)
    writer_connection, writer = channel_of(transport, folder)
    reader_connection, reader = channel_of(transport, folder)
    thread = threading.Thread(target=lambda: [writer._put("work", {"n": n}) for n in range(count)])
    thread.start()
    received = []
    try:
        while True:
            written = not thread.is_alive()  # before looking: an empty queue then means nothing more will come
            try:
                received.append(reader._get("work")["n"])
            except Empty:
                if written:
                    break
    finally:
        thread.join()
        writer_connection.close()
        reader_connection.close()
    return received


def test_a_reader_beside_a_writer_gets_every_message_whole(tmp_path, monkeypatch):
    assert sorted(read_while_written(broker.Transport, tmp_path, monkeypatch)) == list(range(40))


def test_kombus_own_transport_lets_the_reader_find_an_empty_file(tmp_path, monkeypatch):
    # What the transport above is for: the same reader and writer on kombu's transport read a file still empty.
    with pytest.raises(ValueError):  # json.JSONDecodeError
        read_while_written(filesystem.Transport, tmp_path, monkeypatch)


def test_the_default_broker_url_takes_this_transport(tmp_path):
    # The quick start's settings (no CELERY_BROKER_URL): Celery's connection is this transport, in .local/broker.
    env = {name: value for name, value in os.environ.items() if name not in ("CELERY_BROKER_URL", "DATABASE_URL")}
    script = ("import django; django.setup(); from config.celery import app; c = app.connection_for_write(); "
              "print(type(c.transport).__module__, c.transport_options['data_folder_in'])")
    done = subprocess.run([sys.executable, "-c", script], env={**env, "DJANGO_SETTINGS_MODULE": "config.settings",
                          "LOCAL_DIR": str(tmp_path)}, capture_output=True, text=True, timeout=60, check=True)

    assert done.stdout.split() == ["core.broker", str(tmp_path / "broker" / "queue")]


def clients_built_for(transport, monkeypatch, count=50) -> tuple[int, list]:
    """Publish `count` messages on a queue of the test broker and read them back: the redis.Redis clients built
    meanwhile, and what was read."""
    built = []
    original = redis_py.Redis.__init__
    monkeypatch.setattr(redis_py.Redis, "__init__",
                        lambda self, *args, **kwargs: (built.append(1), original(self, *args, **kwargs))[1])
    queue = f"test-broker-{uuid.uuid4().hex}"
    with Connection(settings.CELERY_BROKER_URL, transport=transport) as connection:
        channel = connection.default_channel
        try:
            for n in range(count):
                channel._put(queue, {"n": n})
            size = channel._size(queue)
            received = [channel._get(queue)["n"] for _ in range(size)]
        finally:
            channel._purge(queue)
    return len(built), received


@pytest.mark.redis
def test_the_redis_transport_builds_one_client_for_many_commands(monkeypatch):
    built, received = clients_built_for(broker.RedisTransport, monkeypatch)
    assert received == list(range(50))
    assert built <= 2, built  # the channel's client, and at most one for its poll loop


@pytest.mark.redis
def test_kombus_own_redis_transport_builds_a_client_per_command(monkeypatch):
    # What the transport above is for: kombu's builds one for each publish, each read and the queue's size.
    built, received = clients_built_for(redis.Transport, monkeypatch)
    assert received == list(range(50))
    assert built >= 100, built


@pytest.mark.redis
def test_a_redis_broker_url_takes_the_redis_transport():
    from config.celery import app
    with app.connection_for_write() as connection:
        assert type(connection.transport) is broker.RedisTransport


def taken_and_left(transport_options: dict) -> tuple[bool, list]:
    """A message on a fresh queue of the test broker, taken by a consumer that then closes without acknowledging it
    (a worker's warm shutdown): whether Redis held a copy of it meanwhile (kombu's "unacked" hash), and what the
    queue holds after."""
    name = f"test-broker-{uuid.uuid4().hex}"
    client = redis_py.Redis.from_url(settings.CELERY_BROKER_URL)
    with Connection(settings.CELERY_BROKER_URL, transport=broker.RedisTransport,
                    transport_options=transport_options) as connection:
        queue = connection.SimpleQueue(name)
        queue.put({"n": 1})
        message = queue.get(timeout=5)
        copied = client.hexists("unacked", message.delivery_tag)
        queue.close()
    with Connection(settings.CELERY_BROKER_URL, transport=broker.RedisTransport) as connection:
        queue = connection.SimpleQueue(name)
        left = []
        with contextlib.suppress(Empty):
            while True:
                left.append(queue.get(timeout=0.5))
        for found in left:
            found.ack()
        queue.close()
    client.delete(name)
    return copied, [found.payload for found in left]


@pytest.mark.redis
def test_the_redis_broker_keeps_no_copy_of_a_message_a_worker_holds_and_gets_it_back_when_it_closes():
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS == {"ack_emulation": False}  # README, Decision 118

    copied, left = taken_and_left(settings.CELERY_BROKER_TRANSPORT_OPTIONS)

    assert not copied
    assert left == [{"n": 1}]


@pytest.mark.redis
def test_kombus_ack_emulation_copies_every_message_a_worker_takes():
    # What the setting above turns off: a Redis transaction on receipt and another on the ack, per message.
    copied, left = taken_and_left({"ack_emulation": True})

    assert copied
    assert left == [{"n": 1}]
