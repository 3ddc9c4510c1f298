"""gunicorn.conf.py (issue 17, goal 7): what `gunicorn config.wsgi:application` runs with, read the way gunicorn
reads it (its own config loader), so a typo in a setting's name fails here rather than being ignored in production."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gunicorn.config import Config

CONF = Path(__file__).resolve().parents[2] / "gunicorn.conf.py"


def loaded(monkeypatch, concurrency: str | None) -> Config:
    if concurrency is None:
        monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    else:
        monkeypatch.setenv("WEB_CONCURRENCY", concurrency)
    namespace: dict = {"__file__": str(CONF)}
    exec(compile(CONF.read_text(), str(CONF), "exec"), namespace)  # our own file, run as gunicorn runs it
    config = Config()
    for name, value in namespace.items():
        if name in config.settings:
            config.set(name, value)
        else:
            assert name.startswith("__") or name == "os", f"not a gunicorn setting: {name}"
    return config


@pytest.mark.parametrize(("concurrency", "workers"), [(None, len(os.sched_getaffinity(0)) + 1), ("5", 5)])
def test_sync_workers_one_more_than_the_cores_unless_web_concurrency_says(monkeypatch, concurrency, workers):
    config = loaded(monkeypatch, concurrency)

    assert (config.worker_class_str, config.workers) == ("sync", workers)


def test_a_worker_freezes_what_loading_the_application_made(monkeypatch):
    import gc

    config = loaded(monkeypatch, None)
    before = gc.get_freeze_count()
    try:
        config.post_worker_init(None)
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()
