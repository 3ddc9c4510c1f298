"""Unmatched-payment jobs: sending a refund to the rail, and asking about the ones it has not answered."""

from celery import shared_task

from payments.unmatched import services


@shared_task
def unmatched_refund_send(*, unmatched_id: str) -> None:
    services.unmatched_refund_send(unmatched_id=unmatched_id)


@shared_task
def unmatched_refunds_reconcile(*, unmatched_ids: list[str]) -> int:
    return services.unmatched_refunds_reconcile(unmatched_ids=unmatched_ids)
