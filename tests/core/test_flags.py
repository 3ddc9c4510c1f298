"""core.cache's flags, which every process of an installation sees: set once, with the value its setter gave, on
Redis and as a file beside the file broker (the laptop default)."""

from __future__ import annotations

import os
import time

import pytest

from core import cache as shared_cache


@pytest.fixture(params=["redis", "file"])
def backend(request, monkeypatch, settings, tmp_path) -> str:
    if request.param == "redis":
        if shared_cache.redis_client() is None:
            pytest.skip("needs Redis: set CACHE_URL and CELERY_BROKER_URL to redis://...")
    else:
        monkeypatch.setattr(shared_cache, "redis_client", lambda: None)
        settings.LOCAL_DIR = str(tmp_path)
    return request.param


def test_the_first_claim_sets_the_flag_and_every_later_one_reads_its_value(backend):
    assert shared_cache.flag_claim("test:flag", "12.5", seconds=60) is None
    assert shared_cache.flag_claim("test:flag", "99", seconds=60) == "12.5"
    assert shared_cache.flag_set("test:flag", seconds=60) is False

    shared_cache.flag_clear("test:flag")
    assert shared_cache.flag_set("test:flag", seconds=60) is True
    assert shared_cache.flag_claim("test:flag", "7", seconds=60) == "1"  # flag_set's own value


def test_an_expired_flag_is_set_again(backend):
    assert shared_cache.flag_claim("test:flag", "old", seconds=1) is None
    if backend == "file":  # aged by its modification time, against the reader's lifetime
        path = shared_cache._flag_path("test:flag")
        os.utime(path, (time.time() - 61, time.time() - 61))
    else:
        shared_cache.pipeline([("PEXPIRE", "test:flag", 1)])
        time.sleep(0.01)
    assert shared_cache.flag_claim("test:flag", "new", seconds=60) is None
    assert shared_cache.flag_claim("test:flag", "other", seconds=60) == "new"
