"""The planner never filters events on their payload; its statistics are the larger half of every ANALYZE of the
events table, the largest table (docs/decisions/0051-write-path-tables-lean.md)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0004_issue14_event_types")]

    operations = [migrations.RunSQL("ALTER TABLE webhooks_event ALTER COLUMN payload SET STATISTICS 0",
                                    "ALTER TABLE webhooks_event ALTER COLUMN payload SET STATISTICS -1")]
