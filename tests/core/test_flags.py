"""core.cache's flags, which every process of an installation sees (they are in Redis): set once, until they expire
or are cleared."""

from __future__ import annotations

import time

from core import cache as shared_cache


def test_the_first_caller_sets_the_flag_and_every_later_one_finds_it_set():
    assert shared_cache.flag_set("test:flag", seconds=60) is True
    assert shared_cache.flag_set("test:flag", seconds=60) is False

    shared_cache.flag_clear("test:flag")

    assert shared_cache.flag_set("test:flag", seconds=60) is True


def test_a_flag_expires_after_its_seconds():
    assert shared_cache.flag_set("test:flag", seconds=60) is True
    assert 55 <= shared_cache.redis_client().ttl("test:flag") <= 60


def test_an_expired_flag_is_set_again():
    assert shared_cache.flag_set("test:flag", seconds=1) is True
    shared_cache.redis_client().pexpire("test:flag", 1)
    time.sleep(0.01)
    assert shared_cache.flag_set("test:flag", seconds=60) is True
