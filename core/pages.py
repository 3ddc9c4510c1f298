"""Dashboard pages composed of sections that several apps provide, so that no app imports another's views to render
a page they share. The Integrations page is one: the integrations app owns it (its URL, its shell, the API key pairs)
and the webhooks app adds its signing secret and endpoints.

Each app registers from its AppConfig.ready(): the owner the page's template and context, the others a section (a
template the page includes, and its context). A context function is called with the request and the state of the
POST being answered (a secret just revealed, a form with its errors): each takes the state it knows and ignores the
rest. A page holding secrets is never cached: every composed page is sent with Cache-Control: no-store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

Context = Callable[..., dict]  # (request, **state) -> the template context


@dataclass
class _Page:
    template: str | None = None
    context: Context | None = None
    sections: list[tuple[str, Context]] = field(default_factory=list)


_pages: dict[str, _Page] = {}


def page_register(name: str, *, template: str, context: Context) -> None:
    page = _pages.setdefault(name, _Page())
    page.template, page.context = template, context


def section_register(page: str, *, template: str, context: Context) -> None:
    """Add a section to a page, after those registered before it (registering the same template again replaces it)."""
    sections = _pages.setdefault(page, _Page()).sections
    sections[:] = [s for s in sections if s[0] != template] + [(template, context)]


def page_render(request: HttpRequest, name: str, *, status: int = 200, **state: Any) -> HttpResponse:
    page = _pages[name]
    context = page.context(request, **state)
    for _template, section_context in page.sections:
        context.update(section_context(request, **state))
    context["sections"] = [template for template, _ in page.sections]
    response = render(request, page.template, context, status=status)
    response["Cache-Control"] = "no-store"
    return response
