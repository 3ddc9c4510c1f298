"""The soak test's end-of-run invariants, read from the soak database (Django must be set up on it).

The money identity
------------------
Every movement is a ledger transaction whose legs sum to zero, and each merchant's accounts of a mode sum to zero
(`ledger_check` verifies both). So, per merchant, with each account's balance:

    available + pending + payouts_in_flight + held = -(rail_in + rail_out + fee_revenue + adjustments)

and each platform-side account is moved by exactly these postings (payments/services.py, payments/payouts.py):

    rail_in      -amount of each charge when it is paid, and of each unmatched payment when it arrives (issue 14)
    rail_out     +amount of each refund when it succeeds (card: at once; Pix: when the rail confirms), and of each
                 unmatched payment sent back
                 +amount of each dispute when it is lost or accepted (while open it sits in `held`)
                 +amount of each payout when it completes, -amount when the receiving bank returns it
    fee_revenue  +fee of each paid charge, of each completed payout and of each accepted unmatched payment
    adjustments  -amount of each staff adjustment

The simulator rail keeps its own books (SimulatorOperation), written by "the network" itself: a charge the payer
paid (kind payin) or a card it captured (kind card, SUCCEEDED), a refund it made (kind refund, SUCCEEDED once it
confirmed), a chargeback (kind chargeback, with the amount taken back), a payout it sent (kind payout: SUCCEEDED,
or RETURNED once the money came back, or FAILED). Hence, summed over merchants:

    sum(available + pending + payouts_in_flight + held)
        = rail money in    [payin SUCCEEDED + card SUCCEEDED]
        - rail money out   [refund SUCCEEDED + payout SUCCEEDED + disputes LOST or ACCEPTED]  (a RETURNED payout: 0)
        - fees earned      [fee of every charge with paidAt + fee of every COMPLETED or RETURNED payout
                            + fee of every ACCEPTED unmatched payment]
        + adjustments      [sum of BalanceAdjustment.amount]

The left side comes from the ledger (and is compared with GET /balance), the right side from the simulator's
books and the business objects, never from the ledger's platform accounts: it holds only if no movement was lost,
doubled or misposted. Once every payout and refund is final nothing is in flight, and the identity must hold to the
cent. Fees are also checked against the fee_revenue accounts, and rail_in/rail_out against the simulator, so a
failure names the side that drifted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.db.models import Count, Sum

FINAL_PAYOUT = {"COMPLETED", "FAILED", "CANCELED", "RETURNED"}
PAID_PAYIN = {"PAID", "PARTIALLY_REFUNDED", "REFUNDED", "CHARGEBACK"}
RAIL_STATUS_OF_PAYOUT = {"COMPLETED": {"SUCCEEDED"}, "RETURNED": {"RETURNED"}, "FAILED": {"FAILED"}}


@dataclass
class Outcome:
    failures: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)

    def check(self, condition: bool, message: str) -> bool:
        if not condition:
            self.failures.append(message)
        return condition


def outstanding() -> dict[str, int]:
    """What is not final yet: the drain waits until all of it is 0."""
    from payments.models import Payout, Refund
    from webhooks.models import Delivery

    return {
        "payouts not final": Payout.objects.exclude(status__in=FINAL_PAYOUT).count(),
        "refunds pending": Refund.objects.filter(status="PENDING").count(),
        "deliveries pending": Delivery.objects.filter(status="PENDING").count(),
    }


def deliveries_missing(arrivals: dict) -> list[tuple[str, str]]:
    """(path, event id) of every delivery the receiver never answered 2xx for."""
    from webhooks.models import Delivery

    ok = arrivals["ok"]
    return [(path, str(event_id)) for path, event_id in
            ((urlsplit(url).path, event_id) for url, event_id in Delivery.objects.values_list("url", "event_id"))
            if str(event_id) not in ok.get(path, {})]


def payouts_check(out: Outcome) -> None:
    """Every payout final; each one sent reached the rail exactly once, and the rail agrees on its outcome; each
    transition's event was written exactly once."""
    from payments.models import Payout, SimulatorOperation
    from webhooks.models import Event

    payouts = {str(pk): (status, amount) for pk, status, amount in
               Payout.objects.values_list("pk", "status", "amount")}
    by_status = Counter(status for status, _ in payouts.values())
    out.figures["payouts"] = dict(sorted(by_status.items()))
    not_final = {s: n for s, n in by_status.items() if s not in FINAL_PAYOUT}
    out.check(not not_final, f"payouts not final: {not_final}")
    operations = {op.key: op for op in SimulatorOperation.objects.filter(kind="payout")}
    out.check(set(operations) <= set(payouts),
              f"the rail sent {len(set(operations) - set(payouts))} payout(s) we have no record of")
    repeated = {key: op.calls for key, op in operations.items() if op.calls != 1}
    out.check(not repeated, f"payouts the rail was asked to send more than once: {list(repeated.items())[:10]}")
    out.figures["payout rail calls > 1"] = len(repeated)
    disagree = []
    for payout_id, (status, amount) in payouts.items():
        op = operations.get(payout_id)
        if status == "CANCELED":
            if op is not None:
                disagree.append(f"{payout_id} CANCELED but the rail has it ({op.status})")
        elif op is None:
            disagree.append(f"{payout_id} {status} but the rail never received it")
        elif op.status not in RAIL_STATUS_OF_PAYOUT.get(status, set()) or op.amount != amount:
            disagree.append(f"{payout_id} {status} {amount} but the rail says {op.status} {op.amount}")
    out.check(not disagree, f"{len(disagree)} payout(s) where we and the rail disagree: {disagree[:10]}")
    events = Counter(Event.objects.filter(type__startswith="payout.").values_list("object_id", "type"))
    doubled = [key for key, n in events.items() if n > 1]
    out.check(not doubled, f"payout events written twice: {doubled[:10]}")
    expected = {"COMPLETED": {"created", "processing", "completed"}, "FAILED": {"created", "processing", "failed"},
                "CANCELED": {"created", "canceled"}, "RETURNED": {"created", "processing", "completed", "returned"}}
    have: dict[str, set] = defaultdict(set)
    for object_id, event_type in events:
        have[object_id].add(event_type.removeprefix("payout."))
    wrong = [f"{pid} {status}: {sorted(have[pid])}" for pid, (status, _) in payouts.items()
             if status in expected and have[pid] != expected[status]
             and not (status == "FAILED" and have[pid] == {"created", "failed"})]  # refused before it was sent
    out.check(not wrong, f"{len(wrong)} payout(s) whose events do not tell their history: {wrong[:10]}")


def refunds_check(out: Outcome) -> None:
    from payments.models import Refund, SimulatorOperation

    refunds = dict(Refund.objects.values_list("pk", "status"))
    out.figures["refunds"] = dict(sorted(Counter(refunds.values()).items()))
    operations = dict(SimulatorOperation.objects.filter(kind="refund").values_list("key", "status"))
    out.check("PENDING" not in refunds.values(), "refunds still PENDING")
    disagree = [f"{pk} {status} / rail {operations.get(str(pk))}" for pk, status in refunds.items()
                if operations.get(str(pk)) != status]
    disagree += [f"rail refund {key} unknown here" for key in set(operations) - {str(pk) for pk in refunds}]
    out.check(not disagree, f"{len(disagree)} refund(s) where we and the rail disagree: {disagree[:10]}")


def payins_check(out: Outcome) -> None:
    from payments.models import Payin
    from webhooks.models import Event

    by = Counter(Payin.objects.values_list("payment_method", "status"))
    out.figures["charges"] = {f"{method} {status}": n for (method, status), n in sorted(by.items())}
    doubled = (Event.objects.filter(type__in=["payin.created", "payin.paid", "payin.failed", "payin.chargeback",
                                              "payin.refunded", "payin.expired", "payin.canceled"])
               .values("object_id", "type").annotate(n=Count("id")).filter(n__gt=1))
    out.check(not doubled.exists(), f"charge events written twice: {list(doubled[:10])}")
    paid_events = Event.objects.filter(type="payin.paid").count()
    paid = Payin.objects.filter(paid_at__isnull=False).count()
    out.check(paid_events == paid, f"{paid} charges paid but {paid_events} payin.paid events")


def deliveries_check(out: Outcome, arrivals: dict) -> None:
    from webhooks.models import Delivery, Event

    events = Event.objects.count()
    statuses = Counter(Delivery.objects.values_list("status", flat=True))
    out.figures["events"] = events
    out.figures["events by type"] = dict(sorted(Counter(Event.objects.values_list("type", flat=True)).items()))
    out.figures["deliveries"] = dict(sorted(statuses.items()))
    out.figures["delivery attempts"] = Delivery.objects.aggregate(n=Sum("attempts"))["n"] or 0
    undelivered = Event.objects.filter(deliveries__isnull=True).count()
    out.check(undelivered == 0, f"{undelivered} event(s) without any delivery (every merchant has an endpoint)")
    out.check(set(statuses) <= {"SUCCEEDED"}, f"deliveries not SUCCEEDED: {dict(statuses)}")
    missing = deliveries_missing(arrivals)
    out.check(not missing, f"{len(missing)} delivery(ies) never received: {missing[:10]}")
    received = {event_id for per_path in arrivals["ok"].values() for event_id in per_path}
    unknown = received - {str(pk) for pk in Event.objects.values_list("pk", flat=True)}
    out.check(not unknown, f"the receiver got {len(unknown)} webhook-id(s) that are no event: {list(unknown)[:5]}")
    out.check(arrivals["badSignature"] == 0 and arrivals["unsigned"] == 0,
              f"webhooks with a bad signature: {arrivals['badSignature']}, with no known secret: "
              f"{arrivals['unsigned']}")
    answered_ok = sum(n for per_path in arrivals["ok"].values() for n in per_path.values())
    distinct = sum(len(per_path) for per_path in arrivals["ok"].values())
    out.figures["receiver"] = {"requests": arrivals["requests"], "cut off by a killed worker": arrivals["truncated"],
                               "answered 500 (on purpose)": arrivals["answered500"],
                               "deliveries received": distinct, "duplicates (2xx twice or more)":
                                   answered_ok - distinct,
                               "distinct webhook-ids": len(received)}


def money_check(out: Outcome, api_balances: list[dict]) -> None:
    """The identity of this module's docstring, to the cent."""
    from payments.models import (
        AccountKind,
        BalanceAdjustment,
        Dispute,
        LedgerAccount,
        Payin,
        Payout,
        SimulatorOperation,
        UnmatchedPayment,
    )

    def total(queryset, column: str = "amount") -> int:
        return queryset.aggregate(t=Sum(column))["t"] or 0

    accounts = dict(LedgerAccount.objects.filter(livemode=False).values("kind").annotate(t=Sum("balance"))
                    .values_list("kind", "t"))
    held = sum(accounts.get(kind, 0) for kind in (AccountKind.AVAILABLE, AccountKind.PENDING,
                                                  AccountKind.PAYOUTS_IN_FLIGHT, AccountKind.HELD))
    ops = SimulatorOperation.objects.filter(livemode=False)
    money_in = total(ops.filter(kind__in=["payin", "card"], status="SUCCEEDED"))
    # A chargeback or MED takes money back only once its dispute is lost or accepted; while open it is held.
    money_out = (total(ops.filter(kind__in=["refund", "payout"], status="SUCCEEDED"))
                 + total(Dispute.objects.filter(livemode=False, status__in=["LOST", "ACCEPTED"])))
    fees = (total(Payin.objects.filter(livemode=False, paid_at__isnull=False), "fee")
            + total(Payout.objects.filter(livemode=False, status__in=["COMPLETED", "RETURNED"]), "fee")
            + total(UnmatchedPayment.objects.filter(livemode=False, status="ACCEPTED"), "fee"))
    adjustments = total(BalanceAdjustment.objects.filter(livemode=False))
    expected = money_in - money_out - fees + adjustments
    out.figures["money"] = {
        "merchant balances (available + pending + in flight + held)": held,
        "  of which in flight": accounts.get(AccountKind.PAYOUTS_IN_FLIGHT, 0),
        "rail in (charges paid)": money_in, "rail out (refunds, chargebacks, payouts)": money_out,
        "fees earned": fees, "adjustments": adjustments, "rail in - out - fees + adjustments": expected,
    }
    out.check(held == expected, f"merchant balances {held} != rail in {money_in} - out {money_out} - fees {fees} "
                                f"+ adjustments {adjustments} = {expected} (difference {held - expected})")
    out.check(accounts.get(AccountKind.PAYOUTS_IN_FLIGHT, 0) == 0,
              f"{accounts.get(AccountKind.PAYOUTS_IN_FLIGHT, 0)} cents still in flight after the drain")
    out.check(-accounts.get(AccountKind.RAIL_IN, 0) == money_in,
              f"rail_in accounts say {-accounts.get(AccountKind.RAIL_IN, 0)} came in, the rail says {money_in}")
    out.check(accounts.get(AccountKind.RAIL_OUT, 0) == money_out,
              f"rail_out accounts say {accounts.get(AccountKind.RAIL_OUT, 0)} left, the rail says {money_out}")
    out.check(accounts.get(AccountKind.FEE_REVENUE, 0) == fees,
              f"fee_revenue accounts hold {accounts.get(AccountKind.FEE_REVENUE, 0)}, the objects' fees are {fees}")
    paid = total(Payin.objects.filter(livemode=False, status__in=PAID_PAYIN))
    unmatched = total(UnmatchedPayment.objects.filter(livemode=False))  # paid twice, after a cancel, ... (issue 14)
    out.check(paid + unmatched == money_in, f"charges in a paid status add up to {paid} and unmatched payments to "
                                            f"{unmatched}, the rail received {money_in}")
    api_total = sum(b["available"] + b["pending"] for b in api_balances)
    ledger_total = accounts.get(AccountKind.AVAILABLE, 0) + accounts.get(AccountKind.PENDING, 0)
    out.check(api_total == ledger_total, f"GET /balance adds up to {api_total}, the ledger to {ledger_total}")
