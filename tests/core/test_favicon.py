"""Issue 37, item 3: browsers ask every site for /favicon.ico; it is served (WhiteNoise, WHITENOISE_ROOT), not a 404."""

from __future__ import annotations

from pathlib import Path

from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


def test_the_favicon_is_served_at_the_root():
    response = Client().get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    assert b"".join(response.streaming_content) == (ROOT / "static" / "root" / "favicon.ico").read_bytes()


def test_the_dashboard_links_it():
    page = Client(HTTP_ACCEPT_LANGUAGE="en").get("/dashboard/login/").content.decode()

    assert '<link rel="icon" href="/favicon.ico" sizes="any">' in page
