"""Ask the rails what the notifications may have missed and apply it (Celery beat runs the same every minute)."""

from django.core.management.base import BaseCommand, no_translations

from payments.inbound.services import rail_reconcile


class Command(BaseCommand):
    help = ("Reconcile with the rails: unfinished card charges, refunds and payouts; with a real live rail, the Pix "
            "received in the last hours and the PENDING charges it registered.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--hours", type=float, default=None,
                            help="how far back to list received Pix (default RAIL_RECONCILE_HOURS)")

    @no_translations
    def handle(self, *args, **options) -> None:
        done = rail_reconcile(hours=options["hours"])
        self.stdout.write(" ".join(f"{name}={count}" for name, count in done.items()))
