"""Views that only take a form's POST. A GET of their URL comes from a reload, the back button, a bookmark, or the
mode and language switches going back to the page a POST answered: it is sent to the page the form is on, never
answered with a bare 405 that a browser shows as its own error page (issue 37)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import reverse

View = Callable[..., HttpResponse]


def post_only(back_to: str, *, keep: Iterable[str] = ()) -> Callable[[View], View]:
    """`@post_only("dashboard:charge_detail", keep=["payin_id"])`: POST runs the view; GET and HEAD redirect to the
    URL named `back_to`, with the URL arguments named in `keep`; other methods are refused (405, Allow: POST).

    The URL name is kept on the view as `back_to`, so the mode switch can find a readable page for a form's URL."""
    kept = tuple(keep)

    def decorator(view: View) -> View:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method in ("GET", "HEAD"):
                return redirect(reverse(back_to, kwargs={name: kwargs[name] for name in kept}))
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            return view(request, *args, **kwargs)

        wrapper.back_to = back_to
        return wrapper

    return decorator
