import json

from django.core.management.base import BaseCommand, CommandError, no_translations

from accounts.models import Merchant
from core.errors import DomainError
from integrations.services import apikey_create


class Command(BaseCommand):
    help = 'Create an API key pair and print {"publicKey", "secretKey", "mode"} as JSON (the secret only here).'

    def add_arguments(self, parser) -> None:
        parser.add_argument("--email", required=True, help="The merchant owner's login email.")
        parser.add_argument("--merchant", default="",
                            help="The merchant's id, when the owner owns more than one merchant.")
        parser.add_argument("--mode", choices=["test", "live"], default="test")
        parser.add_argument("--label", default="")

    @no_translations  # operators read English, whatever LANGUAGE_CODE the dashboard uses
    def handle(self, *args, email: str, mode: str, label: str, merchant: str = "", **options) -> None:
        owned = list(Merchant.objects.filter(owner__email=email.lower()).order_by("created_at"))
        if merchant:
            owned = [m for m in owned if str(m.pk) == merchant.lower()]
        if not owned:
            raise CommandError(f"No merchant whose login is {email}" + (f" with the id {merchant}" if merchant else ""))
        if len(owned) > 1:  # a person may own several merchants: never guess which one gets a key
            listed = ", ".join(f"{m.pk} ({m.name})" for m in owned)
            raise CommandError(f"{email} owns {len(owned)} merchants: name one with --merchant ({listed})")
        [merchant_row] = owned
        try:
            api_key, secret_key = apikey_create(merchant=merchant_row, livemode=mode == "live", label=label)
        except DomainError as error:
            raise CommandError(error.message) from error
        self.stdout.write(json.dumps({"publicKey": api_key.public_key, "secretKey": secret_key, "mode": mode}))
