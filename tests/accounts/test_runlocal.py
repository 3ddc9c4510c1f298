"""`make run`'s terminal (issue 37, item 19): beat's schedule chatter and Celery's per-task lines stay out of it, and
the e-mails the service sends (password resets, invitations) are files under LOCAL_DIR/mail/, whose folder the banner
names, instead of text scrolled past between log lines."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from accounts.management.commands.runlocal import local_environment, public_base_url


def test_the_local_environment_writes_e_mails_to_a_folder_under_local_dir(tmp_path):
    environment, mail_dir = local_environment({"PATH": "/usr/bin"}, local_dir=tmp_path)

    assert mail_dir == tmp_path / "mail" and mail_dir.is_dir()
    assert environment["EMAIL_URL"] == "filemail://"
    assert (environment["WORKER_TASK_LOG_LEVEL"], environment["LOG_FORMAT"]) == ("WARNING", "text")


def test_an_operators_email_url_is_kept(tmp_path):
    environment, mail_dir = local_environment({"EMAIL_URL": "smtp://mail.example.com:25"}, local_dir=tmp_path)

    assert (environment["EMAIL_URL"], mail_dir) == ("smtp://mail.example.com:25", None)
    assert not (tmp_path / "mail").exists()


def test_an_e_mail_sent_under_make_runs_environment_is_a_file_in_the_folder(tmp_path):
    environment, mail_dir = local_environment({**os.environ, "LOCAL_DIR": str(tmp_path)}, local_dir=tmp_path)

    subprocess.run([sys.executable, "manage.py", "sendtestemail", "ana@example.com"], env=environment,
                   cwd=settings.BASE_DIR, check=True, capture_output=True, timeout=120)

    [message] = list(mail_dir.iterdir())
    text = message.read_text()
    assert "To: ana@example.com" in text and "Subject: Test email from" in text


def test_beat_and_the_per_task_lines_are_quiet_under_make_run(tmp_path):
    environment, _ = local_environment({**os.environ, "LOG_LEVEL": "INFO"}, local_dir=tmp_path)
    probe = ("import django, logging; django.setup(); "
             "print(*[logging.getLogger(name).isEnabledFor(logging.INFO) for name in "
             "('celery.beat', 'celery.app.trace', 'celery.worker.strategy', 'payments', 'api.request')])")
    environment["DJANGO_SETTINGS_MODULE"] = "config.settings"

    shown = subprocess.run([sys.executable, "-c", probe], env=environment, cwd=settings.BASE_DIR, check=True,
                           capture_output=True, text=True, timeout=120).stdout

    # Beat's "Sending due task", the worker's "received" and "succeeded": off; the service's own events: on.
    assert shown.split() == ["False", "False", "False", "True", "True"]


def test_beat_is_at_warning_in_every_setup():
    assert not logging.getLogger("celery.beat").isEnabledFor(logging.INFO)
    assert logging.getLogger("celery.beat").isEnabledFor(logging.WARNING)
    assert Path(settings.BASE_DIR, ".env.example").read_text().count("WORKER_TASK_LOG_LEVEL=") == 1


def test_a_tunnels_public_url_is_kept_so_that_efi_can_notify_a_laptop():
    """Issue 37, item 20: `make run` replaced PUBLIC_BASE_URL with http://127.0.0.1:8000, so a laptop behind an https
    tunnel could not register a notification URL Efí would call."""
    assert public_base_url({}, host="127.0.0.1", port="8000") == "http://127.0.0.1:8000"
    assert public_base_url({"PUBLIC_BASE_URL": "https://quiet-fox.trycloudflare.com"}, host="127.0.0.1",
                           port="8000") == "https://quiet-fox.trycloudflare.com"
