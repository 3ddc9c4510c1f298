"""What the Idempotency-Key wrapper guarantees without a transaction around the request (issue 12, point 5):
transactions belong to services, and a rail call must never run inside one. A request that committed nothing (a
validation error, a refusal whose service rolled back) releases its key; a request that committed an effect keeps its
response, whatever it is, so a retry never acts twice."""

import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import path
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import AccountEvent
from config.urls import urlpatterns as project_urlpatterns
from core.api import ApiView
from core.errors import InvalidState
from integrations.idempotency import body_digest
from integrations.models import IdempotencyKey


class EffectThenCrashApi(ApiView):
    """Writes its effect, then fails on the first call only (as a crash after the write would)."""

    calls = 0

    def post(self, request: Request) -> Response:
        event = AccountEvent.objects.create(merchant=request.auth.merchant, action="signed_up", reason="effect")
        EffectThenCrashApi.calls += 1
        if EffectThenCrashApi.calls == 1:
            raise RuntimeError("the process fails after the effect was written")
        return Response({"id": event.pk}, status=201)


class EffectThenErrorResponseApi(ApiView):
    """Writes its effect, then answers an error without raising."""

    def post(self, request: Request) -> Response:
        AccountEvent.objects.create(merchant=request.auth.merchant, action="signed_up", reason="effect")
        return Response({"error": "refused after writing"}, status=409)


class RolledBackEffectApi(ApiView):
    """A service's refusal: its transaction wrote, then rolled back as the error left it."""

    def post(self, request: Request) -> Response:
        with transaction.atomic():
            AccountEvent.objects.create(merchant=request.auth.merchant, action="signed_up", reason="rolled back")
            raise InvalidState("Refused after writing, inside the service's transaction")


class TransactionStateApi(ApiView):
    """Answers whether the view runs inside a transaction, as a rail call in it would."""

    def post(self, request: Request) -> Response:
        event = AccountEvent.objects.create(merchant=request.auth.merchant, action="signed_up", reason="state")
        return Response({"id": event.pk, "inAtomicBlock": connection.in_atomic_block}, status=201)


class FailedWriteApi(ApiView):
    """A write refused by the database, as its own transaction: nothing committed, so nothing may be marked."""

    def post(self, request: Request) -> Response:
        AccountEvent.objects.create(merchant_id=uuid.UUID(int=1), action="signed_up", reason="no such merchant")
        return Response({}, status=201)


class SlowEffectApi(ApiView):
    def post(self, request: Request) -> Response:
        event = AccountEvent.objects.create(merchant=request.auth.merchant, action="signed_up", reason="slow")
        time.sleep(1.5)
        return Response({"id": event.pk}, status=201)


urlpatterns = [
    path("test/effect-then-crash", EffectThenCrashApi.as_view()),
    path("test/effect-then-error", EffectThenErrorResponseApi.as_view()),
    path("test/slow", SlowEffectApi.as_view()),
    path("test/failed-write", FailedWriteApi.as_view()),
    path("test/rolled-back", RolledBackEffectApi.as_view()),
    path("test/transaction-state", TransactionStateApi.as_view()),
    *project_urlpatterns,
]


@pytest.mark.django_db
def test_a_failure_after_a_committed_effect_is_stored_so_the_retry_never_acts_twice(api, settings):
    """Was: the effect rolled back and the retry acted. Without a transaction around the request the effect stays
    (as a charge handed to the rail must), so the key keeps the 500 and the retry gets it again."""
    settings.ROOT_URLCONF = __name__
    EffectThenCrashApi.calls = 0

    first = api.post("/test/effect-then-crash", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    retry = api.post("/test/effect-then-crash", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")

    assert first.status_code == 500
    assert first.json()["error"]["code"] == "internal_error"
    assert (retry.status_code, retry.json(), retry["Idempotent-Replayed"]) == (500, first.json(), "true")
    assert EffectThenCrashApi.calls == 1
    assert AccountEvent.objects.filter(reason="effect").count() == 1


@pytest.mark.django_db
def test_an_error_returned_after_a_committed_effect_is_stored(api, settings):
    settings.ROOT_URLCONF = __name__

    first = api.post("/test/effect-then-error", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    second = api.post("/test/effect-then-error", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-2")

    assert (first.status_code, second.status_code) == (409, 409)
    assert (second.json(), second["Idempotent-Replayed"]) == (first.json(), "true")
    assert AccountEvent.objects.filter(reason="effect").count() == 1


@pytest.mark.django_db
def test_a_refusal_whose_service_rolled_back_leaves_nothing_and_frees_the_key(api, settings):
    settings.ROOT_URLCONF = __name__

    first = api.post("/test/rolled-back", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-4")
    second = api.post("/test/rolled-back", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-4")

    assert (first.status_code, second.status_code) == (409, 409)
    assert "Idempotent-Replayed" not in second
    assert not AccountEvent.objects.filter(reason="rolled back").exists()
    assert not IdempotencyKey.objects.filter(key="k-4").exists()


@pytest.mark.django_db(transaction=True)
def test_the_wrapper_opens_no_transaction_around_the_view(api, settings):
    settings.ROOT_URLCONF = __name__

    response = api.post("/test/transaction-state", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-5")
    replay = api.post("/test/transaction-state", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-5")

    assert (response.status_code, response.json()["inAtomicBlock"]) == (201, False)
    assert (replay.status_code, replay.json(), replay["Idempotent-Replayed"]) == (201, response.json(), "true")
    assert AccountEvent.objects.filter(reason="state").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_dead_owners_claim_is_taken_over_once_stale(api, merchant, settings):
    """The owner's advisory lock dies with its connection: a claim older than the lock timeout and unlocked, whose
    request committed nothing, is taken over (a live owner's is not: see the test below)."""
    settings.ROOT_URLCONF = __name__
    settings.IDEMPOTENCY_LOCK_TIMEOUT_SECONDS = 0.5
    IdempotencyKey.objects.create(merchant=merchant, livemode=False, key="k-6", method="POST",
                                  path="/test/transaction-state", body_digest=body_digest(b"{}"),
                                  locked_at=timezone.now() - timedelta(seconds=1))

    again = api.post("/test/transaction-state", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-6")

    assert again.status_code == 201
    assert "Idempotent-Replayed" not in again
    assert IdempotencyKey.objects.get(key="k-6").response_status == 201
    assert AccountEvent.objects.filter(reason="state").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_dead_owner_whose_request_took_effect_is_never_run_again(api, settings):
    """A process that died after a write of its request committed (a charge handed to the rail) leaves a claim marked
    `took_effect`: taking it over must not run the request a second time, but answer that it was interrupted, and
    keep answering so."""
    settings.ROOT_URLCONF = __name__
    settings.IDEMPOTENCY_LOCK_TIMEOUT_SECONDS = 0.5
    first = api.post("/test/transaction-state", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-9")
    assert IdempotencyKey.objects.get(key="k-9").took_effect  # marked as the write committed
    IdempotencyKey.objects.filter(key="k-9").update(response_status=None, response_body=None,
                                                    locked_at=timezone.now() - timedelta(seconds=1))

    again = api.post("/test/transaction-state", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-9")
    replay = api.post("/test/transaction-state", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-9")

    assert first.status_code == 201
    assert again.status_code == 500
    assert again.json() == {"error": {
        "type": "api_error", "code": "request_interrupted", "param": "Idempotency-Key", "details": [],
        "message": "The first request with this Idempotency-Key stopped after it took effect; it is not run again: "
                   "find its result (list by referenceId) instead of retrying",
        "requestId": again["X-Request-Id"]}}
    assert (replay.status_code, replay.json(), replay["Idempotent-Replayed"]) == (500, again.json(), "true")
    assert AccountEvent.objects.filter(reason="state").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_request_that_committed_nothing_does_not_mark_its_claim(api, settings):
    settings.ROOT_URLCONF = __name__

    refused = api.post("/test/rolled-back", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-10")

    assert refused.status_code == 409
    assert not IdempotencyKey.objects.filter(key="k-10").exists()


@pytest.mark.django_db(transaction=True)
def test_a_slow_request_past_the_lock_timeout_is_never_taken_over(api_client_for, settings):
    from tests.factories import ApiKeyFactory

    settings.ROOT_URLCONF = __name__
    settings.IDEMPOTENCY_LOCK_TIMEOUT_SECONDS = 0.5
    key_pair = ApiKeyFactory.with_secret(livemode=False)
    results = {}

    def first_request():
        from django.db import connections

        results["first"] = api_client_for(*key_pair).post("/test/slow", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-3")
        connections.close_all()

    owner = threading.Thread(target=first_request)
    owner.start()
    time.sleep(0.9)  # the first request still runs, and its claim is older than the lock timeout
    retry = api_client_for(*key_pair).post("/test/slow", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-3")
    owner.join()

    assert retry.status_code == 409
    assert retry.json()["error"]["code"] == "idempotency_key_in_use"
    assert results["first"].status_code == 201
    assert AccountEvent.objects.filter(reason="slow").count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_mark_rides_with_a_write_that_is_its_own_transaction(api, settings):
    """On PostgreSQL the protocol adds two statements to the request's own: the claim with its lock, and the stored
    response with the unlock; the request's write carries the `took_effect` mark in the same statement."""
    settings.ROOT_URLCONF = __name__

    with CaptureQueriesContext(connection) as captured:
        response = api.post("/test/transaction-state", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-11")

    protocol = [query["sql"] for query in captured.captured_queries
                if "integrations_idempotencykey" in query["sql"] or "advisory" in query["sql"]]
    assert response.status_code == 201
    assert len(protocol) == 3, protocol
    assert "pg_try_advisory_lock" in protocol[0]
    assert "_idempotency_mark" in protocol[1] and 'INSERT INTO "accounts_accountevent"' in protocol[1]
    assert "pg_advisory_unlock" in protocol[2]
    claim = IdempotencyKey.objects.get(key="k-11")
    assert (claim.took_effect, claim.response_status, claim.locked_at) == (True, 201, None)


@pytest.mark.django_db(transaction=True)
def test_a_write_that_fails_takes_its_mark_with_it_and_frees_the_key(api, settings):
    settings.ROOT_URLCONF = __name__

    response = api.post("/test/failed-write", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-12")

    assert response.status_code == 500
    assert not IdempotencyKey.objects.filter(key="k-12").exists()
    with connection.cursor() as cursor:  # and its lock was let go
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        assert cursor.fetchone()[0] == 0
