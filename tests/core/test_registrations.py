"""What the apps register with config's plumbing at start-up (config imports no app: the apps give it their parts)."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework.response import Response

from core import api, errors, pages
from integrations.idempotency import idempotent


def test_an_api_view_whose_post_is_not_idempotent_is_refused():
    with pytest.raises(ImproperlyConfigured, match="idempotent"):
        class Forgotten(api.ApiView):
            def post(self, request):
                return Response({})

    class Decorated(api.ApiView):
        @idempotent
        def post(self, request):
            return Response({})

    assert Decorated.post.idempotent


def test_the_apps_error_kinds_are_registered():
    assert set(errors._SINGLE_KIND_ERRORS) == {
        "unknown_field", "amount_too_small", "amount_too_large", "live_card_in_test_mode", "payout_limit_exceeded",
        "beneficiary_mismatch", "invalid_webhook_url", "items_total_mismatch", "invisible_characters_not_allowed"}
    assert errors.validation_error([{"param": "amount", "code": "amount_too_small", "message": "x"}]).code == (
        "amount_too_small")


def test_the_integrations_page_has_the_webhooks_section():
    assert [template for template, _ in pages._pages["integrations"].sections] == [
        "webhooks/_integrations_section.html"]
