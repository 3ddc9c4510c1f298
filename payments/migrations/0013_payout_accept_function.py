"""The payout's acceptance in one statement (issue 17, goal 1): `payments_payout_accept` makes the decision of
`payments_payout_reserve` (migration 0010, unchanged) and raises when it refuses, so that
`payments.payouts.services` can write the payout, its event and the decision in a single statement of its own,
atomic without a transaction around it: a refusal aborts the whole statement, payout and event included."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION payments_payout_accept(
    p_merchant_id uuid, p_livemode boolean, p_day date, p_amount bigint, p_fee bigint, p_daily_max bigint,
    p_transaction_id uuid, p_object_id varchar, p_reference_id varchar, p_description varchar,
    p_created_at timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    decided record;
BEGIN
    SELECT * INTO decided FROM payments_payout_reserve(p_merchant_id, p_livemode, p_day, p_amount, p_fee,
        p_daily_max, p_transaction_id, p_object_id, p_reference_id, p_description, p_created_at);
    IF decided.outcome <> 'ok' THEN
        RAISE EXCEPTION USING MESSAGE = 'payments_payout_refused', DETAIL = decided.outcome,
                              HINT = decided.day_total::text;
    END IF;
    RETURN decided.day_total;
END;
$$;
"""

DROP = "DROP FUNCTION IF EXISTS payments_payout_accept(uuid, boolean, date, bigint, bigint, bigint, uuid, varchar, " \
       "varchar, varchar, timestamptz);"


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":  # SQLite keeps the plain path in Python
        schema_editor.execute(CREATE)


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("payments", "0012_dispute_rail_accept_and_pix_e2e_index")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
