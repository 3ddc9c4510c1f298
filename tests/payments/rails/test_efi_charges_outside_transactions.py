"""Issue 38: no call to Efí's Charges API runs inside a database transaction, whichever path makes it: a card paid
with its token or on the hosted page, a bolix registered, refunded, canceled, a notification read, reconciliation.
On PostgreSQL outside any test transaction, so `connection.in_atomic_block` is what production would see."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from payments.models import Payin
from payments.rails.efi import EfiRail
from tests.payments.payins.test_payin_api import ADDRESS_IN, payin_body
from tests.payments.rails.test_efi_cards import card_body

pytestmark = pytest.mark.django_db(transaction=True)

OPERATIONS = ("card_charge_open", "card_charge_pay", "charge_get", "charge_history", "charge_cancel", "card_refund",
              "installments", "boleto_register")


@pytest.fixture
def calls(monkeypatch) -> list[tuple[str, bool]]:
    log: list[tuple[str, bool]] = []
    for name in OPERATIONS:
        original = getattr(EfiRail, name)

        def watched(self, *, _original=original, _name=name, **kwargs):
            log.append((_name, connection.in_atomic_block))
            return _original(self, **kwargs)

        monkeypatch.setattr(EfiRail, name, watched)
    return log


def test_every_charges_api_call_is_made_with_no_transaction_open(charges, live, merchant, calls, settings):
    settings.CARD_SETTLEMENT_DAYS = 0
    paid = live.post("/payin", card_body(charges.card_token(outcome="paid")), format="json").json()
    charges.deliver_held()
    hosted = live.post("/payin", card_body(None), format="json").json()
    page = Client()
    page.get(f"/pay/{hosted['paymentUrl'].rsplit('/', 1)[1]}/installments?brand=visa")
    page.post(f"/pay/{hosted['paymentUrl'].rsplit('/', 1)[1]}/card", {
        "payment_token": charges.card_token(outcome="approved"), "installments": "2", **ADDRESS_IN,
        "neighborhood": "Bela Vista"})
    charges.deliver_held()
    live.post(f"/payin/{paid['id']}/refunds", {"amount": 1000}, format="json")
    charges.deliver_held()
    bolix = live.post("/payin", payin_body("BOLETO"), format="json").json()
    live.post(f"/payin/{bolix['id']}/cancel", {}, format="json")
    Payin.objects.update(created_at=Payin.objects.earliest("created_at").created_at - timedelta(minutes=5))
    call_command("rail_reconcile")

    assert Payin.objects.get(pk=hosted["id"]).status == "PROCESSING"
    assert Payin.objects.get(pk=bolix["id"]).status == "CANCELED"
    made = {name for name, _ in calls}
    assert made == set(OPERATIONS), made
    assert [call for call in calls if call[1]] == []
