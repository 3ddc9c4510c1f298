"""Secrets that travel in URLs reach no log (issue 37, item 10): the Efí notification route's secret and the payer's
`/pay/<token>`, neither in the application's request log nor in the access log of gunicorn started as the shipped
systemd unit starts it (its ExecStart line, gunicorn.conf.py from the working directory)."""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.test import Client

from core.logging import ACCESS_LOG_PATH
from payments.models import PaymentMethod
from tests.conftest import subprocess_database_url
from tests.factories import MerchantFactory
from tests.payments.hosted.test_pages import make_payin
from tests.payments.payouts.test_payout_concurrency import _free_port

ROOT = Path(settings.BASE_DIR)
EFI_SECRET = "efi-route-secret-" + "k3Y9" * 8
NOTIFICATION = b'{"pix": [{"endToEndId": "not-a-pix-we-know"}]}'


def smoke_module():
    spec = importlib.util.spec_from_file_location("deploy_smoke", ROOT / "deploy" / "smoke.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_access_log_format_prints_the_applications_path_only():
    config = (ROOT / "gunicorn.conf.py").read_text()
    unit = (ROOT / "deploy" / "systemd" / "pagamentos-web.service").read_text()

    fmt = re.search(r"access_log_format = \((.*?)\)\n", config, re.S).group(1)

    assert "--access-logfile -" in unit and "--access-logformat" not in unit
    assert f"%({{{ACCESS_LOG_PATH}}}e)s" in fmt
    assert not {"%(r)s", "%(U)s", "%(q)s", "%(f)s", "%(u)s"} & set(re.findall(r"%\([^)]*\)s", fmt))


@pytest.mark.ledger_unchecked
@pytest.mark.django_db
def test_the_request_log_shows_the_notification_route_by_its_argument_name(caplog, client, settings):
    settings.PAYMENTS_RAIL, settings.EFI_WEBHOOK_SECRET = "efi", EFI_SECRET
    caplog.set_level(logging.DEBUG)

    statuses = [Client().post(path, NOTIFICATION, content_type="application/json").status_code for path in (
        f"/rails/efi/webhook/{EFI_SECRET}?ignorar=/pix", f"/rails/efi/webhook/{EFI_SECRET}/pix",
        "/rails/efi/webhook/wrong-secret", f"/rails/efi/{EFI_SECRET}")]

    assert statuses == [200, 200, 403, 404]
    assert [r.getMessage() for r in caplog.records if r.name == "api.request"] == [
        "POST /rails/efi/webhook/<secret> 200", "POST /rails/efi/webhook/<secret>/pix 200",
        "POST /rails/efi/webhook/<secret> 403", "POST /rails/<redacted> 404"]
    assert EFI_SECRET not in "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)


@pytest.mark.slow
@pytest.mark.ledger_unchecked
@pytest.mark.django_db(transaction=True)
def test_neither_log_of_gunicorn_as_shipped_holds_the_secret_or_the_token():
    token = make_payin(MerchantFactory(), PaymentMethod.PIX).public_token
    smoke = smoke_module()
    port = _free_port()
    state = Path(tempfile.mkdtemp(prefix="access-log-"))
    unit = smoke.unit_read(ROOT / "deploy" / "systemd" / "pagamentos-web.service")
    command = smoke.command_map(unit["ExecStart"][0], venv=ROOT / ".venv", state=state, port=port)
    environment = {
        **os.environ, "DATABASE_URL": subprocess_database_url(), "CACHE_URL": os.environ.get("CACHE_URL", ""),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "SECRET_KEY": settings.SECRET_KEY, "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "INFO", "WEB_CONCURRENCY": "1", "PAYMENTS_RAIL": "efi",
        "EFI_WEBHOOK_SECRET": EFI_SECRET, "PROMETHEUS_MULTIPROC_DIR": str(state),
    }
    access_path, app_path = state / "access.log", state / "app.log"
    with open(access_path, "wb") as access, open(app_path, "wb") as app:
        server = subprocess.Popen(command, env=environment, cwd=ROOT, stdout=access, stderr=app,
                                  start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(server, base, app_path)

        notified = requests.post(f"{base}/rails/efi/webhook/{EFI_SECRET}?ignorar=/pix", data=NOTIFICATION,
                                 headers={"Content-Type": "application/json"}, timeout=10)
        appended = requests.post(f"{base}/rails/efi/webhook/{EFI_SECRET}/pix", data=NOTIFICATION,
                                 headers={"Content-Type": "application/json"}, timeout=10)
        page = requests.get(f"{base}/pay/{token}", timeout=10)
        polled = requests.get(f"{base}/pay/{token}/status", headers={"Referer": f"{base}/pay/{token}"}, timeout=10)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)

    assert [r.status_code for r in (notified, appended, page, polled)] == [200, 200, 200, 200]
    access_log, app_log = access_path.read_text(), app_path.read_text()
    for log in (access_log, app_log):
        assert EFI_SECRET not in log
        assert token not in log
    # Not vacuous: both logs have a line for each request, the credential shown by its name.
    assert re.search(r'"POST /rails/efi/webhook/<secret> HTTP/1.1" 200 \d+ "-" "python-requests/[^"]+" '
                     rf'{notified.headers["X-Request-Id"]}\n', access_log)
    assert '"POST /rails/efi/webhook/<secret>/pix HTTP/1.1" 200' in access_log
    assert '"GET /pay/<token> HTTP/1.1" 200' in access_log
    assert '"GET /pay/<token>/status HTTP/1.1" 200' in access_log
    for line in ("POST /rails/efi/webhook/<secret> 200", "POST /rails/efi/webhook/<secret>/pix 200",
                 "GET /pay/<token> 200", "GET /pay/<token>/status 200"):
        assert line in app_log


def _wait_healthy(server: subprocess.Popen, base: str, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"gunicorn exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if requests.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise AssertionError(f"gunicorn did not become healthy:\n{log.read_text()[-3000:]}")
