"""A stateful fake of Efí Bank's Pix API (the Central Bank's "API Pix" plus Efí's endpoints for sending Pix).

Served over real HTTPS with mutual TLS and OAuth2 client credentials, so the service's Efí client is tested through
the same certificate, token and HTTP code paths as in production. Tests drive the other side of the rail with Python
control methods (`pay`, `receive`, `settle`, `fail_next`, ...) and read its state from plain dicts.

    certificates = Certificates(tmp_path)
    with FakeEfi(certificates) as efi:
        settings.EFI_BASE_URL, settings.EFI_CERT_FILE = efi.url, str(certificates.client_file)
        ...
        e2eid = efi.pay(txid)          # the payer pays; the webhook registered through the API is notified
        efi.settle()                   # every send and devolução in flight settles now

Amounts stay the API's strings ("150.00"); `to_cents` and `from_cents` convert. Times are RFC 3339 UTC strings with
milliseconds. The fake's clock is the real one plus `advance_clock`, so expiry of charges and tokens can be tested.
"""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import json
import math
import re
import secrets
import socket
import socketserver
import ssl
import string
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from payments.formats.pix import crc16, tlv

ERROR_BASE = "https://pix.bcb.gov.br/api/v2/error/"
SCOPE = ("cob.write cob.read pix.write pix.read webhook.write webhook.read gn.pix.send.read gn.pix.send.write "
         "gn.infractions.read gn.infractions.write")
CLIENT_COMMON_NAME = "pagamentos-test-client"
EFI_ISPB = "09089356"  # the ISPB in the e2eids of Pix that leave through Efí (sends and devoluções)
PAYER_ISPB = "60701190"  # the payer's bank in the e2eids of Pix that arrive
FAIL_KEY_SUFFIX = "@fail.example.com"  # a send to such a key settles NAO_REALIZADO
SEND_FAILURE_REASON = "Conta do recebedor encerrada"
REFUND_FAILURE_REASON = "Conta do pagador original encerrada"
MERCHANT_NAME = "EFI TEST"
MERCHANT_CITY = "SAO PAULO"

ATIVA = "ATIVA"
CONCLUIDA = "CONCLUIDA"
REMOVED_BY_RECEIVER = "REMOVIDA_PELO_USUARIO_RECEBEDOR"
REMOVED_BY_PSP = "REMOVIDA_PELO_PSP"
EM_PROCESSAMENTO = "EM_PROCESSAMENTO"
REALIZADO = "REALIZADO"
NAO_REALIZADO = "NAO_REALIZADO"
DEVOLVIDO = "DEVOLVIDO"
# A MED infraction: open for the receiver's answer, answered, then decided (or cancelled by Efí).
ABERTA = "ABERTA"
EM_DEFESA = "EM_DEFESA"
ACEITA = "ACEITA"
REJEITADA = "REJEITADA"
CANCELADA_EFI = "CANCELADA_EFI"

_TXID = re.compile(r"[a-zA-Z0-9]{26,35}")
_ID = re.compile(r"[a-zA-Z0-9]{1,35}")
_AMOUNT = re.compile(r"\d{1,10}\.\d{2}")
_CPF = re.compile(r"\d{11}")
_CNPJ = re.compile(r"\d{14}")
_ALPHANUMERIC = string.ascii_letters + string.digits
_FAULT_MODES = ("before", "after", "hang")

Json = dict[str, Any]
Transport = Callable[[str, Json], int]


# --- Conversions -----------------------------------------------------------------------------------------------------
def to_cents(amount: str) -> int:
    """The API's "150.00" as 15000; refuses anything that is not digits, a dot and two decimals."""
    if not isinstance(amount, str) or not _AMOUNT.fullmatch(amount):
        raise ValueError(f"not an API amount: {amount!r}")
    units, decimals = amount.split(".")
    return int(units) * 100 + int(decimals)


def from_cents(cents: int) -> str:
    """15000 as the API's "150.00"."""
    if isinstance(cents, bool) or not isinstance(cents, int) or cents < 0:
        raise ValueError(f"not a cent amount: {cents!r}")
    return f"{cents // 100}.{cents % 100:02d}"


def rfc3339(moment: datetime) -> str:
    """UTC with milliseconds and a Z, as the API writes times: 2026-11-25T16:00:00.123Z."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_rfc3339(text: str) -> datetime:
    """An RFC 3339 time as an aware datetime; one without an offset is taken as UTC."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _random_alphanumeric(length: int) -> str:
    return "".join(secrets.choice(_ALPHANUMERIC) for _ in range(length))


def _end_to_end_id(prefix: str, ispb: str, moment: datetime) -> str:
    """32 characters shaped like the network's ids: prefix, ISPB, yyyyMMddHHmm in UTC, 11 random alphanumerics."""
    return prefix + ispb + moment.astimezone(UTC).strftime("%Y%m%d%H%M") + _random_alphanumeric(11)


# --- Certificates ----------------------------------------------------------------------------------------------------
def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(*, certificate_authority: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=False, key_cert_sign=certificate_authority, crl_sign=certificate_authority,
        encipher_only=False, decipher_only=False)


@dataclass
class _Authority:
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate


def _builder(subject: str, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.now(UTC)
    return (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(hours=1)).not_valid_after(now + timedelta(days=30))
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False))


def _authority(common_name: str) -> _Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (_builder(common_name, _name(common_name), key.public_key())
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(_key_usage(certificate_authority=True), critical=True)
                   .sign(key, hashes.SHA256()))
    return _Authority(key, certificate)


def _leaf(authority: _Authority, common_name: str, usage: x509.ObjectIdentifier,
          names: list[x509.GeneralName] | None = None) -> bytes:
    """A certificate issued by `authority`, followed by its unencrypted key: one PEM, as Efí's .pem files are."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (_builder(common_name, authority.certificate.subject, key.public_key())
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(_key_usage(certificate_authority=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()),
                              critical=False))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    certificate = builder.sign(authority.key, hashes.SHA256())
    return certificate.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


class Certificates:
    """A throwaway PKI in `directory`: the CA both sides trust, the fake's server certificate, our client certificate,
    and a stranger's client certificate from another CA that the fake must refuse at the handshake."""

    def __init__(self, directory: Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        authority = _authority("Fake Efi Test CA")
        stranger_authority = _authority("Stranger Test CA")
        self.ca_file = directory / "efi-ca.pem"
        self.server_file = directory / "efi-server.pem"
        self.client_file = directory / "efi-client.pem"
        self.stranger_file = directory / "stranger-client.pem"
        self.stranger_ca_file = directory / "stranger-ca.pem"
        self.client_common_name = CLIENT_COMMON_NAME
        self.ca_file.write_bytes(authority.certificate.public_bytes(serialization.Encoding.PEM))
        self.stranger_ca_file.write_bytes(stranger_authority.certificate.public_bytes(serialization.Encoding.PEM))
        self.server_file.write_bytes(_leaf(authority, "localhost", ExtendedKeyUsageOID.SERVER_AUTH, [
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]))
        self.client_file.write_bytes(_leaf(authority, CLIENT_COMMON_NAME, ExtendedKeyUsageOID.CLIENT_AUTH))
        self.stranger_file.write_bytes(_leaf(stranger_authority, CLIENT_COMMON_NAME, ExtendedKeyUsageOID.CLIENT_AUTH))


# --- Errors ----------------------------------------------------------------------------------------------------------
class ApiError(Exception):
    """A response other than success, raised anywhere in a route and answered as it is."""

    def __init__(self, status: int, body: Json) -> None:
        super().__init__(body.get("detail") or body.get("error_description") or str(status))
        self.status = status
        self.body = body


def problem(status: int, name: str, title: str, detail: str,
            violacoes: list[dict[str, str]] | None = None) -> ApiError:
    """An RFC 7807 problem typed like the Central Bank's specification."""
    body: Json = {"type": ERROR_BASE + name, "title": title, "status": status, "detail": detail}
    if violacoes:
        body["violacoes"] = violacoes
    return ApiError(status, body)


def _violation(reason: str, prop: str) -> dict[str, str]:
    return {"razao": reason, "propriedade": prop}


def _invalid(name: str, title: str, violacoes: list[dict[str, str]]) -> ApiError:
    return problem(400, name, title, "A requisição não respeita o schema ou está semanticamente errada.", violacoes)


def _check_amount(value: Any, prop: str, violacoes: list[dict[str, str]]) -> None:
    if not isinstance(value, str) or not _AMOUNT.fullmatch(value):
        violacoes.append(_violation("O campo não respeita o formato \\d{1,10}\\.\\d{2}.", prop))
    elif to_cents(value) <= 0:
        violacoes.append(_violation("O valor deve ser maior que zero.", prop))


def _check_person(person: Any, prop: str, violacoes: list[dict[str, str]], *, name_required: bool) -> None:
    """cpf (11 digits) or cnpj (14 digits), not both; with a nome when `name_required`."""
    if not isinstance(person, dict):
        violacoes.append(_violation("O campo deve ser um objeto.", prop))
        return
    if "cpf" in person and "cnpj" in person:
        violacoes.append(_violation("Informe cpf ou cnpj, não ambos.", prop))
    if "cpf" in person and not (isinstance(person["cpf"], str) and _CPF.fullmatch(person["cpf"])):
        violacoes.append(_violation("O cpf deve ter 11 dígitos.", f"{prop}.cpf"))
    if "cnpj" in person and not (isinstance(person["cnpj"], str) and _CNPJ.fullmatch(person["cnpj"])):
        violacoes.append(_violation("O cnpj deve ter 14 dígitos.", f"{prop}.cnpj"))
    if name_required:
        if "cpf" not in person and "cnpj" not in person:
            violacoes.append(_violation("Informe cpf ou cnpj.", prop))
        nome = person.get("nome")
        if not isinstance(nome, str) or not nome.strip() or len(nome) > 200:
            violacoes.append(_violation("O nome é obrigatório (até 200 caracteres).", f"{prop}.nome"))


# --- HTTP plumbing ---------------------------------------------------------------------------------------------------
@dataclass
class _Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: Message
    params: dict[str, str] = field(default_factory=dict)


@dataclass
class _Fault:
    method: str
    path_prefix: str
    mode: str
    status: int
    seconds: float
    remaining: int


class _Server(ThreadingHTTPServer):
    """The HTTP server; handshakes happen in the request threads, so one silent client cannot stall the accept loop."""

    daemon_threads = True
    fake: FakeEfi

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the host's FQDN, which can take seconds where DNS is unreachable.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Refused handshakes are expected (the stranger's tests); record instead of printing tracebacks.
        self.fake.connection_errors.append(traceback.format_exc(limit=1).strip().splitlines()[-1])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    disable_nagle_algorithm = True  # headers and body go out as two writes; Nagle would hold the body ~40 ms
    server: _Server

    def setup(self) -> None:
        self.request.settimeout(self.timeout)
        self.request.do_handshake()  # raises for a missing or untrusted client certificate
        self.server.fake._connection_opened(self.request)
        super().setup()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._connection_closed(self.request)

    def _serve(self) -> None:
        self.server.fake._serve(self)

    do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: requests_log holds what a test needs."""


def _peer_common_name(connection: Any) -> str | None:
    certificate = connection.getpeercert() if hasattr(connection, "getpeercert") else None
    for rdn in (certificate or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None


def _default_transport(url: str, body: Json) -> int:
    """POST a notification as Efí does: JSON, no signature; returns the HTTP status."""
    response = requests.post(url, data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                             headers={"Content-Type": "application/json"}, timeout=10)
    return response.status_code


_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    (method, re.compile(pattern), handler) for method, pattern, handler in [
        ("POST", r"/oauth/token", "_token"),
        ("PUT", r"/v2/cob/(?P<txid>[^/]+)", "_cob_create"),
        ("GET", r"/v2/cob/(?P<txid>[^/]+)", "_cob_read"),
        ("PATCH", r"/v2/cob/(?P<txid>[^/]+)", "_cob_patch"),
        ("GET", r"/v2/pix", "_pix_list"),
        ("GET", r"/v2/pix/(?P<e2eid>[^/]+)", "_pix_read"),
        ("PUT", r"/v2/pix/(?P<e2eid>[^/]+)/devolucao/(?P<devolucao_id>[^/]+)", "_devolucao_create"),
        ("GET", r"/v2/pix/(?P<e2eid>[^/]+)/devolucao/(?P<devolucao_id>[^/]+)", "_devolucao_read"),
        ("PUT", r"/v3/gn/pix/(?P<id_envio>[^/]+)", "_send_create"),
        ("GET", r"/v2/gn/pix/enviados/id-envio/(?P<id_envio>[^/]+)", "_send_read"),
        ("GET", r"/v2/gn/pix/enviados/(?P<e2eid>[^/]+)", "_send_read_by_e2eid"),
        ("GET", r"/v2/gn/infracoes", "_infracao_list"),
        ("POST", r"/v2/gn/infracoes/(?P<id_infracao>[^/]+)/defesa", "_infracao_defesa"),
        ("PUT", r"/v2/webhook/(?P<chave>[^/]+)", "_webhook_put"),
        ("GET", r"/v2/webhook/(?P<chave>[^/]+)", "_webhook_get"),
        ("DELETE", r"/v2/webhook/(?P<chave>[^/]+)", "_webhook_delete"),
    ]
]


# --- The fake --------------------------------------------------------------------------------------------------------
class FakeEfi:
    """Efí's Pix API with its state in memory. Read the plain dicts; change them only through the control methods."""

    def __init__(self, certificates: Certificates, *, client_id: str = "client-id",
                 client_secret: str = "client-secret", pix_key: str = "platform-key@example.com",
                 token_lifetime: int = 3600) -> None:
        self.certificates = certificates
        self.client_id = client_id
        self.client_secret = client_secret
        self.pix_key = pix_key
        self.token_lifetime = token_lifetime

        # State, all behind one lock. Keys: txid, e2eid, idEnvio, e2eid then devolução id, Pix key.
        self._lock = threading.Lock()
        self._cobs: dict[str, Json] = {}
        self.received: dict[str, Json] = {}
        self.sends: dict[str, Json] = {}
        self.devolucoes: dict[str, dict[str, Json]] = {}
        self.infracoes: dict[str, Json] = {}  # MED infractions against Pix we received, by idInfracao
        self.webhooks: dict[str, Json] = {}
        self.webhook_skip_mtls_checking: dict[str, str | None] = {}  # header x-skip-mtls-checking as registered

        # What happened, for assertions.
        self.requests_log: list[Json] = []
        self.deliveries: list[Json] = []
        self.send_attempts: Counter[str] = Counter()  # PUTs per idEnvio, refused repeats included
        self.sends_created: Counter[str] = Counter()  # sends actually made per idEnvio: never above 1
        self.defences: list[Json] = []  # answers to infractions the bank took: (idInfracao, analise, justificativa)
        self.token_requests = 0
        self.errors: list[str] = []  # tracebacks of bugs in the fake itself (answered 500)
        self.connection_errors: list[str] = []  # refused handshakes and dropped connections

        # Behaviour switches.
        self.drop_notifications = False
        self.refunds_fail = False
        self.auto_settle_seconds: float | None = None
        self.slow_seconds = 0.0
        self.notification_transport: Transport = _default_transport

        self._tokens: dict[str, datetime] = {}
        self._faults: list[_Fault] = []
        self._timers: list[threading.Timer] = []
        self._connections: set[Any] = set()
        self._clock_offset = timedelta(0)
        self._next_location_id = 1
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- Lifecycle ---------------------------------------------------------------------------------------------------
    def start(self) -> FakeEfi:
        """Listen on 127.0.0.1 on a free port; only clients with a certificate from our CA get past the handshake."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certificates.server_file)
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(self.certificates.ca_file)
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-efi", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections and cancel pending automatic settlements."""
        with self._lock:
            timers, self._timers = self._timers, []
            connections = list(self._connections)
        for timer in timers:
            timer.cancel()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeEfi:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """https://127.0.0.1:PORT, the base URL to configure the client with."""
        if self._server is None:
            raise RuntimeError("FakeEfi is not started")
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def _connection_opened(self, connection: Any) -> None:
        with self._lock:
            self._connections.add(connection)

    def _connection_closed(self, connection: Any) -> None:
        with self._lock:
            self._connections.discard(connection)

    # --- Clock -------------------------------------------------------------------------------------------------------
    def now(self) -> datetime:
        """The fake's time: the real UTC time moved by `advance_clock`."""
        return datetime.now(UTC) + self._clock_offset

    def advance_clock(self, seconds: float) -> None:
        """Move the fake's time forward: charges expire and tokens lapse as if that time had passed."""
        self._clock_offset += timedelta(seconds=seconds)

    # --- Controls ----------------------------------------------------------------------------------------------------
    @property
    def cobs(self) -> dict[str, Json]:
        """Charges by txid, live; those past their expiry read REMOVIDA_PELO_PSP."""
        with self._lock:
            for cob in self._cobs.values():
                self._expire_if_due(cob)
            return self._cobs

    def expire_tokens(self) -> None:
        """Every token issued so far becomes invalid at once: the next call gets 401 and must fetch a new token."""
        with self._lock:
            self._tokens.clear()

    def set_webhook(self, url: str, chave: str | None = None) -> None:
        """Register a webhook URL without the API, for tests not about registration."""
        chave = chave or self.pix_key
        with self._lock:
            self.webhooks[chave] = {"webhookUrl": url, "chave": chave, "criacao": rfc3339(self.now())}
            self.webhook_skip_mtls_checking[chave] = None

    def fail_next(self, method: str, path_prefix: str, *, mode: str, status: int = 500, seconds: float = 0.0,
                  times: int = 1) -> None:
        """The next `times` requests with `method` whose path starts with `path_prefix` misbehave.

        before: answer `status` and do nothing. after: do the operation, then answer `status` (the PSP failed
        mid-call). hang: sleep `seconds`, then handle normally (a slow PSP; the operation still happens).
        """
        if mode not in _FAULT_MODES:
            raise ValueError(f"mode must be one of {_FAULT_MODES}, got {mode!r}")
        with self._lock:
            self._faults.append(_Fault(method.upper(), path_prefix, mode, status, seconds, times))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def pay(self, txid: str, *, amount: int | None = None, payer_document: str = "12345678909",
            payer_name: str = "Pagador Teste", info: str | None = None, force: bool = False) -> str:
        """A payer pays the charge `txid`: the Pix arrives, the charge becomes CONCLUIDA, the webhook is notified.

        `amount` in cents defaults to the charge's valor. An unknown txid still receives the money (the Pix names
        it). A charge that is no longer ATIVA cannot be paid (ValueError) unless `force`, which lets the money arrive
        and leaves the charge as it is: the race of a payment against a removal. Returns the e2eid.
        """
        with self._lock:
            cob = self._cobs.get(txid)
            if cob is not None:
                self._expire_if_due(cob)
                if cob["status"] != ATIVA and not force:
                    raise ValueError(f"cob {txid} is {cob['status']}; pass force=True to pay it anyway")
            if amount is None:
                if cob is None:
                    raise ValueError(f"unknown txid {txid}: give the amount")
                amount = to_cents(cob["valor"]["original"])
            e2eid = self._receive_locked(amount, txid, payer_document, payer_name, info)
            if cob is not None and cob["status"] == ATIVA:
                cob["status"] = CONCLUIDA
            body = {"pix": [self._pix_view(e2eid)]}
        self._deliver(body)
        return e2eid

    def receive(self, amount_cents: int, *, txid: str | None = None, payer_document: str = "12345678909",
                payer_name: str = "Pagador Teste", info: str | None = None) -> str:
        """A Pix to our key that pays no charge (or names `txid` without touching any charge). Returns the e2eid."""
        with self._lock:
            e2eid = self._receive_locked(amount_cents, txid, payer_document, payer_name, info)
            body = {"pix": [self._pix_view(e2eid)]}
        self._deliver(body)
        return e2eid

    def settle(self) -> int:
        """Settle every send and devolução still EM_PROCESSAMENTO, notifying each; returns how many settled."""
        with self._lock:
            bodies = [self._settle_send_locked(id_envio) for id_envio in list(self.sends)]
            bodies += [self._settle_devolucao_locked(e2eid, devolucao_id)
                       for e2eid, refunds in self.devolucoes.items() for devolucao_id in list(refunds)]
        settled = [body for body in bodies if body is not None]
        for body in settled:
            self._deliver(body)
        return len(settled)

    def settle_send(self, id_envio: str, *, status: str | None = None, motivo: str | None = None) -> bool:
        """Settle one send, optionally forcing REALIZADO or NAO_REALIZADO; False if it had already settled."""
        with self._lock:
            if id_envio not in self.sends:
                raise KeyError(id_envio)
            body = self._settle_send_locked(id_envio, status, motivo)
        if body is not None:
            self._deliver(body)
        return body is not None

    def settle_devolucao(self, e2eid: str, devolucao_id: str, *, status: str | None = None,
                         motivo: str | None = None) -> bool:
        """Settle one devolução, optionally forcing DEVOLVIDO or NAO_REALIZADO; False if it had already settled."""
        with self._lock:
            if devolucao_id not in self.devolucoes.get(e2eid, {}):
                raise KeyError((e2eid, devolucao_id))
            body = self._settle_devolucao_locked(e2eid, devolucao_id, status, motivo)
        if body is not None:
            self._deliver(body)
        return body is not None

    def open_infraction(self, e2eid: str, *, amount: int | None = None, days_to_answer: int = 7,
                        situation: str = "golpe") -> str:
        """The payer's bank reports a Pix we received through MED: an infraction ABERTA for our answer; its id."""
        with self._lock:
            pix = self._pix_lookup(e2eid)
            now = self.now()
            id_infracao = _random_alphanumeric(32)
            self.infracoes[id_infracao] = {
                "idInfracao": id_infracao, "endToEndId": e2eid, "protocolo": _random_alphanumeric(20),
                "dataTransacao": pix["horario"], "valor": from_cents(amount) if amount else pix["valor"],
                "chave": self.pix_key, "status": ABERTA, "razao": "Solicitação de devolução por fraude",
                "tipoSituacao": situation, "identificadorTicket": [len(self.infracoes) + 1],
                "dadosAnalise": {"abertura": rfc3339(now),
                                 "prazoFinalizacao": rfc3339(now + timedelta(days=days_to_answer))},
                "origem": {"nomeParticipante": "BANCO DO PAGADOR", "conta": "12345-6",
                           "nome": pix.get("pagador", {}).get("nome", "Pagador"), "documento": "***.456.789-**"},
                "destino": {"nomeParticipante": "EFI S.A.", "conta": "98765-4", "nome": MERCHANT_NAME,
                            "documento": "**.345.678/0001-**"},
                "criadoEm": rfc3339(now), "atualizadoEm": rfc3339(now)}
            return id_infracao

    def decide_infraction(self, id_infracao: str, status: str, *, reason: str = "Análise concluída") -> None:
        """Efí's analysts decide (ACEITA: the money goes back to the payer; REJEITADA) or Efí cancels it."""
        assert status in (ACEITA, REJEITADA, CANCELADA_EFI), status
        with self._lock:
            infracao = self.infracoes[id_infracao]
            now = rfc3339(self.now())
            infracao.update(status=status, justificativaAnalista=reason, atualizadoEm=now)
            infracao["dadosAnalise"]["finalizacao"] = now

    def pix_view(self, e2eid: str) -> Json:
        """A received Pix as GET /v2/pix/{e2eid} answers it."""
        with self._lock:
            return self._pix_view(e2eid)

    # --- State helpers (the lock is held by the caller) --------------------------------------------------------------
    def _expire_if_due(self, cob: Json) -> None:
        if cob["status"] != ATIVA:
            return
        created = parse_rfc3339(cob["calendario"]["criacao"])
        if self.now() > created + timedelta(seconds=cob["calendario"]["expiracao"]):
            cob["status"] = REMOVED_BY_PSP

    def _cob_view(self, txid: str) -> Json:
        cob = self._cobs[txid]
        self._expire_if_due(cob)
        view = copy.deepcopy(cob)
        paid = [self._pix_view(e2eid) for e2eid, pix in self.received.items() if pix.get("txid") == txid]
        if paid:
            view["pix"] = paid
        return view

    def _pix_view(self, e2eid: str) -> Json:
        view = copy.deepcopy(self.received[e2eid])
        refunds = self.devolucoes.get(e2eid)
        if refunds:
            view["devolucoes"] = [copy.deepcopy(refund) for refund in refunds.values()]
        return view

    def _receive_locked(self, amount_cents: int, txid: str | None, payer_document: str, payer_name: str,
                        info: str | None) -> str:
        if len(payer_document) not in (11, 14) or not payer_document.isdigit():
            raise ValueError("payer_document must be a CPF (11 digits) or a CNPJ (14 digits)")
        now = self.now()
        e2eid = _end_to_end_id("E", PAYER_ISPB, now)
        pix: Json = {"endToEndId": e2eid}
        if txid is not None:
            pix["txid"] = txid
        pix.update({"valor": from_cents(amount_cents), "chave": self.pix_key, "horario": rfc3339(now)})
        if info is not None:
            pix["infoPagador"] = info
        document_field = "cpf" if len(payer_document) == 11 else "cnpj"
        pix["pagador"] = {document_field: payer_document, "nome": payer_name}
        self.received[e2eid] = pix
        return e2eid

    def _send_notification(self, send: Json) -> Json:
        horario = send["horario"].get("liquidacao") or send["horario"]["solicitacao"]
        return {"pix": [{"endToEndId": send["endToEndId"], "valor": send["valor"], "chave": send["chave"],
                         "horario": horario, "status": send["status"], "gnExtras": {"idEnvio": send["idEnvio"]},
                         "tipo": "SOLICITACAO"}]}

    def _settle_send_locked(self, id_envio: str, status: str | None = None, motivo: str | None = None) -> Json | None:
        send = self.sends[id_envio]
        if send["status"] != EM_PROCESSAMENTO:
            return None
        if status is None:
            status = NAO_REALIZADO if send["chave"].lower().endswith(FAIL_KEY_SUFFIX) else REALIZADO
        if status not in (REALIZADO, NAO_REALIZADO):
            raise ValueError(f"a send settles {REALIZADO} or {NAO_REALIZADO}, not {status!r}")
        send["status"] = status
        send["horario"]["liquidacao"] = rfc3339(self.now())
        if status == NAO_REALIZADO:
            send["motivo"] = motivo or SEND_FAILURE_REASON
        return self._send_notification(send)

    def _settle_devolucao_locked(self, e2eid: str, devolucao_id: str, status: str | None = None,
                                 motivo: str | None = None) -> Json | None:
        refund = self.devolucoes[e2eid][devolucao_id]
        if refund["status"] != EM_PROCESSAMENTO:
            return None
        if status is None:
            status = NAO_REALIZADO if self.refunds_fail else DEVOLVIDO
        if status not in (DEVOLVIDO, NAO_REALIZADO):
            raise ValueError(f"a devolução settles {DEVOLVIDO} or {NAO_REALIZADO}, not {status!r}")
        refund["status"] = status
        refund["horario"]["liquidacao"] = rfc3339(self.now())
        if status == NAO_REALIZADO:
            refund["motivo"] = motivo or REFUND_FAILURE_REASON
        return {"pix": [self._pix_view(e2eid)]}

    def _schedule_settlement(self, settle: Callable[[], Json | None]) -> None:
        """As the network does, settle `auto_settle_seconds` after creation, notifying from the timer thread."""
        if self.auto_settle_seconds is None:
            return

        def run() -> None:
            with self._lock:
                body = settle()
            if body is not None:
                self._deliver(body)

        timer = threading.Timer(self.auto_settle_seconds, run)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    # --- Notifications -----------------------------------------------------------------------------------------------
    def _deliver(self, body: Json) -> None:
        """POST `body` to the registered webhookUrl + "/pix" (plain concatenation, as Efí does); record the outcome.

        Runs without the lock, so the service may call the fake back while it handles the notification.
        """
        with self._lock:
            hook = self.webhooks.get(self.pix_key)
            dropped = self.drop_notifications
        record: Json = {"url": hook["webhookUrl"] + "/pix" if hook else None, "body": body, "status": None,
                        "error": None, "dropped": dropped}
        if record["url"] is None:
            record["error"] = "no webhook registered"
        elif not dropped:
            try:
                record["status"] = self.notification_transport(record["url"], body)
            except Exception as exc:  # the service being down is an outcome to record, not a fake failure
                record["error"] = repr(exc)
        with self._lock:
            self.deliveries.append(record)

    # --- Request handling --------------------------------------------------------------------------------------------
    def _serve(self, handler: _Handler) -> None:
        request_id = str(uuid.uuid4())
        parts = urlsplit(handler.path)
        query = {key: values[-1] for key, values in parse_qs(parts.query, keep_blank_values=True).items()}
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        body: Any = None
        body_error = False
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body_error = True
        authorization = handler.headers.get("Authorization") or ""
        scheme = authorization.split(" ", 1)[0].capitalize() if authorization else None
        entry: Json = {"method": handler.command, "path": parts.path, "query": query, "body": body,
                       "authorization_scheme": scheme, "client_cert_cn": _peer_common_name(handler.request),
                       "request_id": request_id, "status": None}
        with self._lock:
            self.requests_log.append(entry)
        if self.slow_seconds:
            time.sleep(self.slow_seconds)
        fault = self._take_fault(handler.command, parts.path)
        if fault is not None and fault.mode == "hang":
            time.sleep(fault.seconds)
        if fault is not None and fault.mode == "before":
            status, payload = self._fault_answer(fault)
        else:
            request = _Request(handler.command, parts.path, query, body, handler.headers)
            status, payload = self._dispatch(request, body_error)
            if fault is not None and fault.mode == "after":
                status, payload = self._fault_answer(fault)
        entry["status"] = status
        data = b"" if payload is None else json.dumps(payload, ensure_ascii=False).encode("utf-8")
        handler.send_response(status)
        if payload is not None:
            is_problem = status >= 400 and "type" in payload
            handler.send_header("Content-Type", "application/problem+json" if is_problem else "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("X-Request-Id", request_id)
        handler.end_headers()
        handler.wfile.write(data)

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.method == method.upper() and path.startswith(fault.path_prefix):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    @staticmethod
    def _fault_answer(fault: _Fault) -> tuple[int, Json]:
        error = problem(fault.status, "ErroInternoDoServidor", "Erro interno do servidor",
                        "Falha simulada do PSP.")
        return error.status, error.body

    def _dispatch(self, request: _Request, body_error: bool) -> tuple[int, Json | None]:
        try:
            route = self._route(request)
            if body_error:
                raise problem(400, "RequisicaoInvalida", "Requisição inválida", "O corpo não é JSON válido.")
            if route != "_token":
                self._authorize(request.headers)
            return getattr(self, route)(request)
        except ApiError as error:
            return error.status, error.body
        except Exception:  # a bug in the fake: answer 500 and keep the traceback for the test to see
            self.errors.append(traceback.format_exc())
            error = problem(500, "ErroInternoDoServidor", "Erro interno do servidor", "Erro no fake.")
            return error.status, error.body

    @staticmethod
    def _route(request: _Request) -> str:
        path_matched = False
        for method, pattern, name in _ROUTES:
            match = pattern.fullmatch(request.path)
            if match is None:
                continue
            path_matched = True
            if method == request.method:
                request.params = {key: unquote(value) for key, value in match.groupdict().items()}
                return name
        if path_matched:
            raise problem(405, "MetodoNaoPermitido", "Método não permitido", f"{request.method} {request.path}")
        raise problem(404, "NaoEncontrado", "Não encontrado", f"Nenhum recurso em {request.path}.")

    def _authorize(self, headers: Message) -> None:
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        with self._lock:
            expires = self._tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if expires is None or self.now() >= expires:
            raise problem(401, "AcessoNegado", "Acesso negado",
                          "Requisição sem token de acesso válido: obtenha um em /oauth/token.")

    # --- Routes ------------------------------------------------------------------------------------------------------
    def _token(self, request: _Request) -> tuple[int, Json]:
        with self._lock:
            self.token_requests += 1
        scheme, _, encoded = (request.headers.get("Authorization") or "").partition(" ")
        try:
            credentials = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            credentials = ""
        client_id, _, client_secret = credentials.partition(":")
        if scheme.lower() != "basic" or (client_id, client_secret) != (self.client_id, self.client_secret):
            raise ApiError(401, {"error": "invalid_client", "error_description": "Credenciais inválidas."})
        if not isinstance(request.body, dict) or request.body.get("grant_type") != "client_credentials":
            raise ApiError(401, {"error": "invalid_client",
                                 "error_description": "grant_type deve ser client_credentials."})
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[token] = self.now() + timedelta(seconds=self.token_lifetime)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": self.token_lifetime,
                     "scope": SCOPE}

    def _brcode(self, location: str, amount: str) -> str:
        """The dynamic BR Code of a charge: its location URL instead of a key, as PSPs issue for a cob."""
        payload = "".join([
            tlv("00", "01"),
            tlv("01", "12"),  # point of initiation: 12, the code is for one payment
            tlv("26", tlv("00", "br.gov.bcb.pix") + tlv("25", location)),
            tlv("52", "0000"),
            tlv("53", "986"),
            tlv("54", amount),
            tlv("58", "BR"),
            tlv("59", MERCHANT_NAME),
            tlv("60", MERCHANT_CITY),
            tlv("62", tlv("05", "***")),
            "6304",
        ])
        return payload + crc16(payload)

    def _cob_create(self, request: _Request) -> tuple[int, Json]:
        txid = request.params["txid"]
        if not _TXID.fullmatch(txid):
            raise _invalid("CobOperacaoInvalida", "Cobrança inválida",
                           [_violation("O txid deve ter de 26 a 35 caracteres [a-zA-Z0-9].", "txid")])
        body = request.body if isinstance(request.body, dict) else {}
        violacoes: list[dict[str, str]] = []
        if not isinstance(request.body, dict):
            violacoes.append(_violation("O corpo deve ser um objeto JSON.", "body"))
        calendario = body.get("calendario", {})
        expiracao = calendario.get("expiracao", 86400) if isinstance(calendario, dict) else None
        if isinstance(expiracao, bool) or not isinstance(expiracao, int) or expiracao <= 0:
            violacoes.append(_violation("A expiração deve ser um inteiro positivo de segundos.",
                                        "calendario.expiracao"))
        if "devedor" in body:
            _check_person(body["devedor"], "devedor", violacoes, name_required=True)
        valor = body.get("valor")
        _check_amount(valor.get("original") if isinstance(valor, dict) else None, "valor.original", violacoes)
        if body.get("chave") != self.pix_key:
            violacoes.append(_violation("A chave não pertence a este recebedor.", "chave"))
        solicitacao = body.get("solicitacaoPagador")
        if solicitacao is not None and (not isinstance(solicitacao, str) or len(solicitacao) > 140):
            violacoes.append(_violation("Até 140 caracteres.", "solicitacaoPagador"))
        if violacoes:
            raise _invalid("CobOperacaoInvalida", "Cobrança inválida", violacoes)
        with self._lock:
            if txid in self._cobs:
                raise problem(400, "CobOperacaoInvalida", "Cobrança já existe",
                              f"Já existe uma cobrança com o txid {txid}.",
                              [_violation("O txid já foi utilizado.", "txid")])
            now = rfc3339(self.now())
            location = f"pix.example.com/qr/v2/{uuid.uuid4().hex}"
            cob: Json = {"calendario": {"criacao": now, "expiracao": expiracao}, "txid": txid, "revisao": 0,
                         "loc": {"id": self._next_location_id, "location": location, "tipoCob": "cob",
                                 "criacao": now},
                         "location": location, "status": ATIVA}
            self._next_location_id += 1
            if "devedor" in body:
                cob["devedor"] = {key: body["devedor"][key] for key in ("cpf", "cnpj", "nome")
                                  if key in body["devedor"]}
            cob.update({"valor": {"original": valor["original"]}, "chave": self.pix_key})
            if solicitacao is not None:
                cob["solicitacaoPagador"] = solicitacao
            cob["pixCopiaECola"] = self._brcode(location, valor["original"])
            self._cobs[txid] = cob
            return 201, self._cob_view(txid)

    def _cob_lookup(self, txid: str) -> Json:
        if txid not in self._cobs:
            raise problem(404, "CobNaoEncontrado", "Cobrança não encontrada",
                          f"Nenhuma cobrança com o txid {txid}.")
        return self._cobs[txid]

    def _cob_read(self, request: _Request) -> tuple[int, Json]:
        with self._lock:
            self._cob_lookup(request.params["txid"])
            return 200, self._cob_view(request.params["txid"])

    def _cob_patch(self, request: _Request) -> tuple[int, Json]:
        txid = request.params["txid"]
        body = request.body
        if not isinstance(body, dict) or set(body) != {"status"} or body["status"] != REMOVED_BY_RECEIVER:
            raise _invalid("CobOperacaoInvalida", "Cobrança inválida", [_violation(
                f"Este fake só aceita {{\"status\": \"{REMOVED_BY_RECEIVER}\"}}.", "status")])
        with self._lock:
            cob = self._cob_lookup(txid)
            self._expire_if_due(cob)
            if cob["status"] != ATIVA:
                raise problem(400, "CobOperacaoInvalida", "Cobrança inválida",
                              f"A cobrança não está ATIVA (status {cob['status']}).")
            cob["status"] = REMOVED_BY_RECEIVER
            cob["revisao"] += 1
            return 200, self._cob_view(txid)

    def _pix_lookup(self, e2eid: str) -> Json:
        if e2eid not in self.received:
            raise problem(404, "PixNaoEncontrado", "Pix não encontrado", f"Nenhum Pix recebido com o e2eid {e2eid}.")
        return self.received[e2eid]

    def _pix_read(self, request: _Request) -> tuple[int, Json]:
        with self._lock:
            self._pix_lookup(request.params["e2eid"])
            return 200, self._pix_view(request.params["e2eid"])

    @staticmethod
    def _listing(request: _Request) -> tuple[datetime, datetime, int, int]:
        """A listing's query as the standard has it: `inicio` and `fim` (RFC 3339, required) and `paginacao`."""
        violacoes: list[dict[str, str]] = []
        bounds: dict[str, datetime] = {}
        for name in ("inicio", "fim"):
            try:
                bounds[name] = parse_rfc3339(request.query[name])
            except (KeyError, ValueError):
                violacoes.append(_violation("Obrigatório, no formato RFC 3339.", name))
        paging: dict[str, int] = {}
        for name, default, low, high in (("paginaAtual", 0, 0, 10**9), ("itensPorPagina", 100, 1, 1000)):
            text = request.query.get(f"paginacao.{name}", str(default))
            if not text.isdigit() or not low <= int(text) <= high:
                violacoes.append(_violation(f"Inteiro de {low} a {high}.", f"paginacao.{name}"))
            else:
                paging[name] = int(text)
        if violacoes:
            raise _invalid("RequisicaoInvalida", "Requisição inválida", violacoes)
        return bounds["inicio"], bounds["fim"], paging["paginaAtual"], paging["itensPorPagina"]

    @staticmethod
    def _page(request: _Request, items: str, matching: list[Json], page: int, size: int) -> Json:
        return {"parametros": {"inicio": request.query["inicio"], "fim": request.query["fim"], "paginacao": {
            "paginaAtual": page, "itensPorPagina": size, "quantidadeDePaginas": math.ceil(len(matching) / size),
            "quantidadeTotalDeItens": len(matching)}}, items: matching[page * size:(page + 1) * size]}

    def _pix_list(self, request: _Request) -> tuple[int, Json]:
        start, end, page, size = self._listing(request)
        with self._lock:
            matching = sorted((pix for pix in self.received.values()
                               if start <= parse_rfc3339(pix["horario"]) <= end
                               and ("txid" not in request.query or pix.get("txid") == request.query["txid"])),
                              key=lambda pix: parse_rfc3339(pix["horario"]))
            views = [self._pix_view(pix["endToEndId"]) for pix in matching[page * size:(page + 1) * size]]
        body = self._page(request, "pix", matching, page, size)
        body["pix"] = views
        return 200, body

    def _infracao_list(self, request: _Request) -> tuple[int, Json]:
        start, end, page, size = self._listing(request)
        with self._lock:
            matching = sorted((copy.deepcopy(infracao) for infracao in self.infracoes.values()
                               if start <= parse_rfc3339(infracao["criadoEm"]) <= end),
                              key=lambda infracao: infracao["criadoEm"])
        return 200, self._page(request, "infracoes", matching, page, size)

    def _infracao_defesa(self, request: _Request) -> tuple[int, None]:
        id_infracao = request.params["id_infracao"]
        body = request.body if isinstance(request.body, dict) else {}
        violacoes: list[dict[str, str]] = []
        if body.get("analise") not in ("aceito", "rejeitado"):
            violacoes.append(_violation("Informe aceito ou rejeitado.", "analise"))
        justificativa = body.get("justificativa")
        if not isinstance(justificativa, str) or not justificativa.strip():
            violacoes.append(_violation("Informe a justificativa.", "justificativa"))
        if violacoes:
            raise _invalid("InfracaoOperacaoInvalida", "Defesa inválida", violacoes)
        with self._lock:
            infracao = self.infracoes.get(id_infracao)
            if infracao is None:
                raise problem(404, "InfracaoNaoEncontrada", "Infração não encontrada",
                              f"Nenhuma infração com o id {id_infracao}.")
            if infracao["status"] != ABERTA:
                raise problem(400, "InfracaoOperacaoInvalida", "Infração não está aberta",
                              f"A infração está {infracao['status']}: a defesa não pode ser enviada.")
            now = rfc3339(self.now())
            accepted = body["analise"] == "aceito"
            infracao.update(status=ACEITA if accepted else EM_DEFESA, defesa=justificativa, atualizadoEm=now)
            infracao["dadosAnalise"]["recebimentoDefesa"] = now
            self.defences.append({"idInfracao": id_infracao, "analise": body["analise"],
                                  "justificativa": justificativa})
        return 200, None

    def _devolucao_create(self, request: _Request) -> tuple[int, Json]:
        e2eid, devolucao_id = request.params["e2eid"], request.params["devolucao_id"]
        if not _ID.fullmatch(devolucao_id):
            raise _invalid("PixDevolucaoInvalida", "Devolução inválida",
                           [_violation("O id deve ter de 1 a 35 caracteres [a-zA-Z0-9].", "id")])
        with self._lock:
            pix = self._pix_lookup(e2eid)
            refunds = self.devolucoes.setdefault(e2eid, {})
            if devolucao_id in refunds:
                return 201, copy.deepcopy(refunds[devolucao_id])
            violacoes: list[dict[str, str]] = []
            valor = request.body.get("valor") if isinstance(request.body, dict) else None
            _check_amount(valor, "valor", violacoes)
            if violacoes:
                raise _invalid("PixDevolucaoInvalida", "Devolução inválida", violacoes)
            already = sum(to_cents(refund["valor"]) for refund in refunds.values() if refund["status"] != NAO_REALIZADO)
            if already + to_cents(valor) > to_cents(pix["valor"]):
                raise problem(400, "PixDevolucaoInvalida", "Devolução inválida",
                              f"A soma das devoluções excederia o valor do Pix ({pix['valor']}).",
                              [_violation("O valor excede o disponível para devolução.", "valor")])
            now = self.now()
            refund = {"id": devolucao_id, "rtrId": _end_to_end_id("D", EFI_ISPB, now), "valor": valor,
                      "horario": {"solicitacao": rfc3339(now)}, "status": EM_PROCESSAMENTO}
            refunds[devolucao_id] = refund
            self._schedule_settlement(lambda: self._settle_devolucao_locked(e2eid, devolucao_id))
            return 201, copy.deepcopy(refund)

    def _devolucao_read(self, request: _Request) -> tuple[int, Json]:
        e2eid, devolucao_id = request.params["e2eid"], request.params["devolucao_id"]
        with self._lock:
            self._pix_lookup(e2eid)
            refund = self.devolucoes.get(e2eid, {}).get(devolucao_id)
            if refund is None:
                raise problem(404, "PixDevolucaoNaoEncontrada", "Devolução não encontrada",
                              f"Nenhuma devolução {devolucao_id} do Pix {e2eid}.")
            return 200, copy.deepcopy(refund)

    def _send_create(self, request: _Request) -> tuple[int, Json]:
        id_envio = request.params["id_envio"]
        with self._lock:
            self.send_attempts[id_envio] += 1
        if not _ID.fullmatch(id_envio):
            raise _invalid("EnvioOperacaoInvalida", "Envio inválido",
                           [_violation("O idEnvio deve ter de 1 a 35 caracteres [a-zA-Z0-9].", "idEnvio")])
        body = request.body if isinstance(request.body, dict) else {}
        violacoes: list[dict[str, str]] = []
        _check_amount(body.get("valor"), "valor", violacoes)
        pagador = body.get("pagador")
        if not isinstance(pagador, dict) or pagador.get("chave") != self.pix_key:
            violacoes.append(_violation("A chave do pagador deve ser a deste correntista.", "pagador.chave"))
        favorecido = body.get("favorecido")
        if not isinstance(favorecido, dict) or not isinstance(favorecido.get("chave"), str) or not favorecido["chave"]:
            violacoes.append(_violation("Informe a chave Pix do favorecido.", "favorecido.chave"))
        else:
            _check_person(favorecido, "favorecido", violacoes, name_required=False)
        with self._lock:
            if id_envio in self.sends:
                raise problem(409, "EnvioDuplicado", "idEnvio já utilizado",
                              f"Já existe um envio com o idEnvio {id_envio}; nada foi enviado.")
            if violacoes:
                raise _invalid("EnvioOperacaoInvalida", "Envio inválido", violacoes)
            now = self.now()
            send: Json = {"endToEndId": _end_to_end_id("E", EFI_ISPB, now), "idEnvio": id_envio,
                          "valor": body["valor"], "chave": favorecido["chave"], "status": EM_PROCESSAMENTO,
                          "horario": {"solicitacao": rfc3339(now)}, "favorecido": copy.deepcopy(favorecido)}
            if "infoPagador" in pagador:
                send["infoPagador"] = pagador["infoPagador"]
            self.sends[id_envio] = send
            self.sends_created[id_envio] += 1
            self._schedule_settlement(lambda: self._settle_send_locked(id_envio))
            return 201, {"idEnvio": id_envio, "e2eId": send["endToEndId"], "valor": send["valor"],
                         "horario": {"solicitacao": send["horario"]["solicitacao"]}, "status": EM_PROCESSAMENTO}

    def _send_not_found(self, what: str) -> ApiError:
        return problem(404, "EnvioNaoEncontrado", "Envio não encontrado", f"Nenhum envio com {what}.")

    def _send_read(self, request: _Request) -> tuple[int, Json]:
        with self._lock:
            send = self.sends.get(request.params["id_envio"])
            if send is None:
                raise self._send_not_found(f"o idEnvio {request.params['id_envio']}")
            return 200, copy.deepcopy(send)

    def _send_read_by_e2eid(self, request: _Request) -> tuple[int, Json]:
        with self._lock:
            for send in self.sends.values():
                if send["endToEndId"] == request.params["e2eid"]:
                    return 200, copy.deepcopy(send)
        raise self._send_not_found(f"o e2eId {request.params['e2eid']}")

    def _check_own_key(self, chave: str) -> None:
        if chave != self.pix_key:
            raise _invalid("WebhookOperacaoInvalida", "Webhook inválido",
                           [_violation("A chave não pertence a este correntista.", "chave")])

    def _webhook_put(self, request: _Request) -> tuple[int, Json]:
        chave = request.params["chave"]
        self._check_own_key(chave)
        url = request.body.get("webhookUrl") if isinstance(request.body, dict) else None
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise _invalid("WebhookOperacaoInvalida", "Webhook inválido",
                           [_violation("Informe uma URL http ou https.", "webhookUrl")])
        with self._lock:
            self.webhooks[chave] = {"webhookUrl": url, "chave": chave, "criacao": rfc3339(self.now())}
            self.webhook_skip_mtls_checking[chave] = request.headers.get("x-skip-mtls-checking")
            return 200, copy.deepcopy(self.webhooks[chave])

    def _webhook_lookup(self, chave: str) -> Json:
        if chave not in self.webhooks:
            raise problem(404, "WebhookNaoEncontrado", "Webhook não encontrado",
                          f"Nenhum webhook registrado para a chave {chave}.")
        return self.webhooks[chave]

    def _webhook_get(self, request: _Request) -> tuple[int, Json]:
        with self._lock:
            return 200, copy.deepcopy(self._webhook_lookup(request.params["chave"]))

    def _webhook_delete(self, request: _Request) -> tuple[int, None]:
        with self._lock:
            self._webhook_lookup(request.params["chave"])
            del self.webhooks[request.params["chave"]]
            self.webhook_skip_mtls_checking.pop(request.params["chave"], None)
        return 204, None
