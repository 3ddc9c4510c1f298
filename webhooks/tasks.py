from celery import shared_task

from webhooks import delivery, services


@shared_task
def delivery_attempt(*, delivery_id: str) -> None:
    delivery.delivery_attempt(delivery_id=delivery_id)


@shared_task
def deliveries_sweep() -> int:
    return delivery.deliveries_sweep()


@shared_task
def events_purge() -> int:
    return services.events_purge()
