"""Start the service as the systemd units in deploy/systemd/ say, briefly, and check that it works.

    python deploy/smoke.py [--venv PATH] [--timeout SECONDS] [--absent pytest,playwright,...]

Reads each unit's Environment=, ExecStartPre= and ExecStart= lines and runs them as written, with the install paths
mapped onto this checkout (/opt/pagamentos -> here, /opt/pagamentos/.venv -> --venv, /run/pagamentos and
/var/lib/pagamentos -> a temporary directory, the web port -> a free one). The settings come from this process's
environment (the units' EnvironmentFile). Passes when the ExecStartPre commands succeed, the web answers /health
with 200 and /metrics with the token, the worker says it is ready, and the beat is still running; every process is
stopped in the end, whatever happened. CI runs it with a venv holding only requirements.txt (.ci/run). Needs only
the standard library, so it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
INSTALL_DIR = "/opt/pagamentos"
UNIT_NAMES = ("pagamentos-web.service", "pagamentos-worker.service", "pagamentos-beat.service")


def unit_read(path: Path) -> dict[str, list[str]]:
    """The [Service] section's keys, each with every value it is given (systemd allows repeated keys)."""
    values: dict[str, list[str]] = {}
    section = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and "=" in line:
            key, _, value = line.partition("=")
            values.setdefault(key.strip(), []).append(value.strip())
    return values


def command_map(line: str, *, venv: Path, state: Path, port: int) -> list[str]:
    words = shlex.split(line)
    mapped = []
    for word in words:
        word = word.replace(f"{INSTALL_DIR}/.venv", str(venv)).replace(INSTALL_DIR, str(ROOT))
        word = word.replace("/run/pagamentos", str(state / "run")).replace("/var/lib/pagamentos", str(state / "lib"))
        mapped.append(word.replace("0.0.0.0:8000", f"127.0.0.1:{port}"))
    return mapped


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_get(url: str, headers: dict | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 (http://127.0.0.1 only)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""


def wait_for(what: str, check, deadline: float, processes: dict) -> None:
    while time.monotonic() < deadline:
        if check():
            print(f"smoke: {what}: ok", flush=True)
            return
        dead = [name for name, (process, _) in processes.items() if process.poll() is not None]
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited while waiting for {what}")
        time.sleep(0.3)
    raise RuntimeError(f"timed out waiting for {what}")


def stop(processes: dict) -> None:
    for process, _ in processes.values():
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for process, _ in processes.values():
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv")
    parser.add_argument("--timeout", type=float, default=40.0, help="seconds for everything to come up")
    parser.add_argument("--absent", default="", help="comma-separated modules the venv must not have")
    args = parser.parse_args()
    # `timeout` (or a CI runner) ending this script still stops the service's processes (the finally in run()).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    venv = args.venv.resolve()
    for module in filter(None, args.absent.split(",")):
        found = subprocess.run([venv / "bin" / "python", "-c", f"import {module}"],  # noqa: S603
                               capture_output=True, check=False)
        if found.returncode == 0:
            print(f"smoke: {module} is installed in {venv}, and must not be", file=sys.stderr)
            return 1
    if args.absent:
        print(f"smoke: not installed: {args.absent}")
    with tempfile.TemporaryDirectory(prefix="pagamentos-smoke-") as temp:
        return run(venv=venv, state=Path(temp), timeout=args.timeout)


def run(*, venv: Path, state: Path, timeout: float) -> int:
    port, token = free_port(), secrets.token_urlsafe(24)
    processes: dict[str, tuple[subprocess.Popen, Path]] = {}
    for directory in ("run", "lib"):  # what RuntimeDirectory= and StateDirectory= create
        (state / directory).mkdir()
    try:
        for name in UNIT_NAMES:
            unit = unit_read(UNITS / name)
            environment = {**os.environ, "METRICS_TOKEN": token}
            for assignment in unit.get("Environment", []):
                key, _, value = assignment.partition("=")
                environment[key] = command_map(value, venv=venv, state=state, port=port)[0]
            for pre in unit.get("ExecStartPre", []):
                print(f"smoke: {name}: {pre}", flush=True)
                subprocess.run(command_map(pre, venv=venv, state=state, port=port), env=environment,  # noqa: S603
                               cwd=ROOT, check=True, timeout=60)
            (start,) = unit["ExecStart"]
            print(f"smoke: {name}: {start}", flush=True)
            log = state / f"{name}.log"
            with log.open("wb") as output:
                process = subprocess.Popen(command_map(start, venv=venv, state=state, port=port),  # noqa: S603
                                           env=environment, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                                           start_new_session=True)
            processes[name] = (process, log)
        deadline = time.monotonic() + timeout
        base = f"http://127.0.0.1:{port}"
        wait_for("web /health 200", lambda: http_get(f"{base}/health")[0] == 200, deadline, processes)
        worker_log = processes["pagamentos-worker.service"][1]
        wait_for("worker ready", lambda: b" ready." in worker_log.read_bytes(), deadline, processes)
        # Beat logs at WARNING (its INFO lines are a "Sending due task" per run): its schedule file says it started,
        # the shelve its scheduler opens when it starts (whatever suffix the dbm module gives it).
        wait_for("beat started", lambda: any((state / "lib").glob("celerybeat-schedule*")), deadline, processes)
        status, body = http_get(f"{base}/metrics", {"Authorization": f"Bearer {token}"})
        counted = [line for line in body.splitlines() if line.startswith("pagamentos_http_requests_total{")
                   and 'route="health"' in line and 'status="200"' in line]
        if status != 200 or not counted:
            raise RuntimeError(f"/metrics answered {status} without the health requests' counter")
        print("smoke: /metrics with the token: ok", flush=True)
        if http_get(f"{base}/metrics")[0] != 401:
            raise RuntimeError("/metrics answered without the token")
        time.sleep(1)
        dead = [name for name, (process, _) in processes.items() if process.poll() is not None]
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited")
        return 0
    except (RuntimeError, subprocess.SubprocessError, KeyError, ValueError) as error:
        print(f"smoke: FAILED: {error}", file=sys.stderr)
        for name, (_, log) in processes.items():
            lines = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else []
            print(f"--- {name} (last lines) ---\n" + "\n".join(lines), file=sys.stderr)
        return 1
    finally:
        stop(processes)


if __name__ == "__main__":
    sys.exit(main())
