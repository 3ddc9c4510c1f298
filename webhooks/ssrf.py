"""Which webhook URLs we will call (SPEC §6.4), checked when a URL is given and again on the address connected to.

A URL must be https (http only with WEBHOOKS_ALLOW_HTTP), at most 2048 characters, without credentials, and its host
must resolve only to public addresses. Every notation of a private address counts: decimal (2130706433), octal
(0177.0.0.1), hex (0x7f.1), shortened (127.1), IPv4 inside IPv6 (mapped, compatible, 6to4, NAT64) and names with a
trailing dot.
"""

from __future__ import annotations

import ipaddress
import re
import socket

from django.conf import settings
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from config.errors import InvalidWebhookUrl

MAX_URL_LENGTH = 2048
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


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


def resolve(host: str, port: int) -> list[str]:
    """The addresses a name resolves to (tests replace this to play a rebinding DNS server)."""
    return list(dict.fromkeys(info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)))


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
        return InvalidWebhookUrl(f"The webhook URL is not accepted: {reason}", param=param)

    if not isinstance(url, str) or not url:
        raise refuse("it is empty")
    if len(url) > MAX_URL_LENGTH:
        raise refuse(f"it is longer than {MAX_URL_LENGTH} characters")
    if "\\" in url or any(c.isspace() or ord(c) < 32 for c in url):
        raise refuse("it contains a backslash, a space or a control character")
    try:
        # Parsed as the delivery client (urllib3) parses it, so both see the same host.
        parts = parse_url(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except (LocationParseError, ValueError) as exc:
        raise refuse("it is not a valid URL") from exc
    schemes = {"https", "http"} if settings.WEBHOOKS_ALLOW_HTTP else {"https"}
    if parts.scheme not in schemes:
        raise refuse("it must start with https://")
    if parts.auth is not None or "@" in (parts.netloc or ""):
        raise refuse("it must not contain credentials")
    host = (parts.host or "").strip("[]").rstrip(".").lower()
    if not host:
        raise refuse("it has no host")
    if "%" in host and parse_ip_literal(host.split("%")[0]) is None:
        raise refuse("its host name is not valid")
    literal = parse_ip_literal(host)
    if literal is not None:
        if not allowed(literal):
            raise refuse("its address is not public")
        return url
    if not _valid_host_name(host):
        raise refuse("its host name is not valid")
    if host == "localhost" or host.endswith(".localhost"):
        if not settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS:
            raise refuse("its address is not public")
        return url
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        return url
    if not all(allowed(ipaddress.ip_address(a.split("%")[0])) for a in addresses):
        raise refuse("its host resolves to an address that is not public")
    return url
