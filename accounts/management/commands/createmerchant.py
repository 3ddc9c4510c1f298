from django.core.management.base import BaseCommand, CommandError, no_translations

from accounts import services
from accounts.models import User


class Command(BaseCommand):
    help = "Create a merchant and its login (and approve its KYC with --approve)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--email", required=True)
        parser.add_argument("--password", required=True)
        parser.add_argument("--name", default="")
        parser.add_argument("--approve", action="store_true", help="Mark the KYC approved, so live keys work.")

    @no_translations  # operators read English, whatever LANGUAGE_CODE the dashboard uses
    def handle(self, *args, email: str, password: str, name: str, approve: bool, **options) -> None:
        try:
            merchant = services.merchant_signup(email=email, password=password, name=name or email.split("@")[0])
        except services.EmailTaken as error:
            raise CommandError(f"{User.objects.normalize_email(email).lower()}: {error.message}") from error
        if approve:
            services.kyc_approve(merchant=merchant, actor=None, operator=True)
        self.stdout.write(f"Merchant {merchant.id} ({merchant.name}) created, KYC {merchant.kyc_status}.")
