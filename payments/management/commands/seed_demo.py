"""An approved demo merchant with a login, test keys and test charges in each status, and a staff user. Safe to
run again: nothing is duplicated.

The passwords are derived from this installation's SECRET_KEY, so they are printed on every run, stored nowhere in
clear, and differ between installations. It refuses to run outside development (DEBUG off on a server database)
unless told --force: a staff user whose password any operator can print has no place in production.
"""

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, no_translations
from django.db import transaction

from accounts import services
from accounts.models import KycStatus, Merchant, User
from integrations import keys
from integrations.models import ApiKey
from integrations.services import apikey_create
from payments.demo import demo_activity

DEMO_EMAIL = "demo@example.com"
STAFF_EMAIL = "admin@example.com"
DEMO_NAME = "Loja Demo"


def demo_password(who: str) -> str:
    return "demo-" + keys.derived_base62(f"demo-password-{who}".encode(), 16)


def development_database() -> bool:
    return settings.DEBUG


class Command(BaseCommand):
    help = "Create (or find) the demo merchant and its test key pair, and print how to log in and call the API."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the credentials as one JSON object.")
        parser.add_argument("--force", action="store_true", help="Run even on a production-like setup.")

    @no_translations  # operators read English, whatever LANGUAGE_CODE the dashboard uses
    def handle(self, *args, **options) -> None:
        if not development_database() and not options["force"]:
            raise CommandError("seed_demo creates a demo merchant and a staff user whose passwords it prints: run it "
                               "on a development setup (DEBUG on), or pass --force.")
        password, staff_password = demo_password("merchant"), demo_password("staff")
        with transaction.atomic():
            merchant = Merchant.objects.filter(owner__email=DEMO_EMAIL).order_by("created_at").first()
            if merchant is None:
                merchant = services.merchant_signup(email=DEMO_EMAIL, password=password, name=DEMO_NAME)
            if merchant.kyc_status != KycStatus.APPROVED:
                services.kyc_approve(merchant=merchant, actor=None, operator=True)
            pair = keys.demo_pair()
            if not ApiKey.objects.filter(public_key=pair.public_key).exists():
                apikey_create(merchant=merchant, livemode=False, label="demo", pair=pair)
            if not User.objects.filter(email=STAFF_EMAIL).exists():
                User.objects.create_superuser(email=STAFF_EMAIL, password=staff_password)
            demo_activity(merchant)
        credentials = {
            "email": DEMO_EMAIL, "password": password, "staffEmail": STAFF_EMAIL, "staffPassword": staff_password,
            "publicKey": pair.public_key, "secretKey": pair.secret_key, "mode": "test",
        }
        if options["json"]:
            self.stdout.write(json.dumps(credentials))
            return
        self.stdout.write(
            f"Demo merchant: {DEMO_EMAIL} / {password}\n"
            f"Staff (admin): {STAFF_EMAIL} / {staff_password}\n"
            f"Test public key: {pair.public_key}\n"
            f"Test secret key: {pair.secret_key}"
        )

