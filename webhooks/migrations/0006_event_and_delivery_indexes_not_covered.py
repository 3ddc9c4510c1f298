"""The foreign keys' own indexes of the events and deliveries tables, gone: each is the first column of a composite
index of its table (an event's merchant: `event_list`; a delivery's merchant: `delivery_list`; a delivery's event:
the unique `delivery_once_per_event_and_url`), and every event and delivery wrote an entry in each (issue 17; as
payments 0014 and 0015). The indexes are dropped by name (no foreign key checked again over every row); Django's
state changes as its own operations (`state_operations`) would change it.
"""

import django.db.models.deletion
from django.db import migrations, models


DROPPED = {  # Django's names (a digest of the table and column names: the same on every installation)
    "webhooks_event_merchant_id_29c51e5b": ("webhooks_event", "merchant_id"),
    "webhooks_delivery_merchant_id_c10b0779": ("webhooks_delivery", "merchant_id"),
    "webhooks_delivery_event_id_b6f5af91": ("webhooks_delivery", "event_id"),
}


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0008_totp_seed_encrypted"),
        ("webhooks", "0005_event_payload_no_statistics"),
    ]

    operations = [
        migrations.RunSQL(
            state_operations=[
                migrations.AlterField(
                    model_name="delivery",
                    name="event",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="deliveries", to="webhooks.event"),
                ),
                migrations.AlterField(
                    model_name="delivery",
                    name="merchant",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="+", to="accounts.merchant"),
                ),
                migrations.AlterField(
                    model_name="event",
                    name="merchant",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="events", to="accounts.merchant"),
                ),
            ],
            sql=[f"DROP INDEX IF EXISTS {name}" for name in DROPPED],
            reverse_sql=[f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({column})"
                         for name, (table, column) in DROPPED.items()],
        ),
    ]
