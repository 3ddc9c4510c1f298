"""Prometheus metrics: the plumbing every app records into, and `GET /metrics` (docs/operations.md).

Counters and histograms are incremented where things happen (each app declares its own with `counter` and
`histogram`); numbers the database already knows (charges by status, the webhook queue) are read at scrape time by
collectors the apps register with `collector_register` from their AppConfig.ready().

Gunicorn workers and Celery processes are separate processes: with PROMETHEUS_MULTIPROC_DIR set (prometheus_client
reads it when it is first imported, so it must be in the environment, or in `.env`, before the process starts) each
process writes its counters to memory-mapped files in that directory and a scrape sums them over every process of the
machine. `metrics_dir_clean` empties it of the files of processes that are gone; the run commands call it at start.
"""

from __future__ import annotations

import hmac
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.registry import Collector

from core import errors
from core.middleware import json_error_response

logger = logging.getLogger(__name__)

# Seconds: API requests take milliseconds; rail calls and webhook posts up to their timeouts.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

_collectors: list[Callable[[], Iterable]] = []


def counter(name: str, documentation: str, labels: tuple[str, ...]) -> Counter:
    return Counter(name, documentation, labels)


def histogram(name: str, documentation: str, labels: tuple[str, ...]) -> Histogram:
    return Histogram(name, documentation, labels, buckets=LATENCY_BUCKETS)


def collector_register(collect: Callable[[], Iterable]) -> None:
    """Add a scrape-time collector: `collect()` yields prometheus_client metric families (GaugeMetricFamily, ...)."""
    if collect not in _collectors:
        _collectors.append(collect)


class _ScrapeTimeCollector(Collector):
    def collect(self) -> Iterable:
        for collect in _collectors:
            try:
                yield from collect()
            except Exception:
                # A database that does not answer costs these gauges, not the whole scrape.
                logger.exception("metrics.collector_failed", extra={"collector": getattr(collect, "__name__", "")})


def multiprocess_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def metrics_render() -> bytes:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(_ScrapeTimeCollector())
    if multiprocess_dir():
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY) + generate_latest(registry)


def metrics_dir_clean(path: str | None = None) -> int:
    """Create the multiprocess directory and delete the files of processes no longer running (the files are named
    after their process id); a running sibling's files stay, so one process restarting never resets the others.
    Returns the number of files removed."""
    directory = Path(path or multiprocess_dir())
    if not str(directory) or str(directory) == ".":
        return 0
    directory.mkdir(parents=True, exist_ok=True)
    removed = 0
    for file in directory.glob("*.db"):
        pid = file.stem.rpartition("_")[2]
        if pid.isdigit() and _process_alive(int(pid)):
            continue
        file.unlink(missing_ok=True)
        removed += 1
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


REQUESTS = counter("pagamentos_http_requests_total", "HTTP requests answered, by route name, method and status",
                   ("route", "method", "status"))
REQUEST_SECONDS = histogram("pagamentos_http_request_duration_seconds", "Time to answer an HTTP request, by route",
                            ("route", "method"))


class RequestMetricsMiddleware:
    """Counts and times every request under its route's name (`payins`, `dashboard:overview`), never the raw path,
    so ids in URLs cannot make a label per object. First in MIDDLEWARE: the time includes every other middleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = request.resolver_match
        route = match.view_name if match is not None else (
            "static" if request.path.startswith(settings.STATIC_URL) else "unmatched")
        method = request.method if request.method in _METHODS else "other"
        REQUESTS.labels(route, method, str(response.status_code)).inc()
        REQUEST_SECONDS.labels(route, method).observe(time.perf_counter() - started)
        return response


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Answers only `Authorization: Bearer <METRICS_TOKEN>`; without METRICS_TOKEN the endpoint does not exist."""
    token = settings.METRICS_TOKEN
    if not token:
        return json_error_response(errors.NotFound())
    scheme, _, provided = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(provided.strip().encode(), token.encode()):
        response = json_error_response(errors.AuthenticationRequired("Send Authorization: Bearer <METRICS_TOKEN>"))
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics_render(), content_type=CONTENT_TYPE_LATEST)
