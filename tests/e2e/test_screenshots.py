"""`make test` changes no tracked file: the browser tests' screenshots go to an ignored folder unless
`make screenshots` points them at docs/screenshots (issue 16)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import helpers

ROOT = Path(__file__).resolve().parents[2]


def test_screenshots_go_to_an_ignored_folder_by_default():
    assert helpers.screenshots_dir({}) == ROOT / "tests" / "e2e" / "screenshots"
    assert "/tests/e2e/screenshots/" in (ROOT / ".gitignore").read_text().splitlines()


def test_make_screenshots_points_them_at_the_committed_folder():
    assert helpers.screenshots_dir({"SCREENSHOTS_DIR": "docs/screenshots"}) == ROOT / "docs" / "screenshots"
    makefile = (ROOT / "Makefile").read_text()
    assert ("screenshots: $(STAMP)\n\tSCREENSHOTS_DIR=docs/screenshots $(LOCAL) $(BIN)/python -m pytest tests/e2e"
            in makefile)
