from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    name = "integrations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registrations with the project's plumbing, which imports no app: the Integrations page (core.pages), and
        # the API-key cache's invalidation when something a cached merchant carries changes (accounts.signals).
        from accounts.signals import merchant_changed
        from core import pages
        from integrations import authcache, views

        pages.page_register(views.PAGE, template="integrations/integrations.html", context=views.page_context)
        merchant_changed.connect(authcache.merchant_changed_receiver, dispatch_uid="integrations.authcache")
