"""The tables every charge, payout, ledger movement and event writes keep no index that another covers: each new row
writes an entry in every index of its table (payments 0014, 0015 and 0016, webhooks 0006, accounts 0009)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from payments.models import Payin
from tests.payments.payouts.test_indexes import _indexes

pytestmark = pytest.mark.django_db

WRITE_PATH_TABLES = ["payments_payin", "payments_payout", "payments_ledgertransaction", "payments_ledgerentry",
                     "webhooks_event", "webhooks_delivery", "accounts_accountevent", "payments_simulatoroperation"]
DROPPED = {
    "payments_payin": {"payments_payin_merchant_id_5e44b93c", "payments_payin_public_token_1bda4e80_like",
                       "payments_payin_pix_txid_8042ac19_like"},
    "payments_ledgertransaction": {"payments_ledgertransaction_merchant_id_0fe3b9b6"},
    "payments_ledgerentry": {"payments_ledgerentry_account_id_24ce03b9"},
    "webhooks_event": {"webhooks_event_merchant_id_29c51e5b"},
    "webhooks_delivery": {"webhooks_delivery_merchant_id_c10b0779", "webhooks_delivery_event_id_b6f5af91"},
    "accounts_accountevent": {"accounts_accountevent_merchant_id_f508b4b9", "accounts_accountevent_actor_id_e029ef89"},
    "payments_simulatoroperation": {"payments_simulatoroperation_key_342ac856_like"},
}
RENAMED = {"payments_payin_public_token_key": "payin_public_token_unique",
           "payments_payin_pix_txid_key": "payin_pix_txid_unique"}
# Added by later migrations (payments 0019: partial indexes of the charges a rail numbers itself).
ADDED_LATER = {"payments_payin": {"payin_rail_charge_open", "payin_rail_charge_unique"}}


@pytest.mark.parametrize("table", WRITE_PATH_TABLES)
def test_no_plain_index_of_a_write_path_table_is_the_start_of_another(table):
    """A plain index whose columns begin another index of the table (a LIKE index beside the unique one of the same
    column among them) serves no query the other does not."""
    indexes = _indexes(table)
    covered = [(name, other) for name, (columns, unique, partial) in indexes.items() if not (unique or partial)
               for other, (longer, _, other_partial) in indexes.items()
               if other != name and not other_partial and longer[:len(columns)] == columns]
    assert covered == []


def test_a_charges_token_and_txid_stay_unique(merchant):
    first = Payin.objects.create(merchant=merchant, livemode=False, payment_method="PIX", amount=100, fee=0,
                                 reference_id="a", customer={}, items=[], payer_ip="203.0.113.9",
                                 is_physical_product=False, public_token="t" * 43, pix_txid="x" * 25)
    for taken in ({"public_token": first.public_token, "pix_txid": "y" * 25},
                  {"public_token": "u" * 43, "pix_txid": first.pix_txid}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Payin.objects.create(merchant=merchant, livemode=False, payment_method="PIX", amount=100, fee=0,
                                 reference_id="b", customer={}, items=[], payer_ip="203.0.113.9",
                                 is_physical_product=False, **taken)


@pytest.mark.django_db(transaction=True)
def test_the_migrations_drop_the_covered_indexes_and_bring_them_back_when_reversed():
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("payments", "0014_payout_indexes_not_covered"),
                          ("webhooks", "0005_event_payload_no_statistics"),
                          ("accounts", "0008_totp_seed_encrypted")])
        before = {table: _indexes(table) for table in DROPPED}
        assert _fillfactor("payments_simulatoroperation") is None
        for table, names in DROPPED.items():
            assert names <= set(before[table]), table
        assert set(RENAMED) <= set(before["payments_payin"])
    finally:
        executor = MigrationExecutor(connection)  # a new loader: the graph as migrated so far
        executor.migrate(executor.loader.graph.leaf_nodes())
    for table, names in DROPPED.items():
        renamed = RENAMED if table == "payments_payin" else {}
        assert set(_indexes(table)) == (set(before[table]) - names - set(renamed) | set(renamed.values())
                                        | ADDED_LATER.get(table, set())), table
    assert _fillfactor("payments_simulatoroperation") == "70"


def _fillfactor(table: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT option_value FROM pg_class, pg_options_to_table(reloptions) "
                       "WHERE oid = %s::regclass AND option_name = 'fillfactor'", [table])
        row = cursor.fetchone()
    return row and row[0]
