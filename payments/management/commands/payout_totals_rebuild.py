"""Recompute the payout daily totals (`PayoutDailyTotal`) from the payouts themselves.

Run it once after upgrading to the release that introduced the totals, when no process of the previous release is
left: payouts those processes accepted while the new one migrated never reached a total (and one failing later would
take its amount off a total that never had it). Each merchant and mode is recomputed under its ledger lock, the lock
every payout decision takes, so it is safe while payouts are being made.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, no_translations
from django.db import transaction

from accounts.models import Merchant
from core.dates import sao_paulo_today
from payments.ledger import services as ledger
from payments.models import Payout, PayoutDailyTotal
from payments.payouts.selectors import payout_day_totals


class Command(BaseCommand):
    help = "Recompute the payout daily totals the daily limit is checked against from the payouts themselves."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--days", type=int, default=7,
                            help="São Paulo days back from today to recompute (default 7); 0 for every day")

    @no_translations  # operators read English, whatever LANGUAGE_CODE the dashboard uses
    def handle(self, *args, days: int, **options) -> None:
        payouts = Payout.objects.all()
        if days:
            payouts = payouts.filter(local_date__gte=sao_paulo_today() - timedelta(days=days))
        scopes = sorted(set(payouts.values_list("merchant_id", "livemode")), key=str)
        changed = 0
        for merchant_id, livemode in scopes:
            with transaction.atomic():
                ledger.lock(merchant=Merchant.objects.get(pk=merchant_id), livemode=livemode)
                mine = payouts.filter(merchant_id=merchant_id, livemode=livemode)
                sums = payout_day_totals(mine)
                for day in set(mine.values_list("local_date", flat=True)):
                    amount = sums.get((merchant_id, livemode, day), 0)
                    total, created = PayoutDailyTotal.objects.get_or_create(
                        merchant_id=merchant_id, livemode=livemode, day=day, defaults={"amount": amount})
                    if created:
                        changed += 1
                    elif total.amount != amount:
                        self.stdout.write(f"{merchant_id} {'live' if livemode else 'test'} {day}: "
                                          f"{total.amount} -> {amount}")
                        total.amount = amount
                        total.save(update_fields=["amount"])
                        changed += 1
        self.stdout.write(f"payout daily totals: {len(scopes)} merchant-modes checked, {changed} day(s) corrected")
