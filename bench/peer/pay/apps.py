from django.apps import AppConfig


class PayConfig(AppConfig):
    name = "pay"
    default_auto_field = "django.db.models.BigAutoField"
