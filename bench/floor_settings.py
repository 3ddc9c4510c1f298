"""The service's settings with the floors' URLs (bench/floor.py) in front of its own: what `python -m bench` serves on
the floors' gunicorn, from this tree only."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor"
