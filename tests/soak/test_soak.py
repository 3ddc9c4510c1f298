"""The soak test in its short form (issue 7): tests/soak/soak.py for 45 seconds against the whole stack (gunicorn,
PostgreSQL, its own redis-server, a Celery worker SIGKILLed twice and beat, Redis restarted once), every invariant
checked at the end. See tests/soak/soak.py for what it proves.

It needs the real services, like CI has them, but uses none of the test run's state: its own database
(`pagamentos_soak_ci`, dropped and created again) and its own redis-server on a free port. About two minutes.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings

SOAK = settings.BASE_DIR / "tests" / "soak" / "soak.py"
TIMEOUT = 420  # seconds; the soak itself takes about 120 on two busy cores and stops every process it started


def test_a_short_soak_keeps_every_invariant():
    command = [sys.executable, str(SOAK), "--duration", "45", "--clients", "8", "--merchants", "4",
               "--database", "pagamentos_soak_ci"]

    try:
        done = subprocess.run(command, cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=TIMEOUT,
                              check=False)
    except subprocess.TimeoutExpired as error:  # run() has killed it; its children get SIGTERM as it dies
        pytest.fail(f"the soak took over {TIMEOUT} s:\n{_text(error.stdout)}\n{_text(error.stderr)}")

    assert done.returncode == 0, f"soak exited {done.returncode}\n{done.stdout}\n{done.stderr}"


def _text(output: bytes | str | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""
