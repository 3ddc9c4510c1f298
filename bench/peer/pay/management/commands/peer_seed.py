"""Approved merchants, each with a test key pair and a funded test balance; prints the pairs as JSON."""

import json

from django.core.management.base import BaseCommand

from pay.authentication import generate_pair, secret_digest
from pay.models import ApiKey, Balance, Merchant


class Command(BaseCommand):
    help = "Create the bench merchant (and --merchants more), with test key pairs and funded balances."

    def add_arguments(self, parser):
        parser.add_argument("--merchants", type=int, default=0, help="more merchants besides the bench one")
        parser.add_argument("--funding", type=int, default=9_000_000, help="available balance in cents")

    def handle(self, *args, merchants, funding, **options):
        pairs = [self.merchant(f"Bench {number}" if number else "Bench", funding) for number in range(merchants + 1)]
        public, secret = pairs[0]
        self.stdout.write(json.dumps({"publicKey": public, "secretKey": secret,
                                      "merchantPairs": " ".join(f"{p}:{s}" for p, s in pairs[1:])}))

    def merchant(self, name, funding):
        merchant = Merchant.objects.create(name=name, trading_name=name, city="Sao Paulo",
                                           kyc_status=Merchant.KycStatus.APPROVED)
        public, secret = generate_pair(livemode=False)
        ApiKey.objects.create(merchant=merchant, public_key=public, secret_digest=secret_digest(secret),
                              label="bench")
        Balance.objects.create(merchant=merchant, livemode=False, available=funding)
        return public, secret
