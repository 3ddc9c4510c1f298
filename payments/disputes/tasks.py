"""Dispute jobs: a case left OPEN past its deadline is LOST; the merchant's answer to a rail's case goes to the rail.
Idempotent and safe on several workers at once (each case moves by a conditional update on its locked row)."""

from celery import shared_task

from payments.disputes import services as disputes


@shared_task
def disputes_expire() -> int:
    return disputes.disputes_expire()


@shared_task
def dispute_answer_send(*, dispute_id: str) -> None:
    disputes.dispute_answer_send(dispute_id=dispute_id)
