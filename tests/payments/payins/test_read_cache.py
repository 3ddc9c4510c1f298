"""GET /payin/{id} served from the per-process read cache (core.readcache): a hit costs no query, and no change to
a charge is ever hidden by it, in this process or (through the freshness token) in any other."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core import cache as shared_cache
from core import readcache
from payments.models import Payin
from payments.payins import services as payins
from payments.payins.serializers import payin_serialize
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.payins.test_payin_api import create, get, simulate


@pytest.fixture(autouse=True)
def _api_settings(settings):
    settings.API_RATE_LIMIT = 1_000_000


def from_database(payin_id: str) -> dict:
    return payin_serialize(Payin.objects.select_related("merchant").get(pk=payin_id))


def token_of(key: str) -> str | None:
    return shared_cache.redis_client().get(key)


def cached(client, payin_id: str) -> dict:
    """Read the charge until the cache holds it: the first read gives it a token, the second stores it."""
    get(client, payin_id)
    return get(client, payin_id)


def test_a_cached_charge_costs_no_query_and_is_the_database_body(api, django_assert_num_queries):
    charge = create(api)
    cached(api, charge["id"])
    with django_assert_num_queries(0):
        body = get(api, charge["id"])
    assert body == from_database(charge["id"]) == charge


def test_every_change_of_a_charge_is_seen_by_the_next_read(api):
    charge = create(api, amount=10_000)
    cached(api, charge["id"])
    assert simulate(api, charge["id"], "pay")["status"] == "PAID"
    assert get(api, charge["id"]) == from_database(charge["id"])
    assert get(api, charge["id"])["status"] == "PAID"

    response = api.post(f"/payin/{charge['id']}/refunds", {"amount": 1_000}, format="json")
    assert response.status_code == 201, response.content
    # The Pix refund is pending: refundedAmount counts it already.
    assert get(api, charge["id"])["refundedAmount"] == 1_000
    assert get(api, charge["id"]) == from_database(charge["id"])

    other = create(api, referenceId="order-2")
    cached(api, other["id"])
    response = api.post(f"/payin/{other['id']}/cancel", {}, format="json")
    assert response.status_code == 200, response.content
    assert get(api, other["id"])["status"] == "CANCELED"


def test_a_jobs_change_is_seen_too(api):
    charge = create(api)
    cached(api, charge["id"])
    Payin.objects.filter(pk=charge["id"]).update(pix_expires_at=datetime(2000, 1, 1, tzinfo=UTC))
    payins.payins_expire()
    assert get(api, charge["id"])["status"] == "EXPIRED"


def test_a_cached_charge_is_never_served_to_another_merchant_or_mode(api, api_client_for, merchant):
    charge = create(api)
    cached(api, charge["id"])
    other = api_client_for(*ApiKeyFactory.with_secret(merchant=MerchantFactory(), livemode=False))
    live = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))
    for client in (other, live):
        response = client.get(f"/payin/{charge['id']}")
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db(transaction=True)
def test_a_change_committed_by_another_process_is_seen(api):
    """Another process still holds the old body: the token the change deleted at its commit is what it was stored
    under, so it is never served again."""
    charge = create(api)
    cached(api, charge["id"])
    key = readcache.key("payin", charge["id"])
    held_elsewhere = readcache._entries[key]
    simulate(api, charge["id"], "pay")
    readcache._entries[key] = held_elsewhere  # as in a process that did not make the change
    assert get(api, charge["id"])["status"] == "PAID"
    assert get(api, charge["id"]) == from_database(charge["id"])


@pytest.mark.django_db(transaction=True)
def test_a_read_that_raced_a_change_stores_under_a_dead_token(api):
    """A read that loaded the charge before a change committed stores the old body under the token it read before
    loading; the commit deleted that token, so the old body is never served."""
    charge = create(api)
    get(api, charge["id"])  # gives the charge its token
    key = readcache.key("payin", charge["id"])
    token = token_of(key)
    assert token is not None
    old_body = from_database(charge["id"])
    simulate(api, charge["id"], "pay")  # commits, deletes the token
    assert token_of(key) is None
    readcache.put(key, token, old_body, merchant_id=Payin.objects.get(pk=charge["id"]).merchant_id, livemode=False)
    assert get(api, charge["id"])["status"] == "PAID"


@pytest.mark.django_db(transaction=True)
def test_a_change_made_by_the_worker_is_seen_by_the_web_process(api, monkeypatch):
    """`make run`'s web process and Celery worker each have their own copies; the worker's change deletes the token
    in the Redis they share, so the web process's copy is not served again."""
    charge = create(api)
    cached(api, charge["id"])
    Payin.objects.filter(pk=charge["id"]).update(pix_expires_at=datetime(2000, 1, 1, tzinfo=UTC))
    with monkeypatch.context() as worker:  # the beat's expiry job, in the worker's process: its own memory
        worker.setattr(readcache, "_entries", {})
        assert payins.payins_expire() == 1
    assert get(api, charge["id"])["status"] == "EXPIRED"
