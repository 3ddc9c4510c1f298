"""core.cache's flags, which every process of an installation sees (they are in Redis): set once, with the value its
setter gave, until they expire or are cleared."""

from __future__ import annotations

import time

from core import cache as shared_cache


def test_the_first_claim_sets_the_flag_and_every_later_one_reads_its_value():
    assert shared_cache.flag_claim("test:flag", "12.5", seconds=60) is None
    assert shared_cache.flag_claim("test:flag", "99", seconds=60) == "12.5"
    assert shared_cache.flag_set("test:flag", seconds=60) is False

    shared_cache.flag_clear("test:flag")
    assert shared_cache.flag_set("test:flag", seconds=60) is True
    assert shared_cache.flag_claim("test:flag", "7", seconds=60) == "1"  # flag_set's own value


def test_a_flag_expires_after_its_seconds():
    assert shared_cache.flag_set("test:flag", seconds=60) is True
    assert 55 <= shared_cache.redis_client().ttl("test:flag") <= 60


def test_an_expired_flag_is_set_again():
    assert shared_cache.flag_claim("test:flag", "old", seconds=1) is None
    shared_cache.redis_client().pexpire("test:flag", 1)
    time.sleep(0.01)
    assert shared_cache.flag_claim("test:flag", "new", seconds=60) is None
    assert shared_cache.flag_claim("test:flag", "other", seconds=60) == "new"
