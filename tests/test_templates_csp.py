"""Issue 37, item 1: the pages' Content-Security-Policy (script-src 'self'; style-src 'self') blocks inline event
handlers, inline scripts, javascript: URLs and inline styles, so a template that carries one has a button or a style
that silently does nothing in a browser. Behaviour lives in static/js/ (attached from data attributes), styles in
static/css/. This reads every template, so none can come back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = sorted(p for p in (ROOT / "templates").rglob("*") if p.suffix in (".html", ".txt"))

INLINE_HANDLER = re.compile(r"<[a-zA-Z][^>]*?\son[a-z]+\s*=", re.DOTALL)
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc\s*=)[^>]*>", re.IGNORECASE)
JAVASCRIPT_URL = re.compile(r"""(?:href|src|action|formaction)\s*=\s*["']?\s*javascript:""", re.IGNORECASE)
INLINE_STYLE = re.compile(r"<style\b|<[a-zA-Z][^>]*?\sstyle\s*=", re.IGNORECASE | re.DOTALL)

# Templates served without our CSP, each with why inline styles are allowed there (scripts never are).
NO_CSP = {
    "docs.html": "/docs is drf-spectacular's Redoc page, sent without a Content-Security-Policy",
}


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT / "templates"))


def test_the_patterns_find_what_they_look_for():
    assert INLINE_HANDLER.search("""<form method="post" onsubmit="return confirm('x')">""")
    assert INLINE_HANDLER.search("""<button\n  type="submit" onclick=go()>""")
    assert not INLINE_HANDLER.search("""<form data-confirm="Turn on the lights?">""")
    assert INLINE_SCRIPT.search("<script>alert(1)</script>")
    assert INLINE_SCRIPT.search('<script type="module">')
    assert not INLINE_SCRIPT.search("""<script src="{% static 'js/app.js' %}" defer></script>""")
    assert JAVASCRIPT_URL.search('<a href="javascript:void(0)">')
    assert INLINE_STYLE.search('<body style="margin:0">')
    assert INLINE_STYLE.search("<style>body{}</style>")
    assert not INLINE_STYLE.search('<link rel="stylesheet" href="app.css">')


def test_there_are_templates_to_read():
    assert len(TEMPLATES) > 30
    assert set(NO_CSP) <= {_name(p) for p in TEMPLATES}


@pytest.mark.parametrize("path", TEMPLATES, ids=_name)
def test_no_template_carries_what_the_csp_blocks(path):
    text = path.read_text()

    found = {
        "inline event handler": [m.group(0)[-80:] for m in INLINE_HANDLER.finditer(text)],
        "inline script": INLINE_SCRIPT.findall(text),
        "javascript: URL": JAVASCRIPT_URL.findall(text),
        "inline style": [] if _name(path) in NO_CSP else [m.group(0)[:80] for m in INLINE_STYLE.finditer(text)],
    }

    assert {kind: hits for kind, hits in found.items() if hits} == {}
