"""The systemd units in deploy/systemd/: what they run exists in the venv and matches docs/operations.md;
deploy/smoke.py (run by CI with a runtime-only venv) starts them as written."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("deploy_smoke", ROOT / "deploy" / "smoke.py")
smoke = importlib.util.module_from_spec(spec)
spec.loader.exec_module(smoke)


@pytest.mark.parametrize("name", smoke.UNIT_NAMES)
def test_each_unit_runs_a_program_of_the_venv_restarts_always_and_prepares_the_metrics_directory(name):
    unit = smoke.unit_read(ROOT / "deploy" / "systemd" / name)
    venv = Path(sys.executable).parent.parent

    (start,) = unit["ExecStart"]
    command = smoke.command_map(start, venv=venv, state=Path("/tmp/state"), port=8123)

    assert Path(command[0]).is_file(), command[0]
    assert unit["Restart"] == ["always"]
    assert "PROMETHEUS_MULTIPROC_DIR=/run/pagamentos/metrics" in unit["Environment"]
    assert unit["ExecStartPre"] == ["/opt/pagamentos/.venv/bin/python manage.py metrics_dir_clean"]


def test_the_units_run_the_operations_guides_production_commands():
    readme = (ROOT / "docs" / "operations.md").read_text()
    for name in smoke.UNIT_NAMES:
        (start,) = smoke.unit_read(ROOT / "deploy" / "systemd" / name)["ExecStart"]
        program = start.removeprefix("/opt/pagamentos/.venv/bin/").split(" --schedule")[0]
        assert program in readme, program


def test_install_paths_are_mapped_onto_the_checkout():
    line = ("/opt/pagamentos/.venv/bin/gunicorn config.wsgi:application --bind 0.0.0.0:8000 "
            "--schedule /var/lib/pagamentos/s")

    command = smoke.command_map(line, venv=Path("/v"), state=Path("/s"), port=9000)

    assert command == ["/v/bin/gunicorn", "config.wsgi:application", "--bind", "127.0.0.1:9000", "--schedule",
                       "/s/lib/s"]
