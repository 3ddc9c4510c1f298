"""`manage.py metrics_dir_clean`: prepares PROMETHEUS_MULTIPROC_DIR before a process starts (the systemd units'
ExecStartPre; `runlocal` does it itself). Removes the counter files of processes that are gone, keeps the others'."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.metrics import metrics_dir_clean, multiprocess_dir


class Command(BaseCommand):
    help = "Create PROMETHEUS_MULTIPROC_DIR and delete the metric files of processes no longer running."

    def handle(self, *args, **options) -> None:
        if not multiprocess_dir():
            raise CommandError("PROMETHEUS_MULTIPROC_DIR is not set: nothing to clean")
        removed = metrics_dir_clean()
        self.stdout.write(f"metrics: {removed} file(s) of finished processes removed from {multiprocess_dir()}")
