"""The planner never filters events on their payload; its statistics are the larger half of every ANALYZE of the
events table, the largest table (README, Decision 115). PostgreSQL only: elsewhere there is no such setting."""

from django.db import migrations


def _statistics(target: int):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        meta = apps.get_model("webhooks", "Event")._meta
        quote = schema_editor.quote_name
        schema_editor.execute(f"ALTER TABLE {quote(meta.db_table)} ALTER COLUMN "
                              f"{quote(meta.get_field('payload').column)} SET STATISTICS {int(target)}")
    return run


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0004_issue14_event_types")]

    operations = [migrations.RunPython(_statistics(0), _statistics(-1), elidable=False)]
