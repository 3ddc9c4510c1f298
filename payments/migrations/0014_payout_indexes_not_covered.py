"""Two indexes of the payout table that others cover, gone: each status change of a payout rewrote an entry in
every index of the table (status is indexed, so none is a HOT update).

- `merchant` (the foreign key's own index): `payout_list` starts with the same column.
- `external_id`'s LIKE index (`varchar_pattern_ops`, which Django adds beside a unique CharField on PostgreSQL):
  nothing searches end-to-end ids by prefix. The uniqueness stays, declared as a constraint (which has no such
  companion).

The unique constraint is renamed and the two indexes dropped: no table rewrite, no index built and no
foreign key checked again over every payout (Django's own operations would drop and re-add the foreign key, and
build a new unique index), so the time taken does not grow with the table. The DROP INDEXes still take the table's
exclusive lock for a moment (they wait behind any long transaction on it): run it as every migration, before the
new release's processes start. Django's state changes as its own operations (`state_operations`) would change it.
"""

from django.db import migrations, models


TABLE = "payments_payout"
# Django's names for them (a digest of the table and column names: the same on every installation).
MERCHANT_INDEX = "payments_payout_merchant_id_4845be23"
LIKE_INDEX = "payments_payout_external_id_425e3b5f_like"
UNIQUE_BEFORE, UNIQUE_AFTER = "payments_payout_external_id_key", "payout_external_id_unique"

FORWARD = [
    f"ALTER TABLE {TABLE} RENAME CONSTRAINT {UNIQUE_BEFORE} TO {UNIQUE_AFTER}",
    f"DROP INDEX IF EXISTS {LIKE_INDEX}",
    f"DROP INDEX IF EXISTS {MERCHANT_INDEX}",
]
BACKWARD = [
    f"CREATE INDEX IF NOT EXISTS {MERCHANT_INDEX} ON {TABLE} (merchant_id)",
    f"CREATE INDEX IF NOT EXISTS {LIKE_INDEX} ON {TABLE} (external_id varchar_pattern_ops)",
    f"ALTER TABLE {TABLE} RENAME CONSTRAINT {UNIQUE_AFTER} TO {UNIQUE_BEFORE}",
]


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0008_totp_seed_encrypted"),
        ("payments", "0013_payout_accept_function"),
    ]

    operations = [
        migrations.RunSQL(
            state_operations=[
                migrations.AlterField(
                    model_name="payout",
                    name="external_id",
                    field=models.CharField(max_length=32),
                ),
                migrations.AlterField(
                    model_name="payout",
                    name="merchant",
                    field=models.ForeignKey(db_index=False, on_delete=models.deletion.PROTECT,
                                            related_name="payouts", to="accounts.merchant"),
                ),
                migrations.AddConstraint(
                    model_name="payout",
                    constraint=models.UniqueConstraint(fields=("external_id",), name=UNIQUE_AFTER),
                ),
            ],
            sql=FORWARD,
            reverse_sql=BACKWARD,
        ),
    ]
