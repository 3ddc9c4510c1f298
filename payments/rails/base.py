"""The one interface every rail implements (SPEC §7). The rest of the code asks `rails.for_mode(livemode)` for a
rail and never knows which one it talks to.

Every call that moves money carries an idempotency key (the charge, refund or payout id): asking twice, after a
crash or a timeout, must find the first call instead of doing it again. A rail that did not answer in time raises
`RailTimeout`: the caller leaves the object PENDING/PROCESSING and the reconciliation job asks for its status later.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol


class RailError(Exception):
    """The rail refused to talk or broke: nothing is known to have happened."""


class RailTimeout(RailError):
    """The rail did not answer in time, or failed while answering (a 5xx): the operation may or may not have
    happened; ask its status later, under the same key."""


class RailRefused(RailError):
    """The rail answered and said no (a 4xx): nothing happened, and asking again the same way will not change it.
    `problem` is the rail's error body (RFC 7807 for the API Pix standard)."""

    def __init__(self, message: str, *, status: int = 400, problem: dict | None = None):
        super().__init__(message)
        self.status = status
        self.problem = problem or {}


class InvalidNotification(Exception):
    """A notification body the rail could not have sent (bad shape or signature)."""


class NotificationTooLarge(InvalidNotification):
    """A notification naming more payments than one request may confirm with the rail (`NOTIFICATION_MAX_ITEMS`)."""


# The most distinct payments one notification may name: each is read back from the rail, one call each, so a request
# costs the rail at most this many calls. Efí sends one Pix a notification, a few when several arrive at once.
NOTIFICATION_MAX_ITEMS = 100


@dataclass(frozen=True)
class CardData:
    """A card as the payer gave it. Lives in memory for the length of one request and goes nowhere but the rail;
    `repr` hides the number and CVV so a traceback or a log line can never carry them."""

    number: str
    cvv: str
    holder_name: str
    expiration_month: str
    expiration_year: str

    def __repr__(self) -> str:
        return f"CardData(last4={self.number[-4:]!r})"


@dataclass(frozen=True)
class CardResult:
    status: str  # PAID, FAILED or PENDING (the rail holds it; ask again later)
    failure_code: str = ""
    authorization_code: str = ""
    rail_token: str = ""
    failure_message: str = ""  # the rail's own words for a refusal, when it gives them
    retryable: bool = False  # the rail says the same card may be tried again (a refusal only)
    installments: int = 0
    installment_value: int = 0
    card_mask: str = ""


@dataclass(frozen=True)
class ChargeState:
    """A charge as a Charges API holds it (Efí's cards and bolix), in our words: `status` is PENDING, PROCESSING
    (issuer approved, the rail's analysis pending: not paid), PAID, FAILED, REFUNDED, CONTESTED (a chargeback is
    open), CANCELED, EXPIRED, SETTLED (marked paid by hand at the rail: no money through it) or UNKNOWN."""

    charge_ref: str
    status: str
    rail_status: str
    total: int
    method: str = ""
    card: CardResult | None = None


@dataclass(frozen=True)
class ChargeEvent:
    """One entry of a charge's notification history (Efí's `GET /notification/:token`), in our words. `entry_id` is
    the rail's id of the entry: each is applied once. `value` is the money of a payment (with fine and interest)."""

    entry_id: int
    kind: str
    charge_ref: str
    custom_id: str
    status: str
    rail_status: str
    previous: str
    value: int | None = None
    received_on: str = ""


@dataclass(frozen=True)
class BoletoRegistration:
    """A boleto the rail registered and numbered itself, payable by barcode or by Pix (bolix)."""

    charge_ref: str
    digitable_line: str
    barcode: str
    pix_qrcode: str = ""
    pdf_url: str = ""
    link: str = ""
    status: str = "PENDING"


@dataclass(frozen=True)
class OperationStatus:
    status: str  # PENDING, SUCCEEDED, FAILED, RETURNED or NOT_FOUND (refunds, payouts)
    failure_code: str = ""
    end_to_end_id: str = ""  # the network's id of the Pix, when the rail assigns it (a real rail's payouts)


@dataclass(frozen=True)
class Notification:
    """What a rail told us, in our words. `kind` is one of: payin.paid, payin.chargeback, refund.succeeded,
    refund.failed, payout.succeeded, payout.failed. `txid`, `nosso_numero` or `key` (our id) names the object;
    `end_to_end_id` is the network's id of the Pix that moved the money (a real rail's)."""

    dedupe_key: str
    kind: str
    amount: int | None = None
    key: str = ""
    txid: str = ""
    nosso_numero: int | None = None
    failure_code: str = ""
    end_to_end_id: str = ""
    payer_name: str = ""
    payer_document: str = ""
    merchant_id: str = ""  # the sandbox's plays only: whose test-mode money a Pix naming no charge is


@dataclass(frozen=True)
class RailDispute:
    """A dispute case as the rail holds it (a Pix MED infraction), in our words. `status`: OPEN (waiting for the
    receiver's answer), UNDER_REVIEW (answered, the network decides), WON (rejected or dropped: the money stays) or
    LOST (accepted: the money goes back to the payer). `answer`: the text of the answer the rail holds ("" for none)."""

    reference: str
    end_to_end_id: str
    amount: int
    status: str
    reason: str = ""
    due_by: datetime | None = None
    answer: str = ""


class Rail(Protocol):
    name: str
    # The methods it can charge; any other is refused with 400 payment_method_unavailable before anything is written.
    payment_methods: frozenset[str]
    # True when the rail registers each Pix charge and hands back its own dynamic BR Code (txid of 26-35 letters and
    # digits, expiry and single payment enforced by the payer's bank); False for the simulator's static codes.
    dynamic_pix: bool
    # The receiving key in the static BR Codes we build when `dynamic_pix` is False; "" for a rail that makes its own.
    static_pix_key: str
    # How many payouts one worker task sends (payments.payouts.sending.payouts_dispatch): the task's state changes
    # are written once for all of them; the sends are one call after another, each waiting for the network's
    # answer, unless the rail takes them together.
    payout_batch: int
    # True when the rail takes a batch's payouts in one call (`payouts_send`, `payouts_status`: the simulator, whose
    # books are one table); otherwise the worker calls `payout_send` and `payout_status` for each.
    payouts_together: bool
    # True when live cards reach the rail only as its browser token (a raw card number is refused with 400
    # raw_card_data_not_allowed), through a charge the rail numbers (`card_charge_open`, then `card_charge_pay`).
    card_tokens_only: bool
    # True when the rail registers and numbers boletos itself (`boleto_register` answers a `BoletoRegistration`) and
    # tells their payments through its charges' notification histories (`charge_history`).
    boleto_registered: bool

    def pix_charge_create(self, *, key: str, livemode: bool, txid: str, amount: int, expires_at: datetime,
                          payer_document: str, payer_name: str, description: str) -> str | None:
        """Register a Pix charge; the rail's BR Code (copia e cola), or None when the caller builds a static one."""
        ...

    def pix_charge_cancel(self, *, key: str, txid: str) -> None:
        """Make a registered charge unpayable. `RailRefused` when it can no longer be removed (it was paid)."""
        ...

    def pix_charge_payments(self, *, txid: str) -> list[Notification]:
        """The payments the rail holds for a charge, confirmed (reconciliation of PENDING charges)."""
        ...

    def boleto_register(self, *, key: str, livemode: bool, nosso_numero: int | None, amount: int, due_date: date,
                        **details) -> BoletoRegistration | None:
        """Register a boleto. None: the caller's own barcode (numbered by `nosso_numero`) is the boleto. A rail that
        numbers boletos itself (`boleto_registered`) answers their line, barcode and Pix code; `details` are what it
        needs (customer, items, description, instructions, fine and interest, notification URL)."""
        ...

    def card_authorize(self, *, key: str, livemode: bool, amount: int, installments: int, card: CardData | None,
                       rail_token: str | None) -> CardResult: ...

    def card_status(self, *, key: str) -> CardResult: ...

    # --- Only when `card_tokens_only` / `boleto_registered`: charges the rail numbers (Efí's Charges API) ------------
    def card_charge_open(self, *, key: str, amount: int, items: list[dict], description: str,
                         notification_url: str) -> str:
        """A charge at the rail, not yet payable; the rail's id of it (stored before anything is paid)."""
        ...

    def card_charge_pay(self, *, charge_ref: str, payment_token: str, installments: int, customer: dict,
                        billing_address: dict) -> CardResult:
        """Pay the charge with the browser's token: never called twice for one charge (the caller's PROCESSING
        status says it was called)."""
        ...

    def charge_get(self, *, charge_ref: str) -> ChargeState | None: ...

    def charge_history(self, *, token: str) -> list[ChargeEvent]:
        """Every entry of a notification token's history, oldest first ([] for a token the rail does not know)."""
        ...

    def charge_cancel(self, *, charge_ref: str) -> None: ...

    def card_refund(self, *, charge_ref: str, amount: int) -> None: ...

    def installments(self, *, brand: str, amount: int) -> list[dict]: ...

    def refund_create(self, *, key: str, livemode: bool, payin_key: str, payment_method: str, amount: int,
                      end_to_end_id: str = "") -> OperationStatus:
        """`end_to_end_id`: the Pix being given back (a Pix refund is a devolução of that Pix)."""
        ...

    def refund_status(self, *, key: str, end_to_end_id: str = "") -> OperationStatus: ...

    def payout_send(self, *, key: str, livemode: bool, amount: int, pix_key: str, pix_key_type: str,
                    end_to_end_id: str, beneficiary_document: str = "") -> OperationStatus: ...

    def payout_status(self, *, key: str) -> OperationStatus:
        """NOT_FOUND when the rail never received the payout (safe to send it, under the same key)."""
        ...

    def payouts_send(self, *, orders: list[dict]) -> list[OperationStatus]:
        """Only when `payouts_together`: `payout_send` for each order (its keyword arguments), all in one call, each
        under its own key; the answers in the orders' order. An error is the whole call's: none of them is known."""
        ...

    def payouts_status(self, *, keys: list[str]) -> list[OperationStatus]:
        """Only when `payouts_together`: `payout_status` of each key, in one call, in the keys' order."""
        ...

    def notification_parse(self, body: bytes) -> Notification:
        """A stored notification row's body, read back."""
        ...

    def notifications_confirm(self, body: bytes) -> list[Notification]:
        """An incoming notification, each of its items confirmed with the rail before anything is believed: what
        does not confirm is logged and left out. `InvalidNotification` for a body the rail could not have sent."""
        ...

    def payments_received(self, *, start: datetime, end: datetime) -> list[Notification]:
        """Every Pix the rail received in [start, end], with its devoluções, as notifications (reconciliation)."""
        ...

    def disputes_list(self, *, start: datetime, end: datetime) -> list[RailDispute]:
        """The dispute cases the rail opened in [start, end] against money we received, each as it stands now."""
        ...

    def dispute_answer(self, *, reference: str, accept: bool, text: str) -> None:
        """The merchant's answer to a case: accept it (the money goes back) or contest it with `text`. A case that
        was already answered is `RailRefused`: ask `disputes_list` where it stands."""
        ...
