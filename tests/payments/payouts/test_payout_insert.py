"""payments.payouts.payout_insert, the literal-SQL write of POST /payout, on PostgreSQL: its rows are the rows the ORM
writes from the same instances, it is one statement, and a referenceId already taken writes none of them."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import AccountEvent
from core.dates import sao_paulo_today
from payments.models import Payout
from payments.payouts.payout_insert import payout_insert
from tests.factories import UserFactory
from webhooks.models import Delivery, Event, WebhookEndpoint
from webhooks.services import event_build

# The statement is tested alone: its payouts skip the balance decision (payments.payouts.reserve), so no day's total
# counts them, which ledger_check would report.
pytestmark = pytest.mark.ledger_unchecked


def _payout(merchant, *, reference_id: str = "pedido-ç-1", webhook_url: str = "") -> Payout:
    now = timezone.now()
    return Payout(
        merchant=merchant, livemode=False, amount=12_345, fee=99, pix_key="+55 (11) 98765-4321",
        pix_key_normalized="+5511987654321", pix_key_type="PHONE", reference_id=reference_id,
        external_id=("E" + now.strftime("%Y%m%d%H%M%S%f"))[:32], beneficiary_name="Zé «Silva»",
        beneficiary_document="52998224725", description="Repasse de dezembro", metadata={"lote": 7, "tags": ["ü"]},
        webhook_url=webhook_url, local_date=sao_paulo_today(), created_at=now, updated_at=now)


def _audit(merchant, payout: Payout, *, actor=None) -> AccountEvent:
    return AccountEvent(merchant=merchant, actor=actor, actor_key="" if actor else "pk_test_abc",
                        action=AccountEvent.Action.PAYOUT_CREATED, obj_type="payout", obj_id=str(payout.pk),
                        after={"amount": payout.amount, "fee": payout.fee}, details={"via": "api"},
                        ip="2001:db8::1", user_agent="curl/8 «ü»")


def _built(merchant, *, webhook_url: str = "", actor=None, reference_id: str = "pedido-ç-1"):
    payout = _payout(merchant, webhook_url=webhook_url, reference_id=reference_id)
    event, deliveries = event_build(merchant=merchant, livemode=False, type="payout.created",
                                    obj={"id": str(payout.id), "status": "PENDING", "amount": payout.amount},
                                    webhook_url=webhook_url or None)
    return payout, _audit(merchant, payout, actor=actor), event, deliveries


def _rows(payout: Payout, event: Event) -> tuple[dict, list[dict], dict, list[dict]]:
    audits = [{k: v for k, v in row.items() if k != "id"}
              for row in AccountEvent.objects.filter(obj_id=str(payout.pk)).values()]
    deliveries = Delivery.objects.filter(event_id=event.id).order_by("url").values()
    return (Payout.objects.filter(pk=payout.pk).values().get(), audits,
            Event.objects.filter(pk=event.pk).values().get(), list(deliveries))


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["key", "person"])
def test_its_rows_are_the_rows_the_orm_writes(merchant, who):
    WebhookEndpoint.objects.create(merchant=merchant, livemode=False, url="https://hooks.example.com/a")
    actor = UserFactory() if who == "person" else None
    payout, audit, event, deliveries = _built(merchant, webhook_url="https://shop.example.com/hooks", actor=actor)
    assert len(deliveries) == 2

    with transaction.atomic():
        payout_insert(payout, audit=audit, event=event, deliveries=deliveries)
    written = _rows(payout, event)
    assert not payout._state.adding and not event._state.adding
    assert len(written[1]) == 1
    Delivery.objects.filter(event_id=event.id).delete()
    Event.objects.filter(pk=event.pk).delete()
    AccountEvent.objects.filter(obj_id=str(payout.pk)).delete()  # the queryset's delete: the model refuses its own
    Payout.objects.filter(pk=payout.pk).delete()
    with transaction.atomic():
        payout.save(force_insert=True)
        audit.save()  # the same instance: the statement left its id unset
        event.save(force_insert=True)
        Delivery.objects.bulk_create(deliveries)

    assert written == _rows(payout, event)


@pytest.mark.django_db
def test_without_an_audit_entry_or_a_delivery(merchant):
    payout, _, event, deliveries = _built(merchant)
    assert deliveries == []

    with transaction.atomic():
        payout_insert(payout, audit=None, event=event, deliveries=deliveries)

    assert Payout.objects.filter(pk=payout.pk).exists()
    assert Event.objects.get(pk=event.pk).object_id == str(payout.id)
    assert not AccountEvent.objects.filter(obj_id=str(payout.pk)).exists()
    assert not Delivery.objects.filter(event_id=event.id).exists()


@pytest.mark.django_db
def test_it_is_one_statement_in_the_callers_transaction(merchant):
    payout, audit, event, deliveries = _built(merchant, webhook_url="https://shop.example.com/hooks")

    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        payout_insert(payout, audit=audit, event=event, deliveries=deliveries)

    assert len(captured.captured_queries) == 1


@pytest.mark.django_db(transaction=True)
def test_it_refuses_to_run_outside_a_transaction(merchant):
    payout, audit, event, deliveries = _built(merchant)

    with pytest.raises(RuntimeError, match="payout's transaction"):
        payout_insert(payout, audit=audit, event=event, deliveries=deliveries)

    assert not Payout.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_reference_id_already_taken_writes_none_of_its_rows(merchant):
    first = _built(merchant, webhook_url="https://shop.example.com/hooks")
    with transaction.atomic():
        payout_insert(first[0], audit=first[1], event=first[2], deliveries=first[3])
    payout, audit, event, deliveries = _built(merchant, webhook_url="https://shop.example.com/hooks")

    with pytest.raises(IntegrityError, match="payout_reference_unique"), transaction.atomic():
        payout_insert(payout, audit=audit, event=event, deliveries=deliveries)

    assert not Payout.objects.filter(pk=payout.pk).exists()
    assert AccountEvent.objects.count() == 1
    assert not Event.objects.filter(pk=event.pk).exists()
    assert Delivery.objects.count() == 1
