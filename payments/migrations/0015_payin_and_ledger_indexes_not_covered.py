"""Indexes of the charge and ledger tables that others cover, gone: every charge and every ledger movement wrote an
entry in each of them (issue 17; the payout table's went in 0014).

- The foreign keys' own indexes, each the first column of a composite index of the same table: a charge's merchant
  (`payin_list` …), a ledger movement's merchant (`ledger_txn_object`), a ledger entry's account
  (`ledger_entry_statement`).
- The LIKE indexes (`varchar_pattern_ops`) Django adds beside a unique CharField on PostgreSQL, of a charge's
  `public_token` and `pix_txid`: both are looked up by equality only. The uniqueness stays, declared as
  constraints (which have no such companion).

The unique constraints are renamed and the indexes dropped: no table rewrite, no index built and no
foreign key checked again over every row, so the time taken does not grow with the tables. The DROP INDEXes take
each table's exclusive lock for a moment (they wait behind any long transaction on it): run it as every migration,
before the new release's processes start. Django's state changes as its own operations (`state_operations`) would
change it.
"""

import django.db.models.deletion
from django.db import migrations, models


# Django's names for them (a digest of the table and column names: the same on every installation).
DROPPED = {  # index: (table, its definition, to build it again on the way back)
    "payments_payin_merchant_id_5e44b93c": ("payments_payin", "(merchant_id)"),
    "payments_payin_public_token_1bda4e80_like": ("payments_payin", "(public_token varchar_pattern_ops)"),
    "payments_payin_pix_txid_8042ac19_like": ("payments_payin", "(pix_txid varchar_pattern_ops)"),
    "payments_ledgertransaction_merchant_id_0fe3b9b6": ("payments_ledgertransaction", "(merchant_id)"),
    "payments_ledgerentry_account_id_24ce03b9": ("payments_ledgerentry", "(account_id)"),
}
RENAMED = [  # unique constraints: Django's name, the declared one
    ("payments_payin_public_token_key", "payin_public_token_unique"),
    ("payments_payin_pix_txid_key", "payin_pix_txid_unique"),
]

FORWARD = [
    *(f"ALTER TABLE payments_payin RENAME CONSTRAINT {before} TO {after}" for before, after in RENAMED),
    *(f"DROP INDEX IF EXISTS {name}" for name in DROPPED),
]
BACKWARD = [
    *(f"CREATE INDEX IF NOT EXISTS {name} ON {table} {definition}" for name, (table, definition) in DROPPED.items()),
    *(f"ALTER TABLE payments_payin RENAME CONSTRAINT {after} TO {before}" for before, after in RENAMED),
]


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0008_totp_seed_encrypted"),
        ("payments", "0014_payout_indexes_not_covered"),
    ]

    operations = [
        migrations.RunSQL(
            state_operations=[
                migrations.AlterField(
                    model_name="ledgerentry",
                    name="account",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                            related_name="entries", to="payments.ledgeraccount"),
                ),
                migrations.AlterField(
                    model_name="ledgertransaction",
                    name="merchant",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                            related_name="ledger_transactions", to="accounts.merchant"),
                ),
                migrations.AlterField(
                    model_name="payin",
                    name="merchant",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                            related_name="payins", to="accounts.merchant"),
                ),
                migrations.AlterField(
                    model_name="payin",
                    name="pix_txid",
                    field=models.CharField(blank=True, max_length=35, null=True),
                ),
                migrations.AlterField(
                    model_name="payin",
                    name="public_token",
                    field=models.CharField(max_length=43),
                ),
                migrations.AddConstraint(
                    model_name="payin",
                    constraint=models.UniqueConstraint(fields=("public_token",), name="payin_public_token_unique"),
                ),
                migrations.AddConstraint(
                    model_name="payin",
                    constraint=models.UniqueConstraint(fields=("pix_txid",), name="payin_pix_txid_unique"),
                ),
            ],
            sql=FORWARD,
            reverse_sql=BACKWARD,
        ),
    ]
