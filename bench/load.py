"""The load generator: closed-loop HTTP/1.1 clients against 127.0.0.1, in one or more processes.

`run.py` starts it as a separate process, so the client never runs inside the server's interpreter. The machine is
small and the client shares it with gunicorn, PostgreSQL and Redis, so every client cycle is CPU the server does not
get. Hence raw non-blocking sockets on one selector per process (no http.client, no threads), requests encoded once
when nothing varies, and a parser that reads only the status line, Content-Length and Connection.

Each "user" sends a request, waits for the whole response, sends the next: `--concurrency` users in total, split
over `--procs` processes. Responses completing in the warm-up are discarded; only the measured window counts. A
connection the server closes (gunicorn's sync worker closes after every response) is reopened, and the connect time
counts in the next request's latency, as it would for a real client.

Usage: load.py --port P --scenario NAME [--duration S] [--warmup S] [--concurrency N] [--procs N] [--server-pids L]
The key pair comes from BENCH_PUBLIC_KEY / BENCH_SECRET_KEY (kept out of argv, where `ps` shows it), the values a
scenario's setup created (its path's placeholders) from BENCH_SETUP_VALUES, a JSON object. Prints one JSON
object on stdout: the raw latencies of the window, status counts, connection failures and where the CPU went;
`report.py` turns those into figures.
"""

from __future__ import annotations

import argparse
import base64
import errno
import json
import multiprocessing
import os
import resource
import selectors
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

import scenarios as scenario_list
from scenarios import Scenario

HOST = "127.0.0.1"  # the only address this client ever connects to
RECV_BYTES = 65536
REQUEST_TIMEOUT = 10.0  # a request this slow counts as an error and its connection is replaced
RETRY_DELAY = 0.05  # after a failed connect: a server that is down must not turn the loop into a spin
START_DELAY = 0.3  # lets every process fork and open its sockets before the warm-up clock starts


# --- Requests --------------------------------------------------------------------------------------------------------
def _encode(method: str, path: str, headers: dict[str, str], body: bytes | None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", *(f"{name}: {value}" for name, value in headers.items())]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def request_factory(scenario: Scenario, port: int, public_key: str, secret_key: str,
                    values: dict[str, str] | None = None) -> Callable[[], bytes]:
    """A function returning the bytes of the next request: the same bytes for a static scenario, else fresh ones.
    `values` fill the placeholders of the path of a scenario with a setup."""
    base = {"Host": f"{HOST}:{port}", "Accept": "application/json", "User-Agent": "pagamentos-bench"}
    if scenario.auth:
        token = base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
        base["Authorization"] = f"Basic {token}"
    fixed_path = scenario.path if isinstance(scenario.path, str) else None
    if fixed_path is not None and scenario.setup is not None:
        try:
            fixed_path = fixed_path.format_map(values or {})
        except KeyError as error:
            raise RuntimeError(f"{scenario.name}: its setup gave no value for {error} (BENCH_SETUP_VALUES)") from None

    def build() -> bytes:
        path = fixed_path if fixed_path is not None else scenario.path()
        headers = {**base, **(scenario.headers() if scenario.headers else {})}
        body = json.dumps(scenario.body(), separators=(",", ":")).encode() if scenario.body else None
        return _encode(scenario.method, path, headers, body)

    if scenario.is_static:
        data = build()
        return lambda: data
    return build


# --- Responses -------------------------------------------------------------------------------------------------------
def parse_response(buffer: bytes) -> tuple[int, bool] | None:
    """(status, keep_alive) once `buffer` holds a whole response, else None.

    Django's CommonMiddleware sets Content-Length on every response of this app; chunked bodies are recognised by
    their terminating empty chunk, which is enough for JSON bodies."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buffer[:end].lower()
    at = head.find(b"\r\ncontent-length:")
    if at >= 0:
        line_end = head.find(b"\r\n", at + 2)
        length = int(head[at + 17 : line_end if line_end >= 0 else None])
        if len(buffer) < end + 4 + length:
            return None
    elif b"\r\ntransfer-encoding: chunked" in head:
        if not buffer.endswith(b"0\r\n\r\n"):
            return None
    keep_alive = b"\r\nconnection: close" not in head and not head.startswith(b"http/1.0")
    return int(head[9:12]), keep_alive


# --- One process's users ---------------------------------------------------------------------------------------------
class User:
    """One closed-loop client: its socket (None between connections), its request in flight and what came back."""

    __slots__ = ("inbox", "outbox", "retry_at", "sock", "started")

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.started = 0.0
        self.outbox = b""
        self.inbox = b""
        self.retry_at = 0.0


class Driver:
    def __init__(self, scenario: Scenario, port: int, next_request: Callable[[], bytes],
                 window: tuple[float, float]):
        self.scenario = scenario
        self.port = port
        self.next_request = next_request
        self.window_start, self.window_end = window
        self.selector = selectors.DefaultSelector()
        self.latencies: list[float] = []  # seconds, of expected-status responses completed in the window
        self.statuses: Counter[int] = Counter()
        self.failures: Counter[str] = Counter()  # connection-level problems in the window
        self.waiting: list[User] = []  # users whose connect failed, waiting for retry_at

    # Lifecycle of a request: begin -> (connect) -> send -> receive -> record -> begin again.
    def begin(self, user: User, now: float) -> None:
        user.started = now
        user.outbox = self.next_request()
        user.inbox = b""
        if user.sock is None:
            self.connect(user)
        else:
            self.send(user)

    def connect(self, user: User) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        code = sock.connect_ex((HOST, self.port))
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            self.fail(user, f"connect: {errno.errorcode.get(code, code)}", time.monotonic())
            return
        user.sock = sock
        self.selector.register(sock, selectors.EVENT_WRITE, user)

    def send(self, user: User) -> None:
        try:
            sent = user.sock.send(user.outbox)
        except BlockingIOError:
            sent = 0
        except OSError as error:
            self.fail(user, f"send: {type(error).__name__}", time.monotonic())
            return
        user.outbox = user.outbox[sent:]
        events = selectors.EVENT_WRITE if user.outbox else selectors.EVENT_READ
        if user.sock.fileno() in self.selector.get_map():
            self.selector.modify(user.sock, events, user)
        else:
            self.selector.register(user.sock, events, user)

    def on_writable(self, user: User) -> None:
        code = user.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self.fail(user, f"connect: {errno.errorcode.get(code, code)}", time.monotonic())
            return
        self.send(user)

    def on_readable(self, user: User) -> None:
        try:
            chunk = user.sock.recv(RECV_BYTES)
        except BlockingIOError:
            return
        except OSError as error:
            self.fail(user, f"recv: {type(error).__name__}", time.monotonic())
            return
        now = time.monotonic()
        if not chunk:
            self.fail(user, "closed before a whole response", now)
            return
        user.inbox += chunk
        parsed = parse_response(user.inbox)
        if parsed is None:
            return
        status, keep_alive = parsed
        self.record(user, status, now)
        if not keep_alive:
            self.drop(user)
        self.begin(user, now)

    # Outcomes
    def in_window(self, now: float) -> bool:
        return self.window_start <= now < self.window_end

    def record(self, user: User, status: int, now: float) -> None:
        if not self.in_window(now):
            return
        self.statuses[status] += 1
        if status in self.scenario.expect:
            self.latencies.append(now - user.started)

    def fail(self, user: User, reason: str, now: float) -> None:
        if self.in_window(now):
            self.failures[reason] += 1
        self.drop(user)
        user.retry_at = now + RETRY_DELAY
        self.waiting.append(user)

    def drop(self, user: User) -> None:
        if user.sock is None:
            return
        if user.sock.fileno() in self.selector.get_map():
            self.selector.unregister(user.sock)
        user.sock.close()
        user.sock = None

    # The loop: bounded by window_end whatever the server does.
    def run(self, users: int) -> dict:
        now = time.monotonic()
        for _ in range(users):
            self.begin(User(), now)
        cpu_at_start = None
        next_expiry_check = now + 0.5
        while (now := time.monotonic()) < self.window_end:
            if cpu_at_start is None and now >= self.window_start:
                cpu_at_start = _cpu_seconds()
            for key, mask in self.selector.select(timeout=min(0.05, self.window_end - now)):
                if mask & selectors.EVENT_WRITE:
                    self.on_writable(key.data)
                else:
                    self.on_readable(key.data)
            if self.waiting:
                self.retry_waiting()
            if now >= next_expiry_check:  # scanning every user on every event would cost more than the parsing
                self.expire_slow()
                next_expiry_check = now + 0.5
        cpu = _cpu_seconds() - (cpu_at_start if cpu_at_start is not None else _cpu_seconds())
        self.close_all()
        return {"latencies": self.latencies, "statuses": dict(self.statuses), "failures": dict(self.failures),
                "cpu_seconds": cpu}

    def retry_waiting(self) -> None:
        now = time.monotonic()
        ready = [user for user in self.waiting if user.retry_at <= now]
        if ready:
            self.waiting = [user for user in self.waiting if user.retry_at > now]
            for user in ready:
                self.begin(user, now)

    def expire_slow(self) -> None:
        now = time.monotonic()
        for key in list(self.selector.get_map().values()):
            if now - key.data.started > REQUEST_TIMEOUT:
                self.fail(key.data, "timeout", now)

    def close_all(self) -> None:
        for key in list(self.selector.get_map().values()):
            self.drop(key.data)
        self.selector.close()


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- Processes -------------------------------------------------------------------------------------------------------
def _child(pipe: Connection, scenario: Scenario, port: int, users: int, window: tuple[float, float],
           credentials: tuple[str, str], values: dict[str, str]) -> None:
    next_request = request_factory(scenario, port, *credentials, values)
    pipe.send(Driver(scenario, port, next_request, window).run(users))
    pipe.close()


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def drive(scenario: Scenario, port: int, *, duration: float, warmup: float, concurrency: int, procs: int,
          server_pids: list[int], database: str, credentials: tuple[str, str] = ("", ""),
          values: dict[str, str] | None = None) -> dict:
    """Run the users in `procs` forked processes over one shared window and merge what they measured.
    `credentials` is the key pair (public, secret) of a scenario with auth; `values` fill its path's placeholders."""
    request_factory(scenario, port, *credentials, values)  # a missing placeholder value fails here, not in a child
    window_start = time.monotonic() + START_DELAY + warmup  # CLOCK_MONOTONIC is system-wide: children share it
    window = (window_start, window_start + duration)
    context = multiprocessing.get_context("fork")
    children = []
    for users in _split(concurrency, procs):
        if users:
            parent_end, child_end = context.Pipe(duplex=False)
            process = context.Process(target=_child, daemon=True,
                                      args=(child_end, scenario, port, users, window, credentials, values or {}))
            process.start()
            child_end.close()
            children.append((process, parent_end))
    cpu = watch_cpu(window, server_pids, database)
    parts = [_collect(process, pipe, deadline=window[1] + 15) for process, pipe in children]
    statuses: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    for part in parts:
        statuses.update({str(code): count for code, count in part["statuses"].items()})
        failures.update(part["failures"])
    cpu["client"] = round(sum(part["cpu_seconds"] for part in parts) / duration, 3)
    return {
        "name": scenario.name,
        "duration": duration,
        # Whole microseconds: exact enough for percentiles, and a third of the JSON of floats.
        "latencies_us": [round(value * 1e6) for part in parts for value in part["latencies"]],
        "statuses": dict(statuses),
        "failures": dict(failures),
        "cpu": cpu,
        "client_procs": len(parts),
    }


def _collect(process: multiprocessing.Process, pipe: Connection, *, deadline: float) -> dict:
    if not pipe.poll(max(deadline - time.monotonic(), 0)):
        process.kill()
        raise RuntimeError("a load process did not report in time")
    part = pipe.recv()
    process.join(timeout=5)
    return part


# --- Where the CPU went ----------------------------------------------------------------------------------------------
def _machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot, from the first line of /proc/stat."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def process_ticks(pids: list[int]) -> dict[int, int]:
    """utime + stime of each pid still alive."""
    ticks = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "(comm)", which may hold spaces
        ticks[pid] = int(fields[11]) + int(fields[12])
    return ticks


def ticks_used(start: dict[int, int], end: dict[int, int]) -> int:
    """Ticks used between two samples by the pids alive at the end (those born in between: all of theirs); a pid that
    died in between is lost: a floor, never negative."""
    return sum(end[pid] - start.get(pid, 0) for pid in end)


def pids_matching(comm: str, cmdline_part: str = "") -> list[int]:
    """Processes whose command name is `comm` and whose command line contains `cmdline_part`. PostgreSQL names each
    backend "postgres: <cluster>: <user> <database> <client> <state>", so the database name picks the service's own
    connections out of those of anything else using the same server."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != comm:
                continue
            if cmdline_part and cmdline_part not in (entry / "cmdline").read_text(errors="replace"):
                continue
        except OSError:
            continue
        found.append(int(entry.name))
    return found


def watch_cpu(window: tuple[float, float], server_pids: list[int], database: str) -> dict:
    """Cores used in the window by the machine, gunicorn's workers, their PostgreSQL backends and Redis. Sampled by
    this parent process, which is otherwise idle while its children drive the load: it tells a saturated server from
    a starved client or a machine busy with something else."""
    time.sleep(max(window[0] - time.monotonic(), 0))

    def groups() -> dict[str, list[int]]:
        return {"gunicorn": server_pids, "postgres": pids_matching("postgres", f" {database} "),
                "redis": pids_matching("redis-server")}

    machine_start = _machine_ticks()
    start = {name: process_ticks(pids) for name, pids in groups().items()}
    time.sleep(max(window[1] - time.monotonic(), 0))
    machine_end = _machine_ticks()
    seconds = window[1] - window[0]
    ticks_per_second = os.sysconf("SC_CLK_TCK")
    # Listed again at the end: a backend born in the window (a gunicorn worker reconnecting when its connection
    # reached CONN_MAX_AGE) spent all its ticks in it; listed only at the start, it was missed, and a window in which
    # every worker reconnected showed PostgreSQL at 0.00.
    cpu = {name: round(ticks_used(start[name], process_ticks(pids)) / ticks_per_second / seconds, 2)
           for name, pids in groups().items()}
    total_ticks = machine_end[1] - machine_start[1]
    busy = (machine_end[0] - machine_start[0]) / total_ticks * (os.cpu_count() or 1) if total_ticks else 0.0
    cpu["machine"] = round(busy, 2)
    return cpu


def machine_busy(seconds: float) -> float:
    """Cores busy over the next `seconds`: run.py's check that the machine is quiet before it measures."""
    start = _machine_ticks()
    time.sleep(seconds)
    end = _machine_ticks()
    total = end[1] - start[1]
    return (end[0] - start[0]) / total * (os.cpu_count() or 1) if total else 0.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Closed-loop HTTP load against 127.0.0.1 (run by bench/run.py).")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--scenario", required=True, help="a name from bench/scenarios.py")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--procs", type=int, default=1)
    parser.add_argument("--server-pids", default="", help="comma-separated pids of the server, for CPU accounting")
    parser.add_argument("--database", default="pagamentos_bench", help="the server's database, for CPU accounting")
    args = parser.parse_args(argv)
    if args.duration <= 0 or args.warmup < 0 or args.concurrency < 1 or args.procs < 1:
        parser.error("duration must be > 0, warmup >= 0, concurrency and procs >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scenario = scenario_list.by_name().get(args.scenario)
    if scenario is None:
        print(f"unknown scenario {args.scenario!r}", file=sys.stderr)
        return 2
    result = drive(scenario, args.port, duration=args.duration, warmup=args.warmup, concurrency=args.concurrency,
                   procs=min(args.procs, args.concurrency),
                   server_pids=[int(pid) for pid in args.server_pids.split(",") if pid.strip()],
                   database=args.database,
                   credentials=(os.environ.get("BENCH_PUBLIC_KEY", ""), os.environ.get("BENCH_SECRET_KEY", "")),
                   values=json.loads(os.environ.get("BENCH_SETUP_VALUES") or "{}"))
    json.dump(result, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
