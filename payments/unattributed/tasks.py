"""Unattributed-payment jobs: sending staff's refund to the rail, and asking about the ones it has not answered."""

from celery import shared_task

from payments.unattributed import services


@shared_task
def unattributed_refund_send(*, unattributed_id: str) -> None:
    services.unattributed_refund_send(unattributed_id=unattributed_id)


@shared_task
def unattributed_refunds_reconcile(*, unattributed_ids: list[str]) -> int:
    return services.unattributed_refunds_reconcile(unattributed_ids=unattributed_ids)
