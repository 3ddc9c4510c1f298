"""The benchmark's scenarios, in one list: add an endpoint here and `run.py` measures it.

A scenario names one request (method, path, per-request body and headers). It may carry a target: the share of a
baseline scenario's req/s it must sustain. Both are measured in the same run, on the same server and machine, so the
ratio means something on any laptop where an absolute req/s would not.

Callables (`path`, `body`, `headers`) run in the load generator once per request, so a POST can carry a fresh
Idempotency-Key or referenceId every time; keep them cheap, they share the client's CPU budget.

A scenario may also need data that exists before it is measured (a charge to read): its `setup` runs once per run in
`run.py`, through the API, after gunicorn is up, and returns named values that fill the `{placeholders}` of its path.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server import ApiClient


@dataclass(frozen=True)
class Scenario:
    name: str
    method: str
    path: str | Callable[[], str]
    auth: bool = False  # HTTP Basic with the bench merchant's test key pair
    body: Callable[[], Any] | None = None  # JSON-encoded; sent with Content-Type: application/json
    headers: Callable[[], dict[str, str]] | None = None
    expect: frozenset[int] = frozenset({200})  # any other status counts as an error
    baseline: str | None = None  # the scenario its req/s is compared with (the ratio column)
    target: float | None = None  # e.g. 0.60: at least 60% of the baseline's req/s (needs a baseline)
    p99_ms_max: float | None = None  # e.g. 50: the p99 latency must stay under this many ms
    # Run once per run, before any measuring: creates what the scenario reads through the API and returns the values
    # of the `{name}` placeholders of a string `path` (formatted once, so the request stays static).
    setup: Callable[[ApiClient], dict[str, str]] | None = None
    # Served only by `run.py --floor` (bench/floor.py): what an endpoint cannot cost less than on this machine.
    floor: bool = False
    # Also measured against the textbook peer (bench/peer/, `run.py --peer`), which serves the same request: the
    # peer's own seed makes what the setup would (a funded merchant), so the setup runs only on the service.
    peer: bool = False

    @property
    def is_static(self) -> bool:
        """Nothing varies per request: the client encodes the request once and resends the same bytes."""
        return self.body is None and self.headers is None and isinstance(self.path, str)


def unique_id() -> str:
    return uuid.uuid4().hex


def idempotency_headers() -> dict[str, str]:
    """A new Idempotency-Key per request: a repeated one would be a replay, which is a different (cheaper) path."""
    return {"Idempotency-Key": unique_id()}


# --- Pay-in ----------------------------------------------------------------------------------------------------------
# Valid bodies per payments/validation.py. The parts that never change are built once and shared by every request
# (they are only JSON-encoded); the referenceId is fresh each time, as a merchant's order ids are.
CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
# A boleto needs the payer's phone and address.
BOLETO_CUSTOMER = {**CUSTOMER, "phone": "11987654321",
                   "address": {"street": "Av. Paulista", "number": "1000", "zipCode": "01310-100",
                               "city": "São Paulo", "state": "SP"}}
ITEMS = [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}]
TEST_CARD = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12",
             "expirationYear": "2030", "cvv": "123"}  # a test card the simulator rail approves: the PAID path


def payin_body(method: str) -> Callable[[], dict]:
    """A body factory for POST /payin with `method`: 50.00 BRL, a digital product, a new referenceId each call."""
    fixed: dict[str, Any] = {"paymentMethod": method, "amount": 5000, "payerIp": "203.0.113.9",
                             "isPhysicalProduct": False, "items": ITEMS,
                             "customer": BOLETO_CUSTOMER if method == "BOLETO" else CUSTOMER}
    if method == "CREDIT_CARD":
        fixed["card"] = TEST_CARD

    def body() -> dict:
        return {**fixed, "referenceId": f"bench-{unique_id()}"}

    return body


LIST_PAGE_ROWS = 25  # more than a page of 20, so the list scenario reads a full page that has more after it


def charges_setup(api: ApiClient) -> dict[str, str]:
    """PIX charges of the bench merchant, created through POST /payin before anything is measured: a full first
    page for the list scenario whatever ran before it, and `payin_id` (the newest) for GET /payin/{id}."""
    make = payin_body("PIX")
    payin_id = ""
    for _ in range(LIST_PAGE_ROWS):
        payin_id = api.post_json("/payin", make(), expect=201)["id"]
    return {"payin_id": payin_id}


PAYOUT_FUNDING = 9_000_000  # cents per merchant: 9 million payouts of 1 cent, far more than a run sends
PAYOUT_MERCHANTS = 8


def _fund(api: ApiClient) -> None:
    """A paid PIX charge: its net is the available balance payouts spend."""
    charge = api.post_json("/payin", {**payin_body("PIX")(), "amount": PAYOUT_FUNDING})
    api.post_json(f"/sandbox/payin/{charge['id']}/simulate", {"action": "pay"}, expect=200)


def payout_body() -> Callable[[], dict]:
    def make() -> dict:
        return {"amount": 1, "pixKeyType": "EVP", "pixKey": str(uuid.uuid4()), "referenceId": unique_id()}
    return make


def hot_merchant_setup(api: ApiClient) -> dict[str, str]:
    """Fund the bench merchant: every payout of the run locks this one merchant's balance."""
    _fund(api)
    return {}


def merchants_setup(api: ApiClient) -> dict[str, str]:
    """More approved merchants, each with a test key pair and a funded balance, made with the operator commands under
    the server's own settings (the key digests derive from its SECRET_KEY) and tree (`run.py --compare`)."""
    import json
    import secrets

    from server import ApiClient as Client
    from server import KeyPair, manage

    pairs = []
    for number in range(PAYOUT_MERCHANTS):
        email = f"bench-payouts-{number}@example.com"
        manage(api.env, "createmerchant", "--email", email, f"--password={secrets.token_urlsafe(16)}", "--approve",
               root=api.root)
        made = json.loads(manage(api.env, "createapikey", "--email", email, "--mode", "test",
                                 root=api.root).strip().splitlines()[-1])
        pair = KeyPair(public_key=made["publicKey"], secret_key=made["secretKey"])
        _fund(Client(api.port, pair))
        pairs.append(f"{pair.public_key}:{pair.secret_key}")
    return {"merchant_pairs": " ".join(pairs)}


def many_merchants_headers() -> dict[str, str]:
    """Each request as one of the setup's merchants, at random (read from the values load.py was given)."""
    import base64
    import json
    import os
    import random

    global _PAIRS
    if _PAIRS is None:
        _PAIRS = json.loads(os.environ.get("BENCH_SETUP_VALUES") or "{}").get("merchant_pairs", "").split()
    token = base64.b64encode(random.choice(_PAIRS).encode()).decode()
    return {"Authorization": f"Basic {token}"}


_PAIRS: list[str] | None = None


SCENARIOS: list[Scenario] = [
    # The yardstick: a bare Django JsonResponse, no auth, no database. Everything else is a share of it.
    Scenario(name="GET /ping", method="GET", path="/ping", peer=True),
    Scenario(name="GET /account", method="GET", path="/account", auth=True, baseline="GET /ping", target=0.60,
             peer=True),
    # Pay-in (issue 4): creation per method, and the reads, against GET /account (authentication and its one Redis
    # round trip, no database): the ratio is what the pay-in machinery costs on top of an authenticated request.
    Scenario(name="POST /payin PIX", method="POST", path="/payin", auth=True, body=payin_body("PIX"),
             expect=frozenset({201}), baseline="GET /account", p99_ms_max=50, peer=True),
    # Its floor, right after it (see the floors at the end).
    Scenario(name="FLOOR PIX charge + event", method="POST", path="/floor/payin", auth=True,
             body=payin_body("PIX"), expect=frozenset({201}), baseline="GET /account", floor=True),
    # The same with an Idempotency-Key (a fresh one per request): the claim row and the stored response on top.
    Scenario(name="POST /payin PIX idempotent", method="POST", path="/payin", auth=True, body=payin_body("PIX"),
             headers=idempotency_headers, expect=frozenset({201}), baseline="GET /account", peer=True),
    Scenario(name="POST /payin BOLETO", method="POST", path="/payin", auth=True, body=payin_body("BOLETO"),
             expect=frozenset({201}), baseline="GET /account"),
    # The simulator rail approves the test card in-process: PAID, a card token and a ledger movement per request.
    Scenario(name="POST /payin CREDIT_CARD", method="POST", path="/payin", auth=True,
             body=payin_body("CREDIT_CARD"), expect=frozenset({201}), baseline="GET /account"),
    Scenario(name="GET /payin/{id}", method="GET", path="/payin/{payin_id}", auth=True, setup=charges_setup,
             baseline="GET /account", target=0.80),
    Scenario(name="GET /payin?limit=20", method="GET", path="/payin?limit=20", auth=True, setup=charges_setup,
             baseline="GET /account"),
    # Payouts (issue 5): every payout of one merchant locks that merchant's balance (the hot row), so they are
    # serialized; spread over merchants they are not.
    Scenario(name="POST /payout hot merchant", method="POST", path="/payout", auth=True, body=payout_body(),
             setup=hot_merchant_setup, expect=frozenset({201}), baseline="GET /account", p99_ms_max=60,
             peer=True),
    # Its floor, right after it (see the floors at the end).
    Scenario(name="FLOOR payout write set, hot merchant", method="POST", path="/floor/payout", auth=True,
             body=payout_body(), setup=hot_merchant_setup, expect=frozenset({201}), baseline="GET /account",
             floor=True),
    Scenario(name="POST /payout 8 merchants", method="POST", path="/payout", body=payout_body(),
             headers=many_merchants_headers, setup=merchants_setup, expect=frozenset({201}),
             baseline="GET /account", peer=True),
    # Floors (bench/floor.py, `run.py --floor`): the same bodies, to endpoints that only authenticate, read the body
    # and write what the real endpoint must write, with SQL and parameters prepared once. The PIX and payout floors
    # are declared right after their endpoints: a round measures each endpoint and its floor one after the other
    # (with the peer's window of the endpoint between them), so a machine whose speed drifts within a run moves both
    # alike (until 2026-11-29 they came last, half a minute after their endpoints, and PIX against its floor moved
    # 0.62–0.93 by round in one run).
    Scenario(name="FLOOR POST, no database", method="POST", path="/floor/post", auth=True, body=payin_body("PIX"),
             expect=frozenset({201}), baseline="GET /account", floor=True),
]


def by_name() -> dict[str, Scenario]:
    return {scenario.name: scenario for scenario in SCENARIOS}


def check(scenarios: list[Scenario]) -> list[str]:
    """Problems in the list itself, so a typo in a baseline name fails before the server starts."""
    problems = []
    names = [scenario.name for scenario in scenarios]
    problems += [f"duplicate scenario name {name!r}" for name in sorted(set(names)) if names.count(name) > 1]
    for scenario in scenarios:
        if scenario.baseline is not None and scenario.baseline not in names:
            problems.append(f"{scenario.name!r}: unknown baseline {scenario.baseline!r}")
        if scenario.target is not None and scenario.baseline is None:
            problems.append(f"{scenario.name!r}: a target needs a baseline")
        if scenario.p99_ms_max is not None and scenario.p99_ms_max <= 0:
            problems.append(f"{scenario.name!r}: p99_ms_max must be positive")
        if scenario.setup is not None and not isinstance(scenario.path, str):
            problems.append(f"{scenario.name!r}: a setup fills the placeholders of a string path")
        if scenario.method.upper() != scenario.method:
            problems.append(f"{scenario.name!r}: method must be upper case")
    return problems
