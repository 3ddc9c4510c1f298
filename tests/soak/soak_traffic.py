"""The soak test's clients: threads, each a merchant's server with its own HTTP session, sending a weighted mix of
every kind of request the API takes, as integrations do: charges of every method (test cards that pay and that are
declined, saved-card tokens), sandbox payments, expiries and chargebacks, card and Pix refunds, payouts (most to
keys that work, some to keys the bank refuses, some beyond the balance), cancels, and reads of every list.

A client sends an Idempotency-Key on about half of its POSTs and retries those, with the same key and body, on a
5xx, a connection error or `idempotency_key_in_use` (as a good client does); POSTs without a key are not retried.
Every response is recorded with its start and end times, so the soak can tell which 5xx fell inside the Redis
restart window; a response whose status is not one the request may get is recorded as unexpected.
"""

from __future__ import annotations

import base64
import random
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field

import requests

PAID_CARDS = [("4111111111111111", "123"), ("5555555555554444", "123"), ("378282246310005", "1234"),
              ("6362970000457013", "123"), ("6062825624254001", "123")]
DECLINED_CARDS = ["4000000000000002", "4000000000009995", "4000000000000069", "4000000000000127",
                  "4000000000000119"]
CUSTOMER = {"name": "Ana Souza", "document": "529.982.247-25", "email": "ana@example.com"}
BOLETO_CUSTOMER = {**CUSTOMER, "phone": "(11) 98765-4321",
                   "address": {"street": "Av. Paulista", "number": "1000", "zipCode": "01310-100",
                               "city": "São Paulo", "state": "SP"}}
RETRY_BUDGET = 60.0  # seconds a keyed request is retried before the client gives up
REQUEST_TIMEOUT = 30.0
# A Pix charge of the shortest expiry (60 s) is expired by the job (every 30 s) within ~90 s; such charges are made
# only while that leaves room before the traffic ends, so no event is born of the clock after the drain.
SHORT_EXPIRY_MARGIN = 100.0
FINAL_PAYOUT_AGE = 4.0  # seconds after which a payout has usually completed (the sandbox may then return it)


@dataclass(frozen=True)
class Record:
    endpoint: str  # "POST /payin/{id}/refunds"
    status: int | None  # None: no HTTP answer (connection error, timeout)
    code: str  # the error body's code, or the exception's name when there was no answer
    started: float  # time.monotonic()
    ended: float
    expected: bool  # a status this request may get (5xx are judged by the soak against the Redis window)
    spec_body: bool  # for an error: the SPEC §1.1 body with Content-Type application/json
    detail: str = ""  # a short excerpt of the body, for unexpected answers


@dataclass
class MerchantTarget:
    """What the clients of one merchant know about its objects, shared by those clients."""

    index: int
    public_key: str
    secret_key: str
    object_webhook_url: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: list = field(default_factory=list)  # PIX and BOLETO charges that are PENDING, for pay/expire/cancel
    expired: list = field(default_factory=list)  # charges expired by the sandbox: late payments are still credited
    refundable: dict = field(default_factory=dict)  # PIX and card charges paid: id -> amount left to refund
    payins: deque = field(default_factory=lambda: deque(maxlen=500))  # recent charge ids, for reads
    tokens: deque = field(default_factory=lambda: deque(maxlen=20))  # saved-card tokens
    new_payouts: deque = field(default_factory=lambda: deque(maxlen=50))  # just created, for cancel
    old_payouts: deque = field(default_factory=lambda: deque(maxlen=200))  # (created at, id), for returns
    reference_ids: deque = field(default_factory=lambda: deque(maxlen=50))  # payout referenceIds used


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[Record] = []
        self.replays = 0
        self.replay_mismatches: list[str] = []

    def add(self, record: Record) -> None:
        with self.lock:
            self.records.append(record)


def _error_parts(response: requests.Response) -> tuple[str, bool]:
    """(code, whether the body is the SPEC's error body) of an error response."""
    try:
        body = response.json()
        error = body["error"]
        ok = (isinstance(error, dict) and all(isinstance(error.get(k), str) and error.get(k) for k in
                                              ("type", "code", "message"))
              and "details" in error and "requestId" in error
              and response.headers.get("Content-Type", "").startswith("application/json"))
        return str(error.get("code", "")), ok
    except (ValueError, KeyError, TypeError, AttributeError):
        return "", False


class Client(threading.Thread):
    def __init__(self, number: int, base_url: str, target: MerchantTarget, stats: Stats, stop: threading.Event,
                 short_expiry_until: float):
        super().__init__(name=f"soak-client-{number}", daemon=True)
        self.number = number
        self.base_url = base_url
        self.target = target
        self.stats = stats
        self.stop_event = stop
        self.short_expiry_until = short_expiry_until
        self.rng = random.Random(number * 7919 + 17)
        self.session = requests.Session()
        token = base64.b64encode(f"{target.public_key}:{target.secret_key}".encode()).decode()
        self.session.headers.update({"Authorization": f"Basic {token}", "Accept": "application/json"})
        self.sequence = 0
        self.actions = [
            (self.payin_pix, 12), (self.payin_boleto, 5), (self.payin_card, 10), (self.simulate_pay, 12),
            (self.simulate_expire, 1), (self.simulate_chargeback, 1), (self.payin_cancel, 1),
            (self.refund, 7), (self.payout, 8), (self.payout_cancel, 2), (self.payout_return, 1),
            (self.get_payin, 8), (self.list_payins, 6), (self.list_payouts, 4), (self.get_balance, 6),
            (self.list_statement, 4), (self.list_events, 4),
        ]
        self.functions = [a for a, _ in self.actions]
        self.weights = [w for _, w in self.actions]

    def run(self) -> None:
        while not self.stop_event.is_set():
            action = self.rng.choices(self.functions, self.weights)[0]
            try:
                action()
            except Exception as exc:  # a bug of the harness must not silently end a client
                self.stats.add(Record("harness", None, f"harness:{type(exc).__name__}: {exc}"[:200],
                                      time.monotonic(), time.monotonic(), False, False))
            time.sleep(self.rng.uniform(0, 0.04))
        self.session.close()

    # --- HTTP ----------------------------------------------------------------------------------------------------
    def call(self, endpoint: str, method: str, path: str, body: dict | None = None, *, success: int = 200,
             allowed: tuple[tuple[int, str], ...] = (), keyed: bool | None = None) -> requests.Response | None:
        """One request, retried with its Idempotency-Key while the answer is a 5xx, no answer, or "in use". The
        response, or None when there was none in the end (or it was a 5xx)."""
        headers = {}
        if method == "POST":
            headers["Content-Type"] = "application/json"
            if keyed if keyed is not None else self.rng.random() < 0.5:
                headers["Idempotency-Key"] = f"soak-{self.number}-{uuid.uuid4()}"
        give_up = time.monotonic() + RETRY_BUDGET
        delay = 0.2
        while True:
            started = time.monotonic()
            try:
                response = self.session.request(method, self.base_url + path, json=body, headers=headers,
                                                timeout=REQUEST_TIMEOUT)
            except requests.RequestException as exc:
                self.stats.add(Record(endpoint, None, type(exc).__name__, started, time.monotonic(), False, False))
                response = None
            else:
                status = response.status_code
                code, spec_body = ("", True) if status < 400 else _error_parts(response)
                expected = status == success or (status, code) in allowed or (
                    status == 409 and code == "idempotency_key_in_use" and "Idempotency-Key" in headers)
                self.stats.add(Record(endpoint, status, code, started, time.monotonic(), expected, spec_body,
                                      "" if expected or status >= 500 else response.text[:300]))
                retry = status >= 500 or (status == 409 and code == "idempotency_key_in_use")
                if not retry:
                    if status == success and "Idempotency-Key" in headers and self.rng.random() < 0.05:
                        self.replay(endpoint, method, path, body, headers, response)
                    return response
            if "Idempotency-Key" not in headers or time.monotonic() + delay > give_up:
                return None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def replay(self, endpoint: str, method: str, path: str, body: dict | None, headers: dict,
               first: requests.Response) -> None:
        """Send a request that succeeded again with its key: the same answer, marked replayed, nothing done twice."""
        started = time.monotonic()
        try:
            again = self.session.request(method, self.base_url + path, json=body, headers=headers,
                                         timeout=REQUEST_TIMEOUT)
        except requests.RequestException as exc:
            self.stats.add(Record(endpoint + " (replay)", None, type(exc).__name__, started, time.monotonic(),
                                  False, False))
            return
        code, spec_body = ("", True) if again.status_code < 400 else _error_parts(again)
        self.stats.add(Record(endpoint + " (replay)", again.status_code, code, started, time.monotonic(),
                              again.status_code == first.status_code, spec_body))
        if again.status_code >= 500:
            return  # judged with the other 5xx against the Redis window
        with self.stats.lock:
            self.stats.replays += 1
            if (again.status_code != first.status_code or again.headers.get("Idempotent-Replayed") != "true"
                    or again.json().get("id") != first.json().get("id")):
                self.stats.replay_mismatches.append(
                    f"{method} {path}: first {first.status_code} {first.text[:120]}, replay {again.status_code} "
                    f"Idempotent-Replayed={again.headers.get('Idempotent-Replayed')} {again.text[:120]}")

    def reference(self, prefix: str) -> str:
        self.sequence += 1
        return f"{prefix}-{self.number}-{self.sequence}"

    # --- Charges -------------------------------------------------------------------------------------------------
    def _payin_body(self, method: str, amount: int) -> dict:
        body = {"paymentMethod": method, "amount": amount, "referenceId": self.reference("order"),
                "payerIp": "203.0.113.9", "isPhysicalProduct": False,
                "customer": dict(BOLETO_CUSTOMER if method == "BOLETO" else CUSTOMER),
                "items": [{"title": "Produto", "quantity": 1, "unitPrice": amount}]}
        if self.rng.random() < 0.2:
            body["webhookUrl"] = self.target.object_webhook_url
        if self.rng.random() < 0.2:
            body["metadata"] = {"soak": "yes", "client": str(self.number)}
        return body

    def payin_pix(self) -> None:
        body = self._payin_body("PIX", self.rng.randint(100, 20_000))
        if time.monotonic() < self.short_expiry_until and self.rng.random() < 0.2:
            body["pix"] = {"expiresIn": 60}  # the expiry job expires these within the run
        response = self.call("POST /payin", "POST", "/payin", body, success=201)
        if response is not None and response.status_code == 201:
            with self.target.lock:
                self.target.pending.append(response.json()["id"])
                self.target.payins.append(response.json()["id"])

    def payin_boleto(self) -> None:
        response = self.call("POST /payin", "POST", "/payin",
                             self._payin_body("BOLETO", self.rng.randint(500, 20_000)), success=201)
        if response is not None and response.status_code == 201:
            with self.target.lock:
                self.target.pending.append(response.json()["id"])
                self.target.payins.append(response.json()["id"])

    def payin_card(self) -> None:
        body = self._payin_body("CREDIT_CARD", self.rng.randint(100, 20_000))
        with self.target.lock:
            token = self.rng.choice(self.target.tokens) if self.target.tokens and self.rng.random() < 0.2 else None
        if token:
            body["card"] = {"token": token, "installments": self.rng.randint(1, 3)}
        elif self.rng.random() < 0.8:
            number, cvv = self.rng.choice(PAID_CARDS)
            body["card"] = {"holderName": "ANA SOUZA", "number": number, "expirationMonth": "12",
                            "expirationYear": "2031", "cvv": cvv}
        else:
            body["card"] = {"holderName": "ANA SOUZA", "number": self.rng.choice(DECLINED_CARDS),
                            "expirationMonth": "12", "expirationYear": "2031", "cvv": "123"}
        response = self.call("POST /payin", "POST", "/payin", body, success=201)
        if response is not None and response.status_code == 201:
            charge = response.json()
            with self.target.lock:
                self.target.payins.append(charge["id"])
                if charge["status"] == "PAID":
                    self.target.refundable[charge["id"]] = charge["amount"]
                    if charge["card"].get("token") and not token:
                        self.target.tokens.append(charge["card"]["token"])

    def _take(self, items: list) -> str | None:
        with self.target.lock:
            return items.pop(self.rng.randrange(len(items))) if items else None

    def simulate_pay(self) -> None:
        payin_id = self._take(self.target.expired if self.target.expired and self.rng.random() < 0.1
                              else self.target.pending)
        if payin_id is None:
            return
        response = self.call("POST /sandbox/payin/{id}/simulate", "POST", f"/sandbox/payin/{payin_id}/simulate",
                             {"action": "pay"}, allowed=((409, "invalid_state"),))
        if response is not None and response.status_code == 200:
            charge = response.json()
            if charge["paymentMethod"] == "PIX" and charge["status"] == "PAID":
                with self.target.lock:
                    self.target.refundable[payin_id] = charge["amount"]

    def simulate_expire(self) -> None:
        payin_id = self._take(self.target.pending)
        if payin_id is None:
            return
        response = self.call("POST /sandbox/payin/{id}/simulate", "POST", f"/sandbox/payin/{payin_id}/simulate",
                             {"action": "expire"}, allowed=((409, "invalid_state"),))
        if response is not None and response.status_code == 200:
            with self.target.lock:
                self.target.expired.append(payin_id)

    def simulate_chargeback(self) -> None:
        with self.target.lock:
            if not self.target.refundable:
                return
            payin_id = self.rng.choice(list(self.target.refundable))
            self.target.refundable.pop(payin_id)
        self.call("POST /sandbox/payin/{id}/simulate", "POST", f"/sandbox/payin/{payin_id}/simulate",
                  {"action": "chargeback"}, allowed=((409, "invalid_state"),))

    def payin_cancel(self) -> None:
        payin_id = self._take(self.target.pending)
        if payin_id is not None:
            self.call("POST /payin/{id}/cancel", "POST", f"/payin/{payin_id}/cancel", {},
                      allowed=((409, "invalid_state"),))

    def refund(self) -> None:
        with self.target.lock:
            if not self.target.refundable:
                return
            payin_id = self.rng.choice(list(self.target.refundable))
            left = self.target.refundable[payin_id]
        body: dict = {"reason": "soak"}
        if self.rng.random() < 0.5 and left > 1:
            body["amount"] = self.rng.randint(1, left - 1)
        response = self.call("POST /payin/{id}/refunds", "POST", f"/payin/{payin_id}/refunds", body, success=201,
                             allowed=((400, "insufficient_balance"), (400, "validation_error"),
                                      (409, "invalid_state")))
        if response is None:
            return
        with self.target.lock:
            if response.status_code == 201:
                left -= response.json()["amount"]
                if left > 0 and payin_id in self.target.refundable:
                    self.target.refundable[payin_id] = left
                else:
                    self.target.refundable.pop(payin_id, None)
            elif response.status_code in (400, 409) and response.json()["error"]["code"] != "insufficient_balance":
                self.target.refundable.pop(payin_id, None)

    # --- Payouts -------------------------------------------------------------------------------------------------
    def payout(self) -> None:
        roll = self.rng.random()
        amount = self.rng.randint(100, 3_000)
        key_type, key = "EVP", str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        if roll < 0.08:
            key_type, key = "EMAIL", f"payee{self.rng.randint(1, 999)}@fail.example.com"  # FAILED rejected_by_bank
        elif roll < 0.10:
            key = "00000000-0000-0000-0000-000000000000"  # FAILED pix_key_not_found
        elif roll < 0.14:
            # One cent beyond what is available, per a read a moment ago: refused, unless the balance grew since.
            balance = self.call("GET /balance", "GET", "/balance")
            if balance is None or balance.status_code != 200:
                return
            amount = min(max(balance.json()["available"], 0) + 1, 5_000_000)
        with self.target.lock:
            reuse = self.target.reference_ids and self.rng.random() < 0.02
            reference = self.rng.choice(self.target.reference_ids) if reuse else None
        body = {"amount": amount, "pixKey": key, "pixKeyType": key_type,
                "referenceId": reference or self.reference("payout"), "beneficiaryName": "Fornecedor"}
        if self.rng.random() < 0.2:
            body["webhookUrl"] = self.target.object_webhook_url
        response = self.call("POST /payout", "POST", "/payout", body, success=201,
                             allowed=((400, "insufficient_balance"), (400, "payout_limit_exceeded"),
                                      (409, "duplicate_reference_id")))
        if response is not None and response.status_code == 201:
            with self.target.lock:
                self.target.new_payouts.append(response.json()["id"])
                self.target.old_payouts.append((time.monotonic(), response.json()["id"]))
                self.target.reference_ids.append(body["referenceId"])

    def payout_cancel(self) -> None:
        with self.target.lock:
            payout_id = self.target.new_payouts.pop() if self.target.new_payouts else None
        if payout_id is not None:  # usually the worker has started it already: 409
            self.call("POST /payout/{id}/cancel", "POST", f"/payout/{payout_id}/cancel", {},
                      allowed=((409, "invalid_state"),))

    def payout_return(self) -> None:
        with self.target.lock:
            ready = [i for at, i in self.target.old_payouts if time.monotonic() - at > FINAL_PAYOUT_AGE]
            payout_id = self.rng.choice(ready) if ready else None
        if payout_id is not None:  # the receiving bank sends a completed payout back
            self.call("POST /sandbox/payout/{id}/simulate", "POST", f"/sandbox/payout/{payout_id}/simulate",
                      {"action": "return"}, allowed=((409, "invalid_state"),))

    # --- Reads ---------------------------------------------------------------------------------------------------
    def get_payin(self) -> None:
        with self.target.lock:
            payin_id = self.rng.choice(self.target.payins) if self.target.payins else None
        if payin_id is not None:
            self.call("GET /payin/{id}", "GET", f"/payin/{payin_id}")

    def _list(self, endpoint: str, path: str, filters: list[str]) -> None:
        query = f"?limit={self.rng.choice([5, 20, 100])}"
        if filters and self.rng.random() < 0.3:
            query += "&" + self.rng.choice(filters)
        response = self.call(endpoint, "GET", path + query)
        if response is not None and response.status_code == 200 and response.json().get("nextCursor") \
                and self.rng.random() < 0.3:
            self.call(endpoint, "GET", f"{path}?limit=20&cursor={response.json()['nextCursor']}")

    def list_payins(self) -> None:
        self._list("GET /payin", "/payin", ["status=PAID", "status=PENDING", "paymentMethod=PIX",
                                            "paymentMethod=CREDIT_CARD"])

    def list_payouts(self) -> None:
        self._list("GET /payout", "/payout", ["status=COMPLETED", "status=PENDING", "status=FAILED"])

    def get_balance(self) -> None:
        self.call("GET /balance", "GET", "/balance")

    def list_statement(self) -> None:
        self._list("GET /balance/transactions", "/balance/transactions", [])

    def list_events(self) -> None:
        self._list("GET /events", "/events", ["type=payin.paid", "type=payout.completed"])


def run_clients(*, count: int, base_url: str, targets: list[MerchantTarget], stats: Stats, stop: threading.Event,
                duration: float) -> list[Client]:
    short_expiry_until = time.monotonic() + duration - SHORT_EXPIRY_MARGIN
    clients = [Client(n, base_url, targets[n % len(targets)], stats, stop, short_expiry_until)
               for n in range(count)]
    for client in clients:
        client.start()
    return clients
