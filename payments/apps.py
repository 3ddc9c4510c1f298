from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "payments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the Celery tasks in every process: services queue them by name (core.tasks.task_enqueue); and
        # the kinds of field problems of a charge request (core.errors.validation_error reports them by code); and
        # the scrape-time collector of charges and payouts by status (core.metrics).
        from core import metrics
        from payments import checks  # noqa: F401  (the deployment check of live mode on the simulator)
        from payments import metrics as payments_metrics
        from payments.disputes import tasks as dispute_tasks  # noqa: F401
        from payments.inbound import tasks as inbound_tasks  # noqa: F401
        from payments.payins import errors as payin_errors  # noqa: F401
        from payments.payins import tasks as payin_tasks  # noqa: F401
        from payments.payouts import tasks as payout_tasks  # noqa: F401
        from payments.unattributed import tasks as unattributed_tasks  # noqa: F401
        from payments.unmatched import tasks as unmatched_tasks  # noqa: F401

        metrics.collector_register(payments_metrics.payments_collect)
