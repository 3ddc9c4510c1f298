"""`make run`: the whole service on one laptop, web server, Celery worker and scheduler, on the embedded default."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from core.metrics import metrics_dir_clean

# The quick start runs webhooks against receivers on this machine, over plain HTTP: a local-only relaxation of
# the SSRF guard, said out loud when the service starts.
LOCAL_ENVIRONMENT = {
    "DEBUG": "true",
    "LOG_FORMAT": "text",
    "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
    "WEBHOOKS_ALLOW_HTTP": "true",
    # The terminal shows what happens (requests, deliveries, errors), not a line for each run of each periodic task
    # (beat is at WARNING in every setup: config/settings.py).
    "WORKER_TASK_LOG_LEVEL": "WARNING",
}


def local_environment(environ: Mapping[str, str], *, local_dir: Path) -> tuple[dict[str, str], Path | None]:
    """The environment of `make run`'s processes, and the folder e-mails are written to: one file per message under
    LOCAL_DIR/mail/ (found there, not scrolled past in the terminal), unless EMAIL_URL says where they go (None)."""
    environment = {**environ, **LOCAL_ENVIRONMENT}
    if environ.get("EMAIL_URL"):
        return environment, None
    mail_dir = local_dir / "mail"  # where config/settings.py points filemail://
    mail_dir.mkdir(parents=True, exist_ok=True)
    environment["EMAIL_URL"] = "filemail://"
    return environment, mail_dir


def public_base_url(environ: Mapping[str, str], *, host: str, port: str) -> str:
    """The URL payers and the bank reach: this machine, unless PUBLIC_BASE_URL names a public https tunnel to it
    (docs/going-live.md: Efí notifies only https URLs)."""
    return environ.get("PUBLIC_BASE_URL") or f"http://{host}:{port}"


class Command(BaseCommand):
    help = "Migrate, seed the demo merchant, and run the web server, a Celery worker and the scheduler together."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("PORT", "8000"))

    def handle(self, *args, host: str, port: str, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        python = sys.executable
        local, mail_dir = local_environment(os.environ, local_dir=Path(settings.LOCAL_DIR).resolve())
        # Fixed argument lists of our own programs and no shell: nothing here comes from outside.
        seeded = subprocess.run([python, "manage.py", "seed_demo", "--json"],  # noqa: S603
                                check=True, capture_output=True, text=True, cwd=settings.BASE_DIR, env=local)
        demo = json.loads(seeded.stdout.strip().splitlines()[-1])
        # The web server and the worker sum their counters through one directory (GET /metrics, core/metrics.py),
        # emptied of the files of earlier runs.
        metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or str(Path(settings.LOCAL_DIR) / "metrics")
        metrics_dir_clean(metrics_dir)
        public = public_base_url(os.environ, host=host, port=port)
        environment = {**local, "PUBLIC_BASE_URL": public, "PROMETHEUS_MULTIPROC_DIR": metrics_dir}
        commands = [
            [python, "-m", "celery", "-A", "config", "worker", "--beat", "--loglevel", "INFO", "--pool", "threads",
             "--concurrency", "8"],
            [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
        ]
        processes = [subprocess.Popen(command, env=environment, cwd=settings.BASE_DIR)  # noqa: S603
                     for command in commands]
        base = f"http://{host}:{port}"
        embedded = str(settings.LOCAL_DIR) in str(settings.DATABASES["default"].get("OPTIONS", {}).get("host", ""))
        services = "embedded, under .local/" if embedded else "DATABASE_URL, CACHE_URL, CELERY_BROKER_URL"
        mails = (f"written to {mail_dir}/, one file a message (password resets, invitations)" if mail_dir
                 else "sent as EMAIL_URL says")
        self.stdout.write(self.style.SUCCESS(f"""
Pagamentos is running (web, Celery worker and scheduler on PostgreSQL and Redis: {services}).
  Dashboard:  {base}/dashboard/   log in as {demo['email']} / {demo['password']}
  Admin:      {base}/admin/       log in as {demo['staffEmail']} / {demo['staffPassword']}
  API docs:   {base}/docs
  Test keys:  public {demo['publicKey']}
              secret {demo['secretKey']}
  Try it:     curl -u {demo['publicKey']}:{demo['secretKey']} {base}/account
  E-mails:    {mails}
  Public URL: {public} (PUBLIC_BASE_URL: the payment pages' links, and where Efí notifies)
Local mode allows webhooks to http:// and private addresses (WEBHOOKS_ALLOW_HTTP, WEBHOOKS_ALLOW_PRIVATE_TARGETS).
Press Ctrl-C to stop.
"""))
        self._wait(processes)

    def _wait(self, processes: list[subprocess.Popen]) -> None:
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(p.poll() is None for p in processes):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        failed = [p for p in processes if p.returncode not in (0, -signal.SIGTERM, None)]
        if failed and not stopping:
            sys.exit(1)
