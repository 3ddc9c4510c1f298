"""Created the PL/pgSQL function `payments_payout_accept`, which raised when `payments_payout_reserve` (0010) refused
a payout. The payout's balance decision now has one implementation, in Python (`payments.payouts.services._reserve`),
and this migration does nothing: 0017 drops the function from the databases it was created in."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("payments", "0012_dispute_rail_accept_and_pix_e2e_index")]

    operations = []
