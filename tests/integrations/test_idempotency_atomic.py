"""What the Idempotency-Key wrapper guarantees without a transaction around the request (issue 12, point 5):
transactions belong to services, and a rail call must never run inside one. A request that committed nothing (a
validation error, a refusal whose service rolled back) releases its key; a request that committed an effect keeps its
response, whatever it is, so a retry never acts twice. The views below play services: each records its effect with
`effect_record()` in the transaction that commits it, as every service does."""

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
from integrations.idempotency import body_digest, effect_record, effect_statement, idempotent
from integrations.models import IdempotencyKey


def note(**fields) -> AccountEvent:
    """A service's effect: an audit entry, and the request's effect recorded in the same transaction."""
    with transaction.atomic():
        event = AccountEvent.objects.create(action="signed_up", **fields)
        effect_record()
    return event


class EffectThenCrashApi(ApiView):
    """Writes its effect, then fails on the first call only (as a crash after the write would)."""

    calls = 0

    @idempotent
    def post(self, request: Request) -> Response:
        event = note(merchant=request.auth.merchant, reason="effect")
        EffectThenCrashApi.calls += 1
        if EffectThenCrashApi.calls == 1:
            raise RuntimeError("the process fails after the effect was written")
        return Response({"id": event.pk}, status=201)


class EffectThenErrorResponseApi(ApiView):
    """Writes its effect, then answers an error without raising."""

    @idempotent
    def post(self, request: Request) -> Response:
        note(merchant=request.auth.merchant, reason="effect")
        return Response({"error": "refused after writing"}, status=409)


class RolledBackEffectApi(ApiView):
    """A service's refusal: its transaction wrote, then rolled back as the error left it."""

    @idempotent
    def post(self, request: Request) -> Response:
        with transaction.atomic():
            note(merchant=request.auth.merchant, reason="rolled back")
            raise InvalidState("Refused after writing, inside the service's transaction")


class TransactionStateApi(ApiView):
    """Answers whether the view runs inside a transaction, as a rail call in it would."""

    @idempotent
    def post(self, request: Request) -> Response:
        event = note(merchant=request.auth.merchant, reason="state")
        return Response({"id": event.pk, "inAtomicBlock": connection.in_atomic_block}, status=201)


class FailedWriteApi(ApiView):
    """A write refused by the database when its transaction commits: nothing committed, so nothing may be marked."""

    @idempotent
    def post(self, request: Request) -> Response:
        note(merchant_id=uuid.UUID(int=1), reason="no such merchant")
        return Response({}, status=201)


class SlowEffectApi(ApiView):
    @idempotent
    def post(self, request: Request) -> Response:
        event = note(merchant=request.auth.merchant, reason="slow")
        time.sleep(1.5)
        return Response({"id": event.pk}, status=201)


class WritingSelectApi(ApiView):
    """A service whose effect is a writing `SELECT fn()`, then an error answer: the effect is what it records."""

    @idempotent
    def post(self, request: Request) -> Response:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT test_note_write(%s)", [request.auth.merchant_id])
            effect_record()
        return Response({"error": "refused after writing"}, status=409)


class OneStatementEffectApi(ApiView):
    """A service whose effect is one statement (`effect_statement`): it answers whether the statement ran in a
    transaction."""

    @idempotent
    def post(self, request: Request) -> Response:
        with effect_statement():
            event = AccountEvent.objects.create(action="signed_up", merchant=request.auth.merchant,
                                                reason="one statement")
            in_transaction = connection.in_atomic_block
        return Response({"id": event.pk, "inAtomicBlock": in_transaction}, status=201)


urlpatterns = [
    path("test/one-statement", OneStatementEffectApi.as_view()),
    path("test/effect-then-crash", EffectThenCrashApi.as_view()),
    path("test/effect-then-error", EffectThenErrorResponseApi.as_view()),
    path("test/slow", SlowEffectApi.as_view()),
    path("test/failed-write", FailedWriteApi.as_view()),
    path("test/rolled-back", RolledBackEffectApi.as_view()),
    path("test/transaction-state", TransactionStateApi.as_view()),
    path("test/writing-select", WritingSelectApi.as_view()),
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
def test_the_mark_rides_in_the_transaction_of_the_effect(api, settings):
    """The protocol adds two statements to the request's own: the claim with its lock, and the stored response with
    the unlock; and one UPDATE in the effect's own transaction, right where the service records it."""
    settings.ROOT_URLCONF = __name__

    with CaptureQueriesContext(connection) as captured:
        response = api.post("/test/transaction-state", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-11")

    statements = [query["sql"] for query in captured.captured_queries
                  if "integrations_idempotencykey" in query["sql"] or "advisory" in query["sql"]
                  or 'INTO "accounts_accountevent"' in query["sql"]]
    assert response.status_code == 201
    assert len(statements) == 4, statements
    assert "pg_try_advisory_lock" in statements[0]
    assert 'INSERT INTO "accounts_accountevent"' in statements[1]
    assert statements[2].startswith('UPDATE "integrations_idempotencykey" SET "took_effect" = true'), statements[2]
    assert "pg_advisory_unlock" in statements[3]
    claim = IdempotencyKey.objects.get(key="k-11")
    assert (claim.took_effect, claim.response_status, claim.locked_at) == (True, 201, None)


@pytest.fixture
def note_function(db):
    """A SQL function that writes an audit entry: a write whose statement is a `SELECT`."""
    with connection.cursor() as cursor:
        cursor.execute("""
            CREATE FUNCTION test_note_write(p_merchant uuid) RETURNS void LANGUAGE sql AS $$
                INSERT INTO accounts_accountevent (merchant_id, actor_key, action, obj_type, obj_id, from_status,
                                                   to_status, reason, details, user_agent, created_at)
                VALUES (p_merchant, '', 'signed_up', '', '', '', '', 'through a function', '{}', '', now())
            $$""")
    yield "test_note_write"


@pytest.mark.django_db
def test_an_effect_whose_statement_is_a_select_keeps_its_answer(api, settings, note_function):
    """Review of 2026-12-07: the wrapper used to find writes by reading each statement's text, and a writing
    `SELECT fn()` went unseen: its request was released and a retry acted twice. The effect is now what the service
    records, whatever its SQL."""
    settings.ROOT_URLCONF = __name__

    first = api.post("/test/writing-select", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-13")
    retry = api.post("/test/writing-select", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-13")

    assert first.status_code == 409
    assert (retry.status_code, retry.json(), retry["Idempotent-Replayed"]) == (409, first.json(), "true")
    assert AccountEvent.objects.filter(reason="through a function").count() == 1
    assert IdempotencyKey.objects.get(key="k-13").took_effect


def test_an_effect_is_recorded_inside_its_transaction_only():
    """Outside a request with a key there is nothing to record; inside one, a call outside the effect's transaction
    could not commit with it, and is refused."""
    from integrations import idempotency

    effect_record()  # no claim: nothing to do, in or out of a transaction
    token = idempotency._current.set(idempotency.Claim(row=IdempotencyKey(pk=1)))
    try:
        with pytest.raises(RuntimeError, match=r"transaction\.atomic"):
            effect_record()
    finally:
        idempotency._current.reset(token)


@pytest.mark.django_db(transaction=True)
def test_a_write_that_fails_takes_its_mark_with_it_and_frees_the_key(api, settings):
    settings.ROOT_URLCONF = __name__

    response = api.post("/test/failed-write", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-12")

    assert response.status_code == 500
    assert not IdempotencyKey.objects.filter(key="k-12").exists()
    with connection.cursor() as cursor:  # and its lock was let go
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        assert cursor.fetchone()[0] == 0


@pytest.mark.django_db(transaction=True)
def test_an_effect_of_one_statement_is_marked_with_it_in_one_transaction(api, settings):
    settings.ROOT_URLCONF = __name__

    response = api.post("/test/one-statement", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-14")
    replay = api.post("/test/one-statement", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-14")

    assert (response.status_code, response.json()["inAtomicBlock"]) == (201, True)
    assert (replay.status_code, replay.json(), replay["Idempotent-Replayed"]) == (201, response.json(), "true")
    assert IdempotencyKey.objects.get(key="k-14").took_effect
    assert AccountEvent.objects.filter(reason="one statement").count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_effect_of_one_statement_without_a_key_opens_no_transaction(api, settings):
    """Without a claim to mark, the statement is a transaction of its own: no BEGIN and COMMIT around it."""
    settings.ROOT_URLCONF = __name__

    response = api.post("/test/one-statement", {}, format="json")

    assert (response.status_code, response.json()["inAtomicBlock"]) == (201, False)
    assert AccountEvent.objects.filter(reason="one statement").count() == 1
