"""The effect of an idempotent request and its stored response commit together (review finding)."""

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


urlpatterns = [path("test/effect-then-crash", EffectThenCrashApi.as_view()), *project_urlpatterns]


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
