"""The payout's balance decision as one PostgreSQL function (issue 17, goal 1): `payments.payouts.services` calls it
once, right before COMMIT, so the merchant's ledger lock is held for one round trip. It does what the plain path of
`payout_create` does on SQLite, in the same order, and the same payout tests run against both.

A later change of the rule is a new migration with `CREATE OR REPLACE FUNCTION`."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION payments_payout_reserve(
    p_merchant_id uuid, p_livemode boolean, p_day date, p_amount bigint, p_fee bigint, p_daily_max bigint,
    p_transaction_id uuid, p_object_id varchar, p_reference_id varchar, p_description varchar,
    p_created_at timestamptz, OUT outcome text, OUT day_total bigint)
LANGUAGE plpgsql AS $$
DECLARE
    account record;
    available_id bigint;
    available bigint;
    in_flight_id bigint;
    in_flight bigint;
BEGIN
    -- Every account of the merchant and mode, in id order, as every movement locks them (no deadlock between them).
    FOR account IN SELECT id, kind, balance FROM payments_ledgeraccount
                   WHERE merchant_id = p_merchant_id AND livemode = p_livemode ORDER BY id FOR UPDATE LOOP
        IF account.kind = 'available' THEN
            available_id := account.id;
            available := account.balance;
        ELSIF account.kind = 'payouts_in_flight' THEN
            in_flight_id := account.id;
            in_flight := account.balance;
        END IF;
    END LOOP;
    -- The day's total with this payout, under the lock (a refusal rolls it back with the payout).
    INSERT INTO payments_payoutdailytotal (merchant_id, livemode, day, amount)
    VALUES (p_merchant_id, p_livemode, p_day, p_amount)
    ON CONFLICT (merchant_id, livemode, day) DO UPDATE SET amount = payments_payoutdailytotal.amount + excluded.amount
    RETURNING amount INTO day_total;
    IF day_total > p_daily_max THEN
        outcome := 'limit';
        RETURN;
    END IF;
    -- A merchant with no ledger accounts yet has no balance.
    IF available_id IS NULL OR in_flight_id IS NULL OR available < p_amount + p_fee THEN
        outcome := 'balance';
        RETURN;
    END IF;
    -- amount + fee from available to in flight: one movement, its legs in the plain path's order (a fee of 0 has
    -- no leg), the balances written with it.
    UPDATE payments_ledgeraccount
    SET balance = CASE id WHEN available_id THEN available - p_amount - p_fee ELSE in_flight + p_amount + p_fee END
    WHERE id IN (available_id, in_flight_id);
    INSERT INTO payments_ledgertransaction (id, merchant_id, livemode, object_type, object_id, reference_id,
                                            description, created_at)
    VALUES (p_transaction_id, p_merchant_id, p_livemode, 'payout', p_object_id, p_reference_id, p_description,
            p_created_at);
    INSERT INTO payments_ledgerentry (transaction_id, account_id, amount, line_type, balance_after, created_at)
    VALUES (p_transaction_id, available_id, -p_amount, 'payout', available - p_amount, p_created_at);
    IF p_fee <> 0 THEN
        INSERT INTO payments_ledgerentry (transaction_id, account_id, amount, line_type, balance_after, created_at)
        VALUES (p_transaction_id, available_id, -p_fee, 'payout_fee', available - p_amount - p_fee, p_created_at);
    END IF;
    INSERT INTO payments_ledgerentry (transaction_id, account_id, amount, line_type, balance_after, created_at)
    VALUES (p_transaction_id, in_flight_id, p_amount + p_fee, 'payout', in_flight + p_amount + p_fee, p_created_at);
    outcome := 'ok';
END;
$$;
"""

DROP = "DROP FUNCTION IF EXISTS payments_payout_reserve(uuid, boolean, date, bigint, bigint, bigint, uuid, varchar, " \
       "varchar, varchar, timestamptz);"


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":  # SQLite keeps the plain path in Python
        schema_editor.execute(CREATE)


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("payments", "0009_dispute_rail_answer")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
