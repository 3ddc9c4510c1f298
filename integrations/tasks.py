from celery import shared_task

from integrations.idempotency import idempotency_keys_purge as purge


@shared_task
def idempotency_keys_purge() -> int:
    """Hourly: forget Idempotency-Keys older than 24 hours."""
    return purge()
