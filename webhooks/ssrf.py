"""Which webhook URLs we will call (SPEC §6.4), checked when a URL is given and again on the address connected to.

A URL must be https (http only with WEBHOOKS_ALLOW_HTTP), at most 2048 characters, without credentials, and its host
must resolve only to public addresses. Every notation of a private address counts: decimal (2130706433), octal
(0177.0.0.1), hex (0x7f.1), shortened (127.1), IPv4 inside IPv6 (mapped, compatible, 6to4, NAT64) and names with a
trailing dot.
"""

from __future__ import annotations

import ipaddress
import os
import queue
import re
import socket
import threading

from django.conf import settings
from django.utils.translation import gettext, gettext_lazy
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from core.errors import DomainError

MAX_URL_LENGTH = 2048
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class InvalidWebhookUrl(DomainError):
    code = "invalid_webhook_url"
    message = gettext_lazy("The webhook URL is not accepted")
    validation_kind = True


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """Loopback, private, link-local (cloud metadata), CGNAT, unique-local, multicast, reserved and unspecified
    addresses are not public, nor is any IPv6 form that carries one of them."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return is_public(embedded)
    return address.is_global and not (address.is_multicast or address.is_unspecified or address.is_reserved)


def allowed(address: IPAddress) -> bool:
    return settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS or is_public(address)


def parse_ip_literal(host: str) -> IPAddress | None:
    """An IP written in any notation a resolver would accept, or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        # inet_aton reads every BSD form: 127.1, 0177.0.0.1, 0x7f.0.0.1, 2130706433.
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


# getaddrinfo has no timeout of its own: a lost UDP answer costs the resolver's 5 s (resolv.conf `timeout`), a
# resolver that does not answer costs that times its attempts and servers, and the caller (a request thread) would be
# blocked all along. So lookups run on a few resident daemon threads (a fresh thread per lookup would also start the
# resolver afresh each time) and the caller waits this long: a name with no answer by then is one that "does not
# resolve now". An abandoned lookup ends when the resolver gives up; one whose caller left before it started is skipped.
DNS_TIMEOUT_SECONDS = 1.0
DNS_THREADS = 4
_lookups: queue.SimpleQueue = queue.SimpleQueue()
_started_in_pid: int | None = None
_start_lock = threading.Lock()


class _Lookup:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.done = threading.Event()
        self.abandoned = False
        self.infos: list | None = None
        self.error: BaseException | None = None


def _lookup_loop() -> None:
    while True:
        lookup = _lookups.get()
        if lookup.abandoned:
            continue
        try:
            lookup.infos = socket.getaddrinfo(lookup.host, lookup.port, type=socket.SOCK_STREAM)
        except BaseException as exc:  # handed to the caller, who decides
            lookup.error = exc
        lookup.done.set()


def _ensure_lookup_threads() -> None:
    global _started_in_pid
    if _started_in_pid == os.getpid():
        return
    with _start_lock:  # once per process: threads do not survive a fork (gunicorn, Celery prefork)
        if _started_in_pid != os.getpid():
            for _ in range(DNS_THREADS):
                threading.Thread(target=_lookup_loop, name="ssrf-dns", daemon=True).start()
            _started_in_pid = os.getpid()


def resolve(host: str, port: int) -> list[str]:
    """The addresses a name resolves to (tests replace this to play a rebinding DNS server). Raises OSError when the
    name does not resolve, TimeoutError (an OSError) when the resolver does not answer in DNS_TIMEOUT_SECONDS."""
    _ensure_lookup_threads()
    lookup = _Lookup(host, port)
    _lookups.put(lookup)
    if not lookup.done.wait(DNS_TIMEOUT_SECONDS):
        lookup.abandoned = True
        raise TimeoutError(f"no DNS answer within {DNS_TIMEOUT_SECONDS} s")
    if lookup.error is not None:
        raise lookup.error
    return list(dict.fromkeys(info[4][0] for info in lookup.infos or []))


_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")


def _valid_host_name(host: str) -> bool:
    """A DNS name the resolver accepts: IDNA-encodable, labels of 1 to 63 letters, digits and inner hyphens."""
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return len(ascii_host) <= 253 and all(_LABEL.fullmatch(label) for label in ascii_host.split("."))


def webhook_url_validate(url: str, *, param: str = "webhookUrl") -> str:
    """Refuse a URL we must never call. A name that does not resolve now is accepted: DNS can be down for a moment,
    and the address is checked again when we connect."""

    def refuse(reason: str) -> InvalidWebhookUrl:
        return InvalidWebhookUrl(gettext("The webhook URL is not accepted: %(reason)s") % {"reason": reason},
                                 param=param)

    if not isinstance(url, str) or not url:
        raise refuse(gettext("it is empty"))
    if len(url) > MAX_URL_LENGTH:
        raise refuse(gettext("it is longer than %(maximum)s characters") % {"maximum": MAX_URL_LENGTH})
    if "\\" in url or any(c.isspace() or ord(c) < 32 for c in url):
        raise refuse(gettext("it contains a backslash, a space or a control character"))
    try:
        # Parsed as the delivery client (urllib3) parses it, so both see the same host.
        parts = parse_url(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except (LocationParseError, ValueError) as exc:
        raise refuse(gettext("it is not a valid URL")) from exc
    schemes = {"https", "http"} if settings.WEBHOOKS_ALLOW_HTTP else {"https"}
    if parts.scheme not in schemes:
        raise refuse(gettext("it must start with https://"))
    if parts.auth is not None or "@" in (parts.netloc or ""):
        raise refuse(gettext("it must not contain credentials"))
    host = (parts.host or "").strip("[]").rstrip(".").lower()
    if not host:
        raise refuse(gettext("it has no host"))
    if "%" in host and parse_ip_literal(host.split("%")[0]) is None:
        raise refuse(gettext("its host name is not valid"))
    literal = parse_ip_literal(host)
    if literal is not None:
        if not allowed(literal):
            raise refuse(gettext("its address is not public"))
        return url
    if not _valid_host_name(host):
        raise refuse(gettext("its host name is not valid"))
    if host == "localhost" or host.endswith(".localhost"):
        if not settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS:
            raise refuse(gettext("its address is not public"))
        return url
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        return url
    if not all(allowed(ipaddress.ip_address(a.split("%")[0])) for a in addresses):
        raise refuse(gettext("its host resolves to an address that is not public"))
    return url
