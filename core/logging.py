"""Structured logs that carry the request id: JSON lines in production, plain text on a laptop."""

import contextvars
import json
import logging
import re
from datetime import UTC, datetime

from django.http import HttpRequest

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

# Attributes every LogRecord has; anything else came in through `extra=` and belongs in the JSON line.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "request_id"}

# URL arguments that are credentials: the hosted page's token (the payer's only credential), a password reset's
# uid and token, and the secret of a rail's notification route (whoever knows it can make us ask the rail). A path
# that carries one is logged as its route, with each argument shown by name.
CREDENTIAL_ARGUMENTS = frozenset({"token", "uidb64", "secret"})
# Where such a path starts; one that resolves to no route is logged as this prefix alone.
CREDENTIAL_PREFIXES = ("/pay/", "/dashboard/password-reset/", "/rails/")
_ROUTE_ARGUMENT = re.compile(r"<(?:\w+:)?(\w+)>")
# The WSGI environ key where each request leaves its loggable path for the web server's access log: gunicorn.conf.py
# prints `%({pagamentos.log_path}e)s` instead of the request line, which carries the credentials above (and a query).
ACCESS_LOG_PATH = "pagamentos.log_path"


def loggable_path(request: HttpRequest) -> str:
    """The request's path as logs may show it: `/pay/<token>` instead of the hosted page's real path."""
    match = getattr(request, "resolver_match", None)
    if match is not None and CREDENTIAL_ARGUMENTS & set(match.kwargs):
        return "/" + _ROUTE_ARGUMENT.sub(r"<\1>", match.route)
    if match is None:
        for prefix in CREDENTIAL_PREFIXES:
            if request.path.startswith(prefix) and request.path != prefix:
                return prefix + "<redacted>"
    return request.path


class RedactPathFilter(logging.Filter):
    """Django's own request records ("Not Found: /pay/…", "Internal Server Error: …") carry the path among their
    arguments: show the loggable path instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if isinstance(request, HttpRequest) and isinstance(record.args, tuple):
            shown = loggable_path(request)
            record.args = tuple(shown if arg in (request.path, request.get_full_path()) else arg
                                for arg in record.args)
        return True


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        request_id = request_id_var.get()
        if request_id == "-":  # Django logs a 500 after our middleware has returned: its record carries the request
            request_id = getattr(getattr(record, "request", None), "request_id", "-")
        record.request_id = request_id
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "requestId": getattr(record, "request_id", "-"),
        }
        line.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD and k != "request"})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)
