"""What the apps register with config's plumbing at start-up (config imports no app: the apps give it their parts)."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework.response import Response

from core import api, errors, pages


def test_every_post_of_an_api_view_is_wrapped_with_idempotency_key():
    class Later(api.ApiView):
        def post(self, request):
            return Response({})

    assert getattr(Later.post, "idempotent", False)


def test_the_post_wrapper_cannot_be_replaced():
    with pytest.raises(ImproperlyConfigured):
        api.post_wrapper_register(lambda handler: handler)


def test_the_apps_error_kinds_are_registered():
    assert set(errors._SINGLE_KIND_ERRORS) == {
        "unknown_field", "amount_too_small", "amount_too_large", "live_card_in_test_mode", "payout_limit_exceeded",
        "beneficiary_mismatch", "invalid_webhook_url"}
    assert errors.validation_error([{"param": "amount", "code": "amount_too_small", "message": "x"}]).code == (
        "amount_too_small")


def test_the_integrations_page_has_the_webhooks_section():
    assert [template for template, _ in pages._pages["integrations"].sections] == [
        "webhooks/_integrations_section.html"]
