"""The reconciliation job (SPEC §8), run by Celery beat every minute: safe on several workers at once, since every
change it applies is a conditional transition or a notification recorded once."""

from celery import shared_task

from payments.inbound import services


@shared_task
def rail_reconcile() -> int:
    # Payouts have their own, more frequent job (payouts-reconcile).
    return sum(services.rail_reconcile(payouts_too=False).values())
