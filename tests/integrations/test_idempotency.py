"""SPEC §1.3: Idempotency-Key on every POST, exercised through the test-only POST /test/notes
(tests/integrations/urls.py), an ApiView like every real endpoint."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import AccountEvent
from integrations.idempotency import body_digest, idempotency_keys_purge
from integrations.models import IdempotencyKey
from integrations.tasks import idempotency_keys_purge as idempotency_keys_purge_task
from tests.conftest import basic_auth, run_in_threads
from tests.factories import ApiKeyFactory
from tests.integrations import urls as notes_urls

pytestmark = pytest.mark.django_db

KEY = "order-42-attempt"
REUSED = "This Idempotency-Key was used with a different request; use a new key for a new request"
IN_USE = "A request with this Idempotency-Key is still in progress; retry shortly"


def notes_of(merchant) -> list[str]:
    return list(AccountEvent.objects.filter(merchant=merchant).order_by("id").values_list("reason", flat=True))


def claim_row(merchant, *, body: dict, locked_at, path: str = "/test/notes", livemode: bool = False):
    """A claim left by a request still running (or by a process that died): what the first POST inserts."""
    return IdempotencyKey.objects.create(merchant=merchant, livemode=livemode, key=KEY, method="POST", path=path,
                                         body_digest=body_digest(json.dumps(body).encode()), locked_at=locked_at)


# --- Replay ---------------------------------------------------------------------------------------------------------
def test_without_a_key_every_post_creates(api, merchant, notes_api):
    first = api.post(notes_api, {"note": "a"})

    second = api.post(notes_api, {"note": "a"})

    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["id"] != second.json()["id"]
    assert notes_of(merchant) == ["a", "a"]


def test_replay_returns_the_stored_response_and_creates_nothing(api, merchant, notes_api):
    original = api.post(notes_api, {"note": "first"}, HTTP_IDEMPOTENCY_KEY=KEY)

    replay = api.post(notes_api, {"note": "first"}, HTTP_IDEMPOTENCY_KEY=KEY)

    event = AccountEvent.objects.get(merchant=merchant)
    assert original.status_code == 201
    assert original.json() == {"id": event.id, "note": "first"}
    assert "Idempotent-Replayed" not in original
    assert replay.status_code == 201
    assert replay.json() == {"id": event.id, "note": "first"}
    assert replay["Idempotent-Replayed"] == "true"
    assert replay["Content-Type"] == "application/json"
    assert notes_of(merchant) == ["first"]


def test_replay_works_many_times_and_after_other_requests(api, merchant, notes_api):
    original = api.post(notes_api, {"note": "first"}, HTTP_IDEMPOTENCY_KEY=KEY)
    api.post(notes_api, {"note": "second"}, HTTP_IDEMPOTENCY_KEY="another-key")

    replays = [api.post(notes_api, {"note": "first"}, HTTP_IDEMPOTENCY_KEY=KEY) for _ in range(3)]

    assert [(r.status_code, r.json(), r["Idempotent-Replayed"]) for r in replays] == [
        (201, original.json(), "true")] * 3
    assert notes_of(merchant) == ["first", "second"]


def test_same_json_in_another_key_order_and_white_space_is_the_same_body(api, merchant, notes_api):
    original = api.post(notes_api, data='{"note": "ordered", "sleep": 0}', content_type="application/json",
                        HTTP_IDEMPOTENCY_KEY=KEY)

    replay = api.post(notes_api, data='{\n  "sleep" : 0,\t"note":"ordered"\n}\n', content_type="application/json",
                      HTTP_IDEMPOTENCY_KEY=KEY)

    assert original.status_code == 201
    assert (replay.status_code, replay.json(), replay["Idempotent-Replayed"]) == (201, original.json(), "true")
    assert notes_of(merchant) == ["ordered"]


def test_a_key_is_scoped_to_its_merchant(api, merchant, other_key, other_merchant, api_client_for, notes_api):
    mine = api.post(notes_api, {"note": "same"}, HTTP_IDEMPOTENCY_KEY=KEY)

    theirs = api_client_for(*other_key).post(notes_api, {"note": "same"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert (mine.status_code, theirs.status_code) == (201, 201)
    assert "Idempotent-Replayed" not in theirs
    assert theirs.json() == {"id": AccountEvent.objects.get(merchant=other_merchant).id, "note": "same"}
    assert notes_of(merchant) == ["same"]
    assert notes_of(other_merchant) == ["same"]


def test_a_key_is_scoped_to_its_mode(api, merchant, live_key, api_client_for, notes_api):
    test_mode = api.post(notes_api, {"note": "same"}, HTTP_IDEMPOTENCY_KEY=KEY)

    live_mode = api_client_for(*live_key).post(notes_api, {"note": "same"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert (test_mode.status_code, live_mode.status_code) == (201, 201)
    assert "Idempotent-Replayed" not in live_mode
    assert live_mode.json()["id"] != test_mode.json()["id"]
    assert notes_of(merchant) == ["same", "same"]


def test_a_key_is_shared_by_the_key_pairs_of_one_merchant_and_mode(api, merchant, api_client_for, notes_api):
    original = api.post(notes_api, {"note": "same"}, HTTP_IDEMPOTENCY_KEY=KEY)
    second_pair = api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=False))

    replay = second_pair.post(notes_api, {"note": "same"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert (replay.status_code, replay.json(), replay["Idempotent-Replayed"]) == (201, original.json(), "true")
    assert notes_of(merchant) == ["same"]


# --- Reuse with another request -------------------------------------------------------------------------------------
def test_same_key_with_another_body_is_refused(api, merchant, notes_api, expected_error):
    api.post(notes_api, {"note": "first"}, HTTP_IDEMPOTENCY_KEY=KEY)

    response = api.post(notes_api, {"note": "second"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert response.status_code == 422
    assert response.json() == expected_error(response, type="idempotency_error", code="idempotency_key_reused",
                                             message=REUSED, param="Idempotency-Key")
    assert "Idempotent-Replayed" not in response
    assert notes_of(merchant) == ["first"]


def test_same_key_on_another_path_is_refused(api, merchant, notes_api, expected_error):
    api.post(notes_api, {"note": "first"}, HTTP_IDEMPOTENCY_KEY=KEY)

    response = api.post("/test/notes-alt", {"note": "first"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert response.status_code == 422
    assert response.json() == expected_error(response, type="idempotency_error", code="idempotency_key_reused",
                                             message=REUSED, param="Idempotency-Key")
    assert notes_of(merchant) == ["first"]


def test_a_long_path_works_with_a_key(api, merchant, notes_api):
    """The path is the client's choice (POST /payin/{id}/cancel with any id): a long one must not break the claim."""
    long_path = f"{notes_api}/{'r' * 300}"

    original = api.post(long_path, {"note": "long"}, HTTP_IDEMPOTENCY_KEY=KEY)
    replay = api.post(long_path, {"note": "long"}, HTTP_IDEMPOTENCY_KEY=KEY)
    other_path = api.post(f"{notes_api}/{'r' * 299}", {"note": "long"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert original.status_code == 201
    assert (replay.status_code, replay.json(), replay["Idempotent-Replayed"]) == (201, original.json(), "true")
    assert other_path.status_code == 422
    assert notes_of(merchant) == ["long"]


def test_a_validation_error_is_not_stored_and_the_key_can_be_reused(api, merchant, notes_api, expected_error):
    invalid = api.post(notes_api, {"note": 7, "colour": "blue"}, HTTP_IDEMPOTENCY_KEY=KEY)

    valid = api.post(notes_api, {"note": "fixed"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert invalid.status_code == 400
    assert invalid.json() == expected_error(invalid, type="invalid_request_error", code="validation_error",
                                            message="The request has invalid fields", details=[
        {"param": "note", "code": "invalid", "message": "Must be a JSON string."},
        {"param": "colour", "code": "unknown_field", "message": "Unknown field 'colour'."},
    ])
    assert valid.status_code == 201
    assert "Idempotent-Replayed" not in valid
    assert valid.json() == {"id": AccountEvent.objects.get(merchant=merchant).id, "note": "fixed"}
    assert IdempotencyKey.objects.get(merchant=merchant, key=KEY).response_status == 201


def test_an_error_response_is_not_stored_and_the_key_can_be_reused(api, merchant, notes_api, expected_error):
    refused = api.post(notes_api, {"note": "x", "refuse": True}, HTTP_IDEMPOTENCY_KEY=KEY)

    accepted = api.post(notes_api, {"note": "x"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert refused.status_code == 409
    assert refused.json() == expected_error(refused, type="conflict", code="invalid_state",
                                            message="Refused on request")
    assert accepted.status_code == 201
    assert "Idempotent-Replayed" not in accepted
    assert notes_of(merchant) == ["x"]


def test_malformed_json_is_not_stored_and_the_key_can_be_reused(api, merchant, notes_api, expected_error):
    malformed = api.post(notes_api, data='{"note": ', content_type="application/json", HTTP_IDEMPOTENCY_KEY=KEY)

    valid = api.post(notes_api, {"note": "fixed"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert malformed.status_code == 400
    assert malformed.json() == expected_error(malformed, type="invalid_request_error", code="malformed_json",
                                              message="The request body is not valid JSON")
    assert valid.status_code == 201
    assert notes_of(merchant) == ["fixed"]


# --- In progress ----------------------------------------------------------------------------------------------------
def test_same_key_while_the_first_request_runs_is_refused(api, merchant, test_key, monkeypatch, notes_api,
                                                          expected_error):
    api_key, secret = test_key
    during = {}

    def second_request_while_the_first_runs() -> None:
        if "response" not in during:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret))
            during["response"] = client.post(notes_api, {"note": "slow"}, HTTP_IDEMPOTENCY_KEY=KEY)

    monkeypatch.setattr(notes_urls, "before_create", second_request_while_the_first_runs)

    first = api.post(notes_api, {"note": "slow"}, HTTP_IDEMPOTENCY_KEY=KEY)
    after = api.post(notes_api, {"note": "slow"}, HTTP_IDEMPOTENCY_KEY=KEY)

    concurrent = during["response"]
    assert concurrent.status_code == 409
    assert concurrent.json() == expected_error(concurrent, type="conflict", code="idempotency_key_in_use",
                                               message=IN_USE, param="Idempotency-Key")
    assert first.status_code == 201
    assert first.json() == {"id": AccountEvent.objects.get(merchant=merchant).id, "note": "slow"}
    assert (after.status_code, after.json(), after["Idempotent-Replayed"]) == (201, first.json(), "true")


def test_a_recent_claim_is_in_use(api, merchant, settings, notes_api, expected_error):
    claim_row(merchant, body={"note": "x"},
              locked_at=timezone.now() - timedelta(seconds=settings.IDEMPOTENCY_LOCK_TIMEOUT_SECONDS - 5))

    response = api.post(notes_api, {"note": "x"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert response.status_code == 409
    assert response.json() == expected_error(response, type="conflict", code="idempotency_key_in_use",
                                             message=IN_USE, param="Idempotency-Key")
    assert notes_of(merchant) == []


def test_a_stale_claim_is_taken_over(api, merchant, settings, notes_api):
    claim = claim_row(merchant, body={"note": "x"},
                      locked_at=timezone.now() - timedelta(seconds=settings.IDEMPOTENCY_LOCK_TIMEOUT_SECONDS + 1))

    response = api.post(notes_api, {"note": "x"}, HTTP_IDEMPOTENCY_KEY=KEY)
    replay = api.post(notes_api, {"note": "x"}, HTTP_IDEMPOTENCY_KEY=KEY)

    event = AccountEvent.objects.get(merchant=merchant)
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    assert response.json() == {"id": event.id, "note": "x"}
    assert (replay.status_code, replay.json(), replay["Idempotent-Replayed"]) == (201, response.json(), "true")
    claim.refresh_from_db()
    assert (claim.response_status, claim.response_body, claim.locked_at) == (201, response.json(), None)


def test_a_stale_claim_of_another_body_is_still_reused(api, merchant, settings, notes_api, expected_error):
    claim_row(merchant, body={"note": "x"},
              locked_at=timezone.now() - timedelta(seconds=settings.IDEMPOTENCY_LOCK_TIMEOUT_SECONDS + 1))

    response = api.post(notes_api, {"note": "y"}, HTTP_IDEMPOTENCY_KEY=KEY)

    assert response.status_code == 422
    assert response.json() == expected_error(response, type="idempotency_error", code="idempotency_key_reused",
                                             message=REUSED, param="Idempotency-Key")
    assert notes_of(merchant) == []


# --- The key itself -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [
    pytest.param("k" * 256, id="256-chars"),
    pytest.param("", id="empty"),
    pytest.param("abc\x01def", id="control-char"),
    pytest.param("abc\x7f", id="delete-char"),
    pytest.param("tab\tinside", id="tab"),
    pytest.param("chave-única", id="non-ascii"),
])
def test_an_invalid_key_is_refused(key, api, merchant, notes_api, expected_error):
    response = api.post(notes_api, {"note": "x"}, HTTP_IDEMPOTENCY_KEY=key)

    assert response.status_code == 400
    assert response.json() == expected_error(
        response, type="invalid_request_error", code="validation_error", message="The request has invalid fields",
        param="Idempotency-Key", details=[{"param": "Idempotency-Key", "code": "invalid_idempotency_key",
                                           "message": "Idempotency-Key must be 1 to 255 printable ASCII characters."}])
    assert notes_of(merchant) == []
    assert not IdempotencyKey.objects.exists()


@pytest.mark.parametrize("key", [pytest.param("k" * 255, id="255-chars"), pytest.param("a", id="1-char"),
                                 pytest.param(" ~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}", id="punctuation")])
def test_keys_of_1_to_255_printable_characters_are_accepted(key, api, merchant, notes_api):
    original = api.post(notes_api, {"note": "x"}, HTTP_IDEMPOTENCY_KEY=key)

    replay = api.post(notes_api, {"note": "x"}, HTTP_IDEMPOTENCY_KEY=key)

    assert original.status_code == 201
    assert (replay.status_code, replay.json(), replay["Idempotent-Replayed"]) == (201, original.json(), "true")
    assert notes_of(merchant) == ["x"]


# --- Retention ------------------------------------------------------------------------------------------------------
def test_purge_forgets_keys_older_than_24_hours_and_keeps_newer(api, merchant, notes_api):
    api.post(notes_api, {"note": "old"}, HTTP_IDEMPOTENCY_KEY="old-key")
    api.post(notes_api, {"note": "recent"}, HTTP_IDEMPOTENCY_KEY="recent-key")
    now = timezone.now()
    IdempotencyKey.objects.filter(key="old-key").update(created_at=now - timedelta(hours=24, minutes=1))
    IdempotencyKey.objects.filter(key="recent-key").update(created_at=now - timedelta(hours=23, minutes=59))

    deleted = idempotency_keys_purge()

    assert deleted == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["recent-key"]
    assert api.post(notes_api, {"note": "recent"}, HTTP_IDEMPOTENCY_KEY="recent-key")["Idempotent-Replayed"] == "true"
    reused = api.post(notes_api, {"note": "old"}, HTTP_IDEMPOTENCY_KEY="old-key")
    assert reused.status_code == 201
    assert "Idempotent-Replayed" not in reused
    assert notes_of(merchant) == ["old", "recent", "old"]


def test_the_hourly_task_purges(api, notes_api):
    api.post(notes_api, {"note": "old"}, HTTP_IDEMPOTENCY_KEY="old-key")
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(days=2))

    deleted = idempotency_keys_purge_task()

    assert deleted == 1
    assert not IdempotencyKey.objects.exists()


# --- Concurrency ----------------------------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_thirty_simultaneous_posts_with_one_key_create_one_object(test_key, merchant, notes_api, expected_error):
    api_key, secret = test_key
    body = {"note": "concurrent", "sleep": 0.3}

    def post(_: int):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=basic_auth(api_key.public_key, secret))
        return client.post(notes_api, body, HTTP_IDEMPOTENCY_KEY=KEY)

    responses = run_in_threads(30, post)

    assert not [r for r in responses if isinstance(r, Exception)]
    event = AccountEvent.objects.get(merchant=merchant)
    created = [r for r in responses if r.status_code == 201]
    in_use = [r for r in responses if r.status_code == 409]
    assert len(created) + len(in_use) == 30
    assert len(created) >= 1
    assert [r.json() for r in created] == [{"id": event.id, "note": "concurrent"}] * len(created)
    assert sum("Idempotent-Replayed" not in r for r in created) == 1
    assert [r.json() for r in in_use] == [
        expected_error(r, type="conflict", code="idempotency_key_in_use", message=IN_USE, param="Idempotency-Key")
        for r in in_use]
