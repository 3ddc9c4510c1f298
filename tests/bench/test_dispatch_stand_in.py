"""bench/server.py's DispatchStandIn: in a load run with no payout worker, the dispatch flag is deleted when its
dispatch comes due, as the worker's `payouts_dispatch` deletes it, and not before."""

from __future__ import annotations

import time

from core import cache as shared_cache
from payments.payouts import dispatch as payouts
from tests.bench import bench_module

server = bench_module("server")


def _held() -> str | None:
    return shared_cache.redis_client().get(payouts.DISPATCH_FLAG)


def _wait_until_cleared(limit: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if _held() is None:
            return time.monotonic() - start
        time.sleep(0.005)
    return None


def test_the_stand_in_clears_the_flag_when_its_dispatch_is_due_as_the_worker_does():
    assert (server.DispatchStandIn.KEY, server.DispatchStandIn.DELAY) == (
        payouts.DISPATCH_FLAG, payouts.DISPATCH_DELAY_SECONDS)
    database = shared_cache.redis_client().connection_pool.connection_kwargs["db"]
    with server.DispatchStandIn([database]) as stand_in:
        assert _held() is None
        assert shared_cache.flag_claim(payouts.DISPATCH_FLAG, f"{time.time() - 1:.6f}", seconds=60) is None  # overdue
        assert _wait_until_cleared(0.5) is not None

        assert shared_cache.flag_claim(payouts.DISPATCH_FLAG, f"{time.time() + 0.3:.6f}", seconds=60) is None
        time.sleep(0.15)
        assert _held() is not None  # not before it is due
        assert _wait_until_cleared(1.0) is not None

        assert shared_cache.flag_set(payouts.DISPATCH_FLAG, seconds=60)  # no due time: cleared 0.25 s after seen
        waited = _wait_until_cleared(1.0)
        assert waited is not None and waited >= 0.2
    assert stand_in.cleared == 3
