-- The payout's balance decision (SPEC §4: never overdraw, the daily limit), its only implementation.
--
-- Called once per payout by `payments.payouts.reserve.payout_reserve`, in the payout's transaction, as its last
-- statement before COMMIT: the merchant's ledger lock is held for this one statement and the COMMIT, not for a round
-- trip per row (docs/decisions: the payout decision in PL/pgSQL). Loaded by migration 0018_payout_reserve_function;
-- a change to this file is a new migration that loads it again (tests/payments/payouts/test_payout_reserve.py
-- fails until there is one).
--
-- It does, in this order:
-- 1. lock every ledger account of the merchant and mode, in id order, as every movement locks them
--    (`payments.lock_objects.ledger_accounts`), so no two transactions wait on each other in a cycle;
-- 2. add the amount to the day's total (PayoutDailyTotal, the row `_money_back` takes it off again);
-- 3. refuse past the daily limit ('limit', with the new total) or beyond the available balance, amount + fee
--    ('balance'); a refusal writes nothing the caller keeps: the caller raises, and its transaction rolls back;
-- 4. else move amount + fee from available to payouts in flight, writing the rows `ledger.post` writes for it:
--    one transaction, its entries in the legs' order with their running balances (a fee of 0 has no entry), the
--    new balances; and answer 'ok'.
-- Table and column names are the models' (payments.models), the literals AccountKind and LineType values: the tests
-- check both and run the function.
CREATE OR REPLACE FUNCTION payments_payout_reserve(
    p_merchant_id uuid, p_livemode boolean, p_day date, p_amount bigint, p_fee bigint, p_daily_max bigint,
    p_transaction_id uuid, p_object_id text, p_reference_id text, p_description text, p_created_at timestamptz,
    OUT outcome text, OUT day_total bigint)
LANGUAGE plpgsql AS $$
DECLARE
    account record;
    available_id bigint;
    available_balance bigint;
    in_flight_id bigint;
    in_flight_balance bigint;
BEGIN
    FOR account IN
        SELECT id, kind, balance FROM payments_ledgeraccount
        WHERE merchant_id = p_merchant_id AND livemode = p_livemode
        ORDER BY id FOR UPDATE
    LOOP
        IF account.kind = 'available' THEN
            available_id := account.id;
            available_balance := account.balance;
        ELSIF account.kind = 'payouts_in_flight' THEN
            in_flight_id := account.id;
            in_flight_balance := account.balance;
        END IF;
    END LOOP;

    INSERT INTO payments_payoutdailytotal (merchant_id, livemode, day, amount)
    VALUES (p_merchant_id, p_livemode, p_day, p_amount)
    ON CONFLICT (merchant_id, livemode, day)
    DO UPDATE SET amount = payments_payoutdailytotal.amount + excluded.amount
    RETURNING payments_payoutdailytotal.amount INTO day_total;
    IF day_total > p_daily_max THEN
        outcome := 'limit';
        RETURN;
    END IF;
    -- A merchant without ledger accounts has never been credited (`ledger.accounts_ensure` creates every kind at
    -- once): it has no balance.
    IF available_id IS NULL OR in_flight_id IS NULL OR available_balance < p_amount + p_fee THEN
        outcome := 'balance';
        RETURN;
    END IF;

    INSERT INTO payments_ledgertransaction (id, merchant_id, livemode, object_type, object_id, reference_id,
                                            description, created_at)
    VALUES (p_transaction_id, p_merchant_id, p_livemode, 'payout', p_object_id, p_reference_id, p_description,
            p_created_at);
    INSERT INTO payments_ledgerentry (transaction_id, account_id, amount, line_type, balance_after, created_at)
    VALUES (p_transaction_id, available_id, -p_amount, 'payout', available_balance - p_amount, p_created_at);
    IF p_fee <> 0 THEN
        INSERT INTO payments_ledgerentry (transaction_id, account_id, amount, line_type, balance_after, created_at)
        VALUES (p_transaction_id, available_id, -p_fee, 'payout_fee', available_balance - p_amount - p_fee,
                p_created_at);
    END IF;
    INSERT INTO payments_ledgerentry (transaction_id, account_id, amount, line_type, balance_after, created_at)
    VALUES (p_transaction_id, in_flight_id, p_amount + p_fee, 'payout', in_flight_balance + p_amount + p_fee,
            p_created_at);
    UPDATE payments_ledgeraccount
    SET balance = CASE id WHEN available_id THEN available_balance - p_amount - p_fee
                          ELSE in_flight_balance + p_amount + p_fee END
    WHERE id IN (available_id, in_flight_id);
    outcome := 'ok';
END;
$$;
