"""The payout's balance decision has one implementation, in Python (`payments.payouts.services._reserve`): the two
PL/pgSQL functions migrations 0010 and 0013 created are dropped where they exist (0010 and 0013 no longer create
them, so a new database never has them). Reversing this migration does not bring them back: nothing calls them."""

from django.db import migrations

# Their exact signatures, as 0010 and 0013 created them.
DROP = [
    "DROP FUNCTION IF EXISTS payments_payout_accept(uuid, boolean, date, bigint, bigint, bigint, uuid, varchar, "
    "varchar, varchar, timestamptz)",
    "DROP FUNCTION IF EXISTS payments_payout_reserve(uuid, boolean, date, bigint, bigint, bigint, uuid, varchar, "
    "varchar, varchar, timestamptz)",
]


class Migration(migrations.Migration):
    dependencies = [("payments", "0016_simulator_operations_lighter")]

    operations = [migrations.RunSQL(DROP, reverse_sql=migrations.RunSQL.noop, elidable=True)]
