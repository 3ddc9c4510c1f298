from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the Celery tasks in every process (services queue them by name: core.tasks.task_enqueue), and
        # this app's section of the Integrations page (core.pages), and the webhook queue's scrape-time collector.
        from core import metrics, pages
        from webhooks import metrics as webhooks_metrics
        from webhooks import tasks, views  # noqa: F401

        pages.section_register(views.INTEGRATIONS_PAGE, template=views.INTEGRATIONS_SECTION,
                               context=views.integrations_section_context)
        metrics.collector_register(webhooks_metrics.webhooks_collect)
