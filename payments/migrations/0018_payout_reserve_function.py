"""The payout's balance decision as one PL/pgSQL function, `payments_payout_reserve`, its only implementation: the
text is payments/sql/payout_reserve.sql, loaded here as it is. (0010 and 0013 once created an earlier pair of such
functions beside a Python twin; 0017 drops those by their signatures, which differ from this one's.)

A later change to the .sql file is a new migration that loads the file again (`CREATE OR REPLACE`; a changed
signature also drops the old one) and records the file's SHA-256 as `PAYOUT_RESERVE_SHA256`:
tests/payments/payouts/test_payout_reserve.py compares the file with the newest migration's digest."""

from pathlib import Path

from django.db import migrations

SQL_FILE = Path(__file__).resolve().parent.parent / "sql" / "payout_reserve.sql"
PAYOUT_RESERVE_SHA256 = "86d6dc8a3f70ec61d8a93cc6fcbb3e57f2045a2210b071b91dab7e3f2a76dcaa"

DROP = ("DROP FUNCTION IF EXISTS payments_payout_reserve(uuid, boolean, date, bigint, bigint, bigint, uuid, text, "
        "text, text, timestamptz)")


class Migration(migrations.Migration):
    dependencies = [("payments", "0017_drop_payout_functions")]

    operations = [migrations.RunSQL([SQL_FILE.read_text()], reverse_sql=[DROP], elidable=False)]
