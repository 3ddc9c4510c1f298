"""The payments app's models: charges, refunds, payouts and the ledger (`core`); money that matched no charge and
disputes, and live money naming no merchant (`exceptions`)."""

from payments.models.core import (
    AccountKind,
    BalanceAdjustment,
    CardToken,
    LedgerAccount,
    LedgerEntry,
    LedgerTransaction,
    LineType,
    Payin,
    PayinStatus,
    PaymentMethod,
    Payout,
    PayoutDailyTotal,
    PayoutStatus,
    PixKeyType,
    RailNotification,
    Refund,
    RefundStatus,
    SimulatorOperation,
)
from payments.models.exceptions import (
    Dispute,
    DisputeKind,
    DisputeRailAnswer,
    DisputeStatus,
    UnattributedPayment,
    UnattributedStatus,
    UnmatchedAction,
    UnmatchedKind,
    UnmatchedPayment,
    UnmatchedPolicy,
    UnmatchedStatus,
)

__all__ = [
    "AccountKind", "BalanceAdjustment", "CardToken", "Dispute", "DisputeKind", "DisputeRailAnswer", "DisputeStatus",
    "LedgerAccount", "LedgerEntry", "LedgerTransaction", "LineType", "Payin", "PayinStatus", "PaymentMethod", "Payout",
    "PayoutDailyTotal", "PayoutStatus", "PixKeyType", "RailNotification", "Refund", "RefundStatus",
    "SimulatorOperation", "UnattributedPayment", "UnattributedStatus", "UnmatchedAction", "UnmatchedKind",
    "UnmatchedPayment", "UnmatchedPolicy", "UnmatchedStatus",
]
