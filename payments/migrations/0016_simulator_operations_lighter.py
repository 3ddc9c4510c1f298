"""The simulator rail's operations table (the sandbox's books; every sandbox payout, charge and refund writes a row and
updates it once when "the network" confirms it) lighter to write (issue 17):

- the LIKE index (`varchar_pattern_ops`) Django adds beside a CharField primary key, gone: operations are looked up
  by their key's equality only, which the primary key serves;
- the table's pages filled to 70% (`fillfactor`), so that the confirmation, which changes no indexed column, finds
  room on the row's own page and is a HOT update (no entry in any index): at the default 100% pages are full and
  nine confirmations in ten rewrote an entry in each index. Pages written from now on; existing ones as they are
  rewritten.

Nothing changes in Django's state (neither is declared by a model)."""

from django.db import migrations

LIKE_INDEX = "payments_simulatoroperation_key_342ac856_like"  # Django's name: a digest of the table and column


class Migration(migrations.Migration):
    dependencies = [("payments", "0015_payin_and_ledger_indexes_not_covered")]

    operations = [
        migrations.RunSQL(
            sql=[f"DROP INDEX IF EXISTS {LIKE_INDEX}",
                 "ALTER TABLE payments_simulatoroperation SET (fillfactor = 70)"],
            reverse_sql=["ALTER TABLE payments_simulatoroperation RESET (fillfactor)",
                         f"CREATE INDEX IF NOT EXISTS {LIKE_INDEX} ON payments_simulatoroperation "
                         "(key varchar_pattern_ops)"],
        ),
    ]
