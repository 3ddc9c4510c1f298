import json

from django.core.management.base import BaseCommand, CommandError, no_translations

from accounts.models import Merchant
from core.errors import DomainError
from integrations.services import apikey_create


class Command(BaseCommand):
    help = 'Create an API key pair and print {"publicKey", "secretKey", "mode"} as JSON (the secret only here).'

    def add_arguments(self, parser) -> None:
        parser.add_argument("--email", required=True, help="The merchant owner's login email.")
        parser.add_argument("--mode", choices=["test", "live"], default="test")
        parser.add_argument("--label", default="")

    @no_translations  # operators read English, whatever LANGUAGE_CODE the dashboard uses
    def handle(self, *args, email: str, mode: str, label: str, **options) -> None:
        merchant = Merchant.objects.filter(owner__email=email.lower()).first()
        if merchant is None:
            raise CommandError(f"No merchant whose login is {email}")
        try:
            api_key, secret_key = apikey_create(merchant=merchant, livemode=mode == "live", label=label)
        except DomainError as error:
            raise CommandError(error.message) from error
        self.stdout.write(json.dumps({"publicKey": api_key.public_key, "secretKey": secret_key, "mode": mode}))
