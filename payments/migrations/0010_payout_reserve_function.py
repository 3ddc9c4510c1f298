"""Created the PL/pgSQL function `payments_payout_reserve`, a second implementation of the payout's balance decision
beside the Python one. The decision now has one implementation, `payments.payouts.services._reserve`
(`select_for_update` in the payout's transaction), and this migration does nothing: 0017 drops the function from the
databases it was created in."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("payments", "0009_dispute_rail_answer")]

    operations = []
