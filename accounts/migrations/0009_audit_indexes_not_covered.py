"""The audit log's foreign-key indexes, each the first column of one of its composite indexes ((merchant,
created_at), (actor, created_at)), gone: every payout writes an entry here, and each entry wrote one in each of them
(issue 17; payments 0015 did the same for the charge and ledger tables).

The indexes are dropped by name (no table rewrite, no foreign key checked again); Django's state changes as its own
operations (`state_operations`) would change it."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


# Django's names for them (a digest of the table and column names: the same on every installation).
DROPPED = {"accounts_accountevent_merchant_id_f508b4b9": "(merchant_id)",
           "accounts_accountevent_actor_id_e029ef89": "(actor_id)"}


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_totp_seed_encrypted"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunSQL(
            state_operations=[
                migrations.AlterField(
                    model_name="accountevent",
                    name="merchant",
                    field=models.ForeignKey(blank=True, db_index=False, null=True,
                                            on_delete=django.db.models.deletion.CASCADE,
                                            related_name="account_events", to="accounts.merchant"),
                ),
                migrations.AlterField(
                    model_name="accountevent",
                    name="actor",
                    field=models.ForeignKey(blank=True, db_index=False,
                                            help_text="Empty for operator commands and API key pairs.", null=True,
                                            on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                            to=settings.AUTH_USER_MODEL),
                ),
            ],
            sql=[f"DROP INDEX IF EXISTS {name}" for name in DROPPED],
            reverse_sql=[f"CREATE INDEX IF NOT EXISTS {name} ON accounts_accountevent {columns}"
                         for name, columns in DROPPED.items()],
        ),
    ]
