"""The effect of an idempotent request and its stored response commit together (review finding)."""

import threading
import time

import pytest
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import AccountEvent
from config.api import ApiView
from config.urls import urlpatterns as project_urlpatterns


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


class SlowEffectApi(ApiView):
    def post(self, request: Request) -> Response:
        event = AccountEvent.objects.create(merchant=request.auth.merchant, action="signed_up", reason="slow")
        time.sleep(1.5)
        return Response({"id": event.pk}, status=201)


urlpatterns = [
    path("test/effect-then-crash", EffectThenCrashApi.as_view()),
    path("test/effect-then-error", EffectThenErrorResponseApi.as_view()),
    path("test/slow", SlowEffectApi.as_view()),
    *project_urlpatterns,
]


@pytest.mark.django_db
def test_a_failure_after_the_effect_rolls_it_back_so_the_retry_acts_once(api, settings):
    settings.ROOT_URLCONF = __name__
    EffectThenCrashApi.calls = 0

    first = api.post("/test/effect-then-crash", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    retry = api.post("/test/effect-then-crash", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    replay = api.post("/test/effect-then-crash", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")

    assert first.status_code == 500
    assert retry.status_code == 201
    assert replay.status_code == 201 and replay["Idempotent-Replayed"] == "true"
    assert replay.json() == retry.json()
    assert AccountEvent.objects.filter(reason="effect").count() == 1


@pytest.mark.django_db
def test_an_error_returned_after_the_effect_rolls_it_back_and_frees_the_key(api, settings):
    settings.ROOT_URLCONF = __name__

    first = api.post("/test/effect-then-error", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    second = api.post("/test/effect-then-error", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-2")

    assert (first.status_code, second.status_code) == (409, 409)
    assert AccountEvent.objects.filter(reason="effect").count() == 0


@pytest.mark.postgres
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
