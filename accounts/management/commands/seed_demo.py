"""An approved demo merchant with a login and test keys. Safe to run again: nothing is duplicated."""

import json

from django.core.management.base import BaseCommand
from django.db import transaction

from accounts import services
from accounts.models import KycStatus, Merchant, User
from integrations import keys
from integrations.models import ApiKey
from integrations.services import apikey_create

DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo-password-2026"
DEMO_NAME = "Loja Demo"


class Command(BaseCommand):
    help = "Create (or find) the demo merchant and its test key pair, and print how to log in and call the API."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the credentials as one JSON object.")

    def handle(self, *args, **options) -> None:
        with transaction.atomic():
            merchant = Merchant.objects.filter(owner__email=DEMO_EMAIL).first()
            if merchant is None:
                merchant = services.merchant_signup(email=DEMO_EMAIL, password=DEMO_PASSWORD, name=DEMO_NAME)
            if merchant.kyc_status != KycStatus.APPROVED:
                services.kyc_approve(merchant=merchant, actor=None, operator=True)
            pair = keys.demo_pair()
            if not ApiKey.objects.filter(public_key=pair.public_key).exists():
                apikey_create(merchant=merchant, livemode=False, label="demo", pair=pair)
            if not User.objects.filter(email="admin@example.com").exists():
                User.objects.create_superuser(email="admin@example.com", password=DEMO_PASSWORD)
        credentials = {
            "email": DEMO_EMAIL, "password": DEMO_PASSWORD, "staffEmail": "admin@example.com",
            "publicKey": pair.public_key, "secretKey": pair.secret_key, "mode": "test",
        }
        if options["json"]:
            self.stdout.write(json.dumps(credentials))
            return
        self.stdout.write(
            f"Demo merchant: {DEMO_EMAIL} / {DEMO_PASSWORD}\n"
            f"Staff (admin): admin@example.com / {DEMO_PASSWORD}\n"
            f"Test public key: {pair.public_key}\n"
            f"Test secret key: {pair.secret_key}"
        )

