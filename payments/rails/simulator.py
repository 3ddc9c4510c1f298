"""The simulator rail: the default, and the only rail of test mode (SPEC §7). It keeps its own books in
`SimulatorOperation` (what "the network" saw), answers at once, and follows the test cards of SPEC §3.7. Like any
rail it is stateless towards our own models and tasks: what it answers, the services record and schedule.

Sandbox actions (`simulate_*`) play the part of the outside world: a payer paying, a bank charging back. They
return the notification body a real rail would POST to us, which goes through the same `notifications.receive`
path as a real one: stored raw, then processed idempotently.
"""

from __future__ import annotations

import json
import time
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.codes import random_code
from payments.formats.cards import PAID, TEST_CARDS
from payments.models import SimulatorOperation
from payments.rails.base import (
    CardData,
    CardResult,
    InvalidNotification,
    Notification,
    OperationStatus,
    RailDispute,
)

# The example key of the Central Bank's "Manual de Padrões para Iniciação do Pix": a test-mode code carries it, never
# the platform's PIX_KEY, so a real bank app that scans a test QR code cannot send real money anywhere.
SANDBOX_PIX_KEY = "123e4567-e12b-12d1-a456-426655440000"


class SimulatorRail:
    name = "simulator"
    payment_methods = frozenset({"PIX", "BOLETO", "CREDIT_CARD"})
    dynamic_pix = False  # static BR Codes built by us; the simulator matches payments by txid
    static_pix_key = SANDBOX_PIX_KEY
    payout_batch = 50  # it answers at once
    payouts_together = True  # its books are one table: a batch's sends are one statement, its statuses one or two
    card_tokens_only = False  # test cards are sent as numbers (SPEC §3.7)
    boleto_registered = False  # the caller numbers and draws the boleto

    # --- Pay-in ------------------------------------------------------------------------------------------------------
    def pix_charge_create(self, *, key: str, livemode: bool, txid: str, amount: int, expires_at: datetime,
                          payer_document: str = "", payer_name: str = "", description: str = "") -> None:
        """Nothing to register: the caller builds the static code, and the simulator matches payments by txid."""

    def pix_charge_cancel(self, *, key: str, txid: str) -> None:
        """Nothing registered, nothing to remove: the canceled charge refuses a simulated payment by its status."""

    def pix_charge_payments(self, *, txid: str) -> list[Notification]:
        """The simulator's payments reach us at once, through `simulate_payment`: nothing is ever left to find."""
        return []

    def boleto_register(self, *, key: str, livemode: bool, nosso_numero: int | None, amount: int, due_date: date,
                        **details) -> None:
        """Likewise: a simulated boleto is paid through `simulate_payment`."""

    def card_authorize(self, *, key: str, livemode: bool, amount: int, installments: int, card: CardData | None,
                       rail_token: str | None) -> CardResult:
        # The simulated PSP's own books (a real PSP's are not ours to see): a new card's token and the charge are
        # written by one INSERT, so both exist or neither, with no transaction of ours open around the call.
        previous = self._repeat(key)
        if previous is not None:
            return self._card_result(previous)
        token_operation = None
        if card is not None:
            # The test numbers decide the outcome in both modes (live mode on the simulator can be tried with them);
            # any other valid card, which only live mode lets through, is approved.
            outcome = TEST_CARDS.get(card.number, PAID)
            rail_token = "simtok_" + random_code(24)
            token_operation = SimulatorOperation(key=rail_token, kind="card_token", livemode=livemode, amount=0,
                                                 status="ACTIVE", outcome=outcome)
        else:
            stored = SimulatorOperation.objects.filter(key=rail_token, kind="card_token").first()
            outcome = stored.outcome if stored else "processing_error"
        operation = self._record(key=key, kind="card", livemode=livemode, amount=amount,
                                 status="SUCCEEDED" if outcome == PAID else "FAILED",
                                 outcome="" if outcome == PAID else outcome, reference=rail_token or "",
                                 with_operation=token_operation)
        return self._card_result(operation)

    def installments(self, *, brand: str, amount: int) -> list[dict]:
        """1 to 12 installments without interest, each rounded up to the cent."""
        return [{"installments": count, "installmentValue": -(-amount // count), "hasInterest": False,
                 "interestPercentage": 0} for count in range(1, 13)]

    def card_status(self, *, key: str) -> CardResult:
        operation = _operation(key, "card")
        if operation is None:  # never reached the network: nothing was charged
            return CardResult(status="FAILED", failure_code="processing_error")
        return self._card_result(operation)

    @staticmethod
    def _card_result(operation: SimulatorOperation) -> CardResult:
        if operation.status == "SUCCEEDED":
            return CardResult(status="PAID", authorization_code=operation.key.replace("-", "")[-6:].upper(),
                              rail_token=operation.reference)
        return CardResult(status="FAILED", failure_code=operation.outcome, rail_token=operation.reference)

    # --- Refunds -----------------------------------------------------------------------------------------------------
    def refund_create(self, *, key: str, livemode: bool, payin_key: str, payment_method: str, amount: int,
                      end_to_end_id: str = "") -> OperationStatus:
        # Card refunds are answered at once; Pix refunds are confirmed by the network a moment later.
        operation = self._record_or_repeat(key=key, kind="refund", livemode=livemode, amount=amount,
                                           status="SUCCEEDED" if payment_method == "CREDIT_CARD" else "PENDING",
                                           reference=payin_key)
        return OperationStatus(status=operation.status, failure_code=operation.outcome)

    def refund_status(self, *, key: str, end_to_end_id: str = "") -> OperationStatus:
        answer = _statuses([key], "refund")[0]
        return OperationStatus(status="FAILED", failure_code="rail_error") if answer is None else answer

    # --- Payouts -----------------------------------------------------------------------------------------------------
    # Test-mode payouts complete by themselves a moment after they are sent, except to these keys (SPEC §7).
    FAILING_EMAIL_DOMAIN = "@fail.example.com"
    UNKNOWN_EVP = "00000000-0000-0000-0000-000000000000"

    def payout_send(self, *, key: str, livemode: bool, amount: int, pix_key: str, pix_key_type: str,
                    end_to_end_id: str, beneficiary_document: str = "") -> OperationStatus:
        return self.payouts_send(orders=[{
            "key": key, "livemode": livemode, "amount": amount, "pix_key": pix_key, "pix_key_type": pix_key_type,
            "end_to_end_id": end_to_end_id, "beneficiary_document": beneficiary_document}])[0]

    def payouts_send(self, *, orders: list[dict]) -> list[OperationStatus]:
        """Each order recorded under its key, all in one statement (a key sent before is counted, not recorded
        again: its first call is what the network saw), and answered from the rows it leaves: no second read."""
        if not orders:
            return []
        recorded = {operation.key: operation
                    for operation in _records_or_repeats([self._payout_operation(**order) for order in orders])}
        keys = [order["key"] for order in orders]
        if settings.SIMULATOR_LATENCY_SECONDS:  # tests: a window in which a worker can die after the send
            time.sleep(settings.SIMULATOR_LATENCY_SECONDS)
            return self.payouts_status(keys=keys)
        return _answers([recorded[key] for key in keys])

    def _payout_operation(self, *, key: str, livemode: bool, amount: int, pix_key: str, pix_key_type: str,
                          end_to_end_id: str, beneficiary_document: str = "") -> SimulatorOperation:
        outcome = ""
        if pix_key_type == "EMAIL" and pix_key.lower().endswith(self.FAILING_EMAIL_DOMAIN):
            outcome = "rejected_by_bank"
        elif pix_key_type == "EVP" and pix_key.lower() == self.UNKNOWN_EVP:
            outcome = "pix_key_not_found"
        return SimulatorOperation(key=key, kind="payout", livemode=livemode, amount=amount,
                                  status="FAILED" if outcome else "PENDING", outcome=outcome, reference=end_to_end_id)

    def payout_status(self, *, key: str) -> OperationStatus:
        return self.payouts_status(keys=[key])[0]

    def payouts_status(self, *, keys: list[str]) -> list[OperationStatus]:
        if not keys:
            return []
        return [OperationStatus(status="NOT_FOUND") if answer is None else answer
                for answer in _statuses(keys, "payout")]

    def simulate_payout(self, *, key: str, livemode: bool, amount: int, end_to_end_id: str, action: str) -> None:
        """The receiving bank's side of a payout: credit it (complete), refuse it (fail) or send it back (return).
        A payout not yet sent counts as sent now, once."""
        status, outcome = {"complete": ("SUCCEEDED", ""), "fail": ("FAILED", "rejected_by_bank"),
                           "return": ("RETURNED", "")}[action]
        if SimulatorOperation.objects.filter(key=key).exists():
            SimulatorOperation.objects.filter(key=key).update(status=status, outcome=outcome,
                                                              updated_at=timezone.now())
        else:
            self._record(key=key, kind="payout", livemode=livemode, amount=amount, status=status, outcome=outcome,
                         reference=end_to_end_id)

    # --- Notifications -----------------------------------------------------------------------------------------------
    def notification_parse(self, body: bytes) -> Notification:
        try:
            data = json.loads(body)
            return Notification(dedupe_key=str(data["id"]), kind=str(data["type"]), amount=data.get("amount"),
                                key=str(data.get("key", "")), txid=str(data.get("txid", "")),
                                nosso_numero=data.get("nossoNumero"), failure_code=str(data.get("failureCode", "")),
                                end_to_end_id=str(data.get("endToEndId", "")),
                                payer_name=str(data.get("payerName", "")),
                                payer_document=str(data.get("payerDocument", "")),
                                merchant_id=str(data.get("merchantId", "")))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidNotification(str(exc)) from exc

    def notifications_confirm(self, body: bytes) -> list[Notification]:
        """The simulator's notifications are made by its own sandbox actions, never received from outside."""
        return [self.notification_parse(body)]

    def payments_received(self, *, start: datetime, end: datetime) -> list[Notification]:
        return []

    def disputes_list(self, *, start: datetime, end: datetime) -> list[RailDispute]:
        return []  # the sandbox opens and decides its disputes itself (POST /sandbox/disputes/{id}/simulate)

    def dispute_answer(self, *, reference: str, accept: bool, text: str) -> None:
        return None

    # --- Sandbox: the outside world ----------------------------------------------------------------------------------
    def simulate_payment(self, *, key: str, livemode: bool, amount: int, txid: str = "",
                         nosso_numero: int | None = None, payer_name: str = "", payer_document: str = "",
                         merchant_id: str = "") -> bytes:
        """A payer pays: money enters through the rail, as a payment of its own (its end-to-end id), whatever it
        names: paying a charge twice is two payments, the second one unmatched. `key` is the charge's id ("" for a
        Pix naming no charge, then `merchant_id` says whose test-mode money it is)."""
        end_to_end_id = self.end_to_end_id_generate()
        self._record(key=end_to_end_id, kind="payin", livemode=livemode, amount=amount, status="SUCCEEDED",
                     reference=txid or str(nosso_numero or "") or key)
        return self._notification("payin.paid", dedupe_key=f"paid-{end_to_end_id}", key=key, amount=amount,
                                  txid=txid, nossoNumero=nosso_numero, endToEndId=end_to_end_id,
                                  payerName=payer_name, payerDocument=payer_document, merchantId=merchant_id)

    @staticmethod
    def end_to_end_id_generate() -> str:
        """An end-to-end id in the network's shape: E, the payer's bank's ISPB, the minute, 11 letters or digits."""
        return f"E{settings.PIX_ISPB}{timezone.now():%Y%m%d%H%M}{random_code(11)}"

    def simulate_chargeback(self, *, key: str, livemode: bool, amount: int) -> bytes:
        """The payer's bank takes the money back (a card chargeback, a Pix MED return)."""
        chargeback_key = f"chargeback-{key}"
        self._record_or_repeat(key=chargeback_key, kind="chargeback", livemode=livemode, amount=amount,
                               status="SUCCEEDED", reference=key)
        return self._notification("payin.chargeback", dedupe_key=chargeback_key, key=key, amount=amount)

    @staticmethod
    def _notification(kind: str, *, dedupe_key: str, **fields) -> bytes:
        body = {"id": dedupe_key, "type": kind, **{k: v for k, v in fields.items() if v not in (None, "")}}
        return json.dumps(body, separators=(",", ":")).encode()

    # --- Books -------------------------------------------------------------------------------------------------------
    @staticmethod
    def _record_or_repeat(**fields) -> SimulatorOperation:
        """The operation of this idempotency key: recorded with `fields` if it is new, else the one already done,
        its repeated call counted (`_records_or_repeats`)."""
        return _records_or_repeats([SimulatorOperation(**fields)])[0]

    @staticmethod
    def _repeat(key: str) -> SimulatorOperation | None:
        """The operation already done under this idempotency key, counting the repeated call."""
        return next(iter(SimulatorOperation.objects.raw(_REPEAT_SQL, [key])), None)

    @staticmethod
    def _record(*, with_operation: SimulatorOperation | None = None, **fields) -> SimulatorOperation:
        """The operation, and `with_operation` in the same INSERT when given: both or neither."""
        operation = SimulatorOperation(**fields)
        rows = [operation] if with_operation is None else [with_operation, operation]
        try:
            with transaction.atomic():  # inside a caller's transaction, a savepoint: a lost race leaves it usable
                SimulatorOperation.objects.bulk_create(rows)
        except IntegrityError:  # a concurrent call under the same key won: it is the one that happened
            return SimulatorOperation.objects.get(key=fields["key"])
        return operation


def _records_or_repeats(operations: list[SimulatorOperation]) -> list[SimulatorOperation]:
    """Each operation recorded if its idempotency key is new, else the one already done under it, its repeated call
    counted: one statement for all of them (a multi-row INSERT … ON CONFLICT), atomic by itself, the key's uniqueness
    settling a race inside it. The rows as the statement left them, in no set order; a key given twice in one call is
    one call. Rows go in the keys' order, so two calls sharing keys take their locks in one order."""
    operations = sorted({operation.key: operation for operation in reversed(operations)}.values(),
                        key=lambda operation: operation.key)
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(operations))
    params = [value for operation in operations for value in (
        operation.key, operation.kind, operation.livemode, operation.amount, operation.status, operation.outcome,
        operation.reference, operation.calls, operation.created_at, operation.updated_at)]
    return list(SimulatorOperation.objects.raw(_RECORD_OR_REPEAT_SQL.format(values=values), params))


def _answers(operations: list[SimulatorOperation]) -> list[OperationStatus]:
    """What each operation answers now. A PENDING refund or payout succeeds by itself SIMULATOR_AUTO_CONFIRM_SECONDS
    after it was sent: the due ones are confirmed together (one UPDATE) and answer SUCCEEDED; one that another call
    changed meanwhile (a sandbox action failing or returning it) is read again and answers as it now is."""
    now = timezone.now()
    due_by = now - timedelta(seconds=settings.SIMULATOR_AUTO_CONFIRM_SECONDS)
    due = [operation for operation in operations if operation.status == "PENDING" and operation.created_at <= due_by]
    confirmed: set[str] = set()
    if due:
        with connection.cursor() as cursor:
            cursor.execute(_CONFIRM_SQL, [now, [operation.key for operation in due]])
            confirmed = {key for (key,) in cursor.fetchall()}
    changed = {operation.key: operation for operation in due if operation.key not in confirmed}
    if changed:
        kind = next(iter(changed.values())).kind  # one call's operations are of one kind
        changed = {operation.key: operation
                   for operation in SimulatorOperation.objects.filter(key__in=list(changed), kind=kind)}
    answers = []
    for operation in operations:
        operation = changed.get(operation.key, operation)
        answers.append(OperationStatus(status="SUCCEEDED") if operation.key in confirmed
                       else OperationStatus(status=operation.status, failure_code=operation.outcome))
    return answers


def _statuses(keys: list[str], kind: str) -> list[OperationStatus | None]:
    """What `_answers` says of the operation of each key and kind, in the keys' order (None: there is none). The
    due ones are confirmed and read by the one UPDATE that confirms them; only the others are read again."""
    now = timezone.now()
    confirming = SimulatorOperation.objects.raw(_CONFIRM_DUE_SQL, [
        now, list(keys), kind, now - timedelta(seconds=settings.SIMULATOR_AUTO_CONFIRM_SECONDS)])
    confirmed = {operation.key for operation in confirming}
    rest = [key for key in dict.fromkeys(keys) if key not in confirmed]
    found: dict[str, OperationStatus] = {}
    if rest:
        operations = list(SimulatorOperation.objects.filter(key__in=rest, kind=kind))
        found = dict(zip([operation.key for operation in operations], _answers(operations), strict=True))
    return [OperationStatus(status="SUCCEEDED") if key in confirmed else found.get(key) for key in keys]


def _operation(key: str, kind: str) -> SimulatorOperation | None:
    return SimulatorOperation.objects.filter(key=key, kind=kind).first()


# The books' statements that change rows and answer them in the same round trip (a payout's send and confirmation
# run them), read back as instances by `raw()`. Literal SQL for PostgreSQL; `= ANY(%s)` takes a list of keys.
_REPEAT_SQL = "UPDATE payments_simulatoroperation SET calls = calls + 1 WHERE key = %s RETURNING *"
# `_records_or_repeats`' statement, `{values}` the placeholders of its rows: a key already there counts a call.
_RECORD_OR_REPEAT_SQL = (
    "INSERT INTO payments_simulatoroperation "
    "(key, kind, livemode, amount, status, outcome, reference, calls, created_at, updated_at) VALUES {values} "
    "ON CONFLICT (key) DO UPDATE SET calls = payments_simulatoroperation.calls + 1 RETURNING *")
_CONFIRM_SQL = ("UPDATE payments_simulatoroperation SET status = 'SUCCEEDED', updated_at = %s "
                "WHERE key = ANY(%s) AND status = 'PENDING' RETURNING key")
# The same, for operations of a kind, only once they are due (created at or before the last value), answering the
# rows it confirmed.
_CONFIRM_DUE_SQL = ("UPDATE payments_simulatoroperation SET status = 'SUCCEEDED', updated_at = %s "
                    "WHERE key = ANY(%s) AND kind = %s AND status = 'PENDING' AND created_at <= %s RETURNING *")


rail = SimulatorRail()
