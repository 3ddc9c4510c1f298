"""Tests of the benchmark's own code (bench/), which the service never imports."""

import importlib.util
import sys

from django.conf import settings

BENCH = settings.BASE_DIR / "bench"


def bench_module(name: str):
    """bench/NAME.py, executed afresh as the module `bench_NAME`."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # the bench's own modules import each other by name
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
