"""Register our notification URL with the live rail for the platform's Pix key (PIX_KEY)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, no_translations
from django.urls import reverse

from payments import rails
from payments.rails.base import RailError


def notification_url() -> str:
    """The URL the rail is given. Efí appends `/pix` to it as a string: the trailing `?ignorar=` (Efí's own advice)
    makes that appendix a query value, so the path stays the one we route."""
    path = reverse("rails:efi-webhook", kwargs={"secret": settings.EFI_WEBHOOK_SECRET})
    return f"{settings.PUBLIC_BASE_URL}{path}?ignorar="


class Command(BaseCommand):
    help = "Register the notification URL (under PUBLIC_BASE_URL) for PIX_KEY with the live rail (PAYMENTS_RAIL)."

    @no_translations
    def handle(self, *args, **options) -> None:
        if settings.PAYMENTS_RAIL != "efi":
            raise CommandError(f"PAYMENTS_RAIL={settings.PAYMENTS_RAIL}: only a real rail (efi) takes a webhook")
        if not settings.PIX_KEY:
            raise CommandError("PIX_KEY must be set first: the Pix key of the Efí account the notifications are for")
        if len(settings.EFI_WEBHOOK_SECRET) < 16:
            raise CommandError("EFI_WEBHOOK_SECRET must be set (at least 16 URL-safe characters) first")
        url = notification_url()
        try:
            answer = rails.by_name("efi").webhook_register(url)
        except RailError as exc:
            raise CommandError(f"the rail refused the registration: {exc}") from exc
        shown = url.replace(settings.EFI_WEBHOOK_SECRET, "<EFI_WEBHOOK_SECRET>")
        self.stdout.write(f"registered {shown} for Pix key {answer.get('chave', settings.PIX_KEY)}")
