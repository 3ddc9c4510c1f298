"""The benchmark's scenarios, in one list: add an endpoint here and `run.py` measures it.

A scenario names one request (method, path, per-request body and headers). It may carry a target: the share of a
baseline scenario's req/s it must sustain. Both are measured in the same run, on the same server and machine, so the
ratio means something on any laptop where an absolute req/s would not.

Callables (`path`, `body`, `headers`) run in the load generator once per request, so a POST can carry a fresh
Idempotency-Key or referenceId every time; keep them cheap, they share the client's CPU budget.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scenario:
    name: str
    method: str
    path: str | Callable[[], str]
    auth: bool = False  # HTTP Basic with the bench merchant's test key pair
    body: Callable[[], Any] | None = None  # JSON-encoded; sent with Content-Type: application/json
    headers: Callable[[], dict[str, str]] | None = None
    expect: frozenset[int] = frozenset({200})  # any other status counts as an error
    baseline: str | None = None  # the name of the scenario the target is a share of
    target: float | None = None  # e.g. 0.60: at least 60% of the baseline's req/s

    @property
    def is_static(self) -> bool:
        """Nothing varies per request: the client encodes the request once and resends the same bytes."""
        return self.body is None and self.headers is None and isinstance(self.path, str)


def unique_id() -> str:
    return uuid.uuid4().hex


def idempotency_headers() -> dict[str, str]:
    """A new Idempotency-Key per request: a repeated one would be a replay, which is a different (cheaper) path."""
    return {"Idempotency-Key": unique_id()}


SCENARIOS: list[Scenario] = [
    # The yardstick: a bare Django JsonResponse, no auth, no database. Everything else is a share of it.
    Scenario(name="GET /ping", method="GET", path="/ping"),
    Scenario(name="GET /account", method="GET", path="/account", auth=True, baseline="GET /ping", target=0.60),
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
        if (scenario.target is None) != (scenario.baseline is None):
            problems.append(f"{scenario.name!r}: a target needs a baseline and a baseline a target")
        if scenario.method.upper() != scenario.method:
            problems.append(f"{scenario.name!r}: method must be upper case")
    return problems
