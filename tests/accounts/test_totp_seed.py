"""The two-factor seed is a secret the service must read back: it is stored encrypted, never in clear, and opens only
under its own key and purpose (a webhook signing secret's key does not open it)."""

from __future__ import annotations

import pytest
from cryptography.exceptions import InvalidTag
from django.db import connection

from accounts.models import TotpDevice
from accounts.team_views import audit_changes
from tests.factories import UserFactory, totp_enrol
from webhooks import signing


@pytest.mark.django_db
def test_the_seed_is_stored_encrypted_and_reads_back(settings):
    device = totp_enrol(UserFactory())
    seed = device.secret

    with connection.cursor() as cursor:
        cursor.execute("SELECT secret_sealed FROM accounts_totpdevice WHERE id = %s", [device.pk])
        [stored] = cursor.fetchone()
    assert seed not in stored and len(seed) == 32
    assert TotpDevice.objects.get(pk=device.pk).secret == seed

    with pytest.raises(InvalidTag):  # another purpose's key and associated data: it does not open
        signing.secret_decrypt(stored)
    settings.TOTP_SECRET_ENCRYPTION_KEY = "another-key-entirely"
    with pytest.raises(InvalidTag):
        TotpDevice.objects.get(pk=device.pk).secret


def test_the_audit_log_shows_each_changed_field_as_old_to_new():
    assert audit_changes({"status": "HELD", "fee": 0}, {"status": "ACCEPTED", "fee": 0}) == ["status: HELD → ACCEPTED"]
    assert audit_changes(None, {"amount": 1000, "pix_key_type": "CPF"}) == ["amount: 1000", "pix_key_type: CPF"]
    assert audit_changes(None, None) == []
    assert audit_changes("viewer", "finance") == ["viewer → finance"]
