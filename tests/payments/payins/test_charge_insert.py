"""payments.payins.charge_insert, the one literal-SQL write of POST /payin, on PostgreSQL: its rows are the rows the
ORM writes from the same instances, it writes all of them or none, and it is one statement."""

from __future__ import annotations

import secrets
import uuid
from datetime import date, timedelta

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from payments.models import Payin
from payments.payins.charge_insert import charge_insert
from webhooks.models import Delivery, Event, WebhookEndpoint
from webhooks.services import event_build


def _charge(merchant, *, method: str, webhook_url: str = "") -> Payin:
    now = timezone.now()
    payin = Payin(
        merchant=merchant, livemode=False, payment_method=method, amount=12_345, fee=99,
        reference_id="order-ç-1", description="Caneca «azul»", metadata={"orderId": 7, "tags": ["a", "ü"]},
        customer={"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com", "phone": None,
                  "address": {"city": "São Paulo", "state": "SP"}},
        items=[{"title": "Caneca", "quantity": 2, "unitPrice": 2500}], payer_ip="2001:db8::1",
        is_physical_product=True, webhook_url=webhook_url, public_token=secrets.token_urlsafe(32),
        created_at=now, updated_at=now)
    if method == "PIX":
        payin.pix_txid = secrets.token_hex(12)[:25]
        payin.pix_payload = "00020126" + "0" * 120 + "6304ABCD"
        payin.pix_expires_at = now + timedelta(hours=1)
    else:
        payin.boleto_nosso_numero = 10_000_000 + secrets.randbelow(10_000_000)
        payin.boleto_barcode = "2" * 44
        payin.boleto_digitable_line = "3" * 47
        payin.boleto_due_date = date(2030, 1, 31)
        payin.boleto_instructions = "Não receber após o vencimento"
    return payin


def _built(merchant, *, method: str, webhook_url: str = ""):
    payin = _charge(merchant, method=method, webhook_url=webhook_url)
    event, deliveries = event_build(merchant=merchant, livemode=False, type="payin.created",
                                    obj={"id": str(payin.id), "status": "PENDING", "amount": payin.amount},
                                    webhook_url=webhook_url or None)
    return payin, event, deliveries


def _rows(payin: Payin, event: Event) -> tuple[dict, dict, list[dict]]:
    deliveries = Delivery.objects.filter(event_id=event.id).order_by("url").values()
    return (Payin.objects.filter(pk=payin.pk).values().get(), Event.objects.filter(pk=event.pk).values().get(),
            list(deliveries))


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "webhook_url"), [("PIX", "https://shop.example.com/hooks"), ("BOLETO", "")])
def test_its_rows_are_the_rows_the_orm_writes(merchant, method, webhook_url):
    WebhookEndpoint.objects.create(merchant=merchant, livemode=False, url="https://hooks.example.com/a")
    payin, event, deliveries = _built(merchant, method=method, webhook_url=webhook_url)
    assert len(deliveries) == (2 if webhook_url else 1)

    charge_insert(payin, event=event, deliveries=deliveries)
    written = _rows(payin, event)
    assert not payin._state.adding and not event._state.adding
    Delivery.objects.filter(event_id=event.id).delete()
    Event.objects.filter(pk=event.pk).delete()
    Payin.objects.filter(pk=payin.pk).delete()
    payin.save(force_insert=True)
    event.save(force_insert=True)
    Delivery.objects.bulk_create(deliveries)

    assert written == _rows(payin, event)
    assert len(written[2]) == len(deliveries)


@pytest.mark.django_db
def test_a_charge_with_no_delivery(merchant):
    payin, event, deliveries = _built(merchant, method="PIX")
    assert deliveries == []

    charge_insert(payin, event=event, deliveries=deliveries)

    assert Payin.objects.filter(pk=payin.pk).exists()
    assert Event.objects.get(pk=event.pk).object_id == str(payin.id)
    assert not Delivery.objects.filter(event_id=event.id).exists()


@pytest.mark.django_db
def test_it_is_one_statement(merchant):
    payin, event, deliveries = _built(merchant, method="PIX", webhook_url="https://shop.example.com/hooks")

    with CaptureQueriesContext(connection) as captured:
        charge_insert(payin, event=event, deliveries=deliveries)

    assert len(captured.captured_queries) == 1


@pytest.mark.django_db(transaction=True)
def test_it_writes_all_of_its_rows_or_none(merchant):
    """Outside any transaction (autocommit), a delivery refused by the database takes the charge and the event with
    it: the statement is atomic on its own."""
    payin, event, deliveries = _built(merchant, method="PIX", webhook_url="https://shop.example.com/hooks")
    deliveries[0].merchant_id = uuid.UUID(int=1)  # no such merchant: its foreign key fails when the statement ends

    assert not connection.in_atomic_block
    with pytest.raises(IntegrityError):
        charge_insert(payin, event=event, deliveries=deliveries)

    assert not Payin.objects.filter(pk=payin.pk).exists()
    assert not Event.objects.filter(pk=event.pk).exists()
    assert not Delivery.objects.exists()
