"""A client of the Central Bank's API Pix standard (`bacen/pix-api`): immediate charges (`cob`), received Pix,
devoluções and the webhook, over mutual TLS with OAuth2 client credentials. Every bank that implements the standard
(Efí, Itaú, Inter, Sicoob, Santander…) speaks this; a rail module adds what its bank does beyond it.

Errors: a 4xx is the bank saying no (`RailRefused`, with its RFC 7807 body); a timeout, a broken connection after the
request left, or a 5xx is an unknown outcome (`RailTimeout`): the caller keeps its object pending and asks later
under the same id, never sends again under a new one. A 404 of a lookup is an answer: None.

Every call is logged (method, path, status, duration, the bank's request id) with no token, secret or certificate.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import requests

from core.api import timestamp
from payments.rails.base import RailError, RailRefused, RailTimeout

logger = logging.getLogger(__name__)

TXID = re.compile(r"[a-zA-Z0-9]{26,35}")  # a `cob`'s txid (the standard's rule)
OPERATION_ID = re.compile(r"[a-zA-Z0-9]{1,35}")  # a devolução's id, Efí's idEnvio
AMOUNT = re.compile(r"(\d{1,10})\.(\d{2})")
# The headers banks put their correlation ids in; whichever a response has is logged.
CORRELATION_HEADERS = ("x-request-id", "x-correlation-id", "x-trace-id")
TOKEN_MARGIN_SECONDS = 60  # a token is fetched again this long before it expires


def amount_format(cents: int) -> str:
    """150 -> "1.50": the standard's decimal string, from integer cents (never a float)."""
    return f"{cents // 100}.{cents % 100:02d}"


def amount_parse(value: str) -> int:
    """"1.50" -> 150. Raises ValueError for anything but the standard's shape."""
    match = AMOUNT.fullmatch(str(value))
    if match is None:
        raise ValueError(f"not an API Pix amount: {value!r}")
    return int(match[1]) * 100 + int(match[2])


class ApiPixClient:
    """One bank's API Pix, for one process: a pooled HTTPS session presenting the client certificate, and the OAuth2
    token cached until shortly before it expires (fetched again at once when the bank answers 401)."""

    def __init__(self, *, rail: str, base_url: str, client_id: str, client_secret: str, cert_file: str,
                 ca_file: str = "", timeout: float = 10.0, token_path: str = "/oauth/token"):  # noqa: S107
        self.rail = rail
        self.base_url = base_url.rstrip("/")
        self.token_path = token_path
        self.timeout = timeout
        self._credentials = (client_id, client_secret)
        self._cert_file = cert_file
        self._ca_file = ca_file
        self._session: requests.Session | None = None
        self._token = ""
        self._token_expires = 0.0
        self._lock = threading.Lock()

    # --- Transport ---------------------------------------------------------------------------------------------------
    @property
    def session(self) -> requests.Session:
        if self._session is None:
            session = requests.Session()
            session.cert = self._cert_file  # one PEM with the certificate and its key
            session.verify = self._ca_file or True
            session.trust_env = False  # no proxy from the environment between us and the bank
            self._session = session
        return self._session

    def _send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        started = time.perf_counter()
        status: int | str = "no answer"
        request_id = ""
        try:
            response = self.session.request(method, self.base_url + path, timeout=self.timeout, **kwargs)
            status = response.status_code
            request_id = next((response.headers[h] for h in CORRELATION_HEADERS if h in response.headers), "")
            return response
        except requests.Timeout as exc:
            status = "timeout"
            raise RailTimeout(f"{self.rail}: {method} {path} timed out after {self.timeout} s") from exc
        except requests.ConnectionError as exc:
            # Refused before anything was sent, or cut after: which one is not knowable here, so it is unknown.
            status = "connection error"
            raise RailTimeout(f"{self.rail}: {method} {path}: {type(exc).__name__}") from exc
        except requests.RequestException as exc:
            raise RailError(f"{self.rail}: {method} {path}: {type(exc).__name__}") from exc
        finally:
            logger.info("rails.call", extra={
                "rail": self.rail, "method": method, "path": path.partition("?")[0], "status": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1), "rail_request_id": request_id})

    def _access_token(self, *, renew: bool = False) -> str:
        with self._lock:
            if renew or not self._token or time.monotonic() >= self._token_expires:
                response = self._send("POST", self.token_path, auth=self._credentials,
                                      json={"grant_type": "client_credentials"})
                if response.status_code != 200:
                    raise RailError(f"{self.rail}: the bank refused our credentials ({response.status_code})")
                body = response.json()
                lifetime = float(body.get("expires_in") or 0)
                self._token = body["access_token"]
                self._token_expires = time.monotonic() + max(0.0, lifetime - min(TOKEN_MARGIN_SECONDS, lifetime / 2))
            return self._token

    def call(self, method: str, path: str, *, body: dict | None = None, params: dict | None = None,
             headers: dict | None = None, missing_ok: bool = False) -> dict | None:
        """One API call with the bearer token; the body of a 2xx, None for a 404 when `missing_ok`."""
        response = None
        for renew in (False, True):
            response = self._send(method, path, json=body, params=params, headers={
                **(headers or {}), "Authorization": f"Bearer {self._access_token(renew=renew)}"})
            if response.status_code != 401:
                break
        assert response is not None
        if response.status_code >= 500 or response.status_code in (408, 429):
            # Failed, timed out or too busy to say: nothing is known; ask again later under the same id.
            raise RailTimeout(f"{self.rail}: {method} {path} answered {response.status_code}")
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code >= 400:
            problem = self._problem(response)
            raise RailRefused(f"{self.rail}: {method} {path} refused ({response.status_code}): "
                              f"{problem.get('title', '')} {problem.get('detail', '')}".strip(),
                              status=response.status_code, problem=problem)
        return self._json(response)

    @staticmethod
    def _json(response: requests.Response) -> dict:
        if not response.content.strip():
            return {}  # a 2xx with no body (204, or an action answered with an empty 200)
        try:
            data = response.json()
        except ValueError as exc:
            raise RailTimeout(f"an answer that is not JSON ({response.status_code})") from exc
        if not isinstance(data, dict):
            raise RailTimeout("an answer that is not a JSON object")
        return data

    @staticmethod
    def _problem(response: requests.Response) -> dict:
        try:
            data = response.json()
        except ValueError:
            return {"status": response.status_code}
        return data if isinstance(data, dict) else {"status": response.status_code}

    # --- Immediate charges -------------------------------------------------------------------------------------------
    def cob_create(self, txid: str, *, expires_in: int, amount: int, key: str, debtor: dict | None,
                   description: str) -> dict:
        body: dict[str, Any] = {"calendario": {"expiracao": expires_in}, "valor": {"original": amount_format(amount)},
                                "chave": key}
        if debtor:
            body["devedor"] = debtor
        if description:
            body["solicitacaoPagador"] = description[:140]
        return self.call("PUT", f"/v2/cob/{txid}", body=body)  # type: ignore[return-value]

    def cob_get(self, txid: str) -> dict | None:
        return self.call("GET", f"/v2/cob/{txid}", missing_ok=True)

    def cob_remove(self, txid: str) -> dict:
        return self.call("PATCH", f"/v2/cob/{txid}",  # type: ignore[return-value]
                         body={"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"})

    # --- Received Pix and devoluções ---------------------------------------------------------------------------------
    def pix_get(self, end_to_end_id: str) -> dict | None:
        return self.call("GET", f"/v2/pix/{end_to_end_id}", missing_ok=True)

    def pix_list(self, *, start: datetime, end: datetime, page_size: int = 100) -> Iterator[dict]:
        """Every Pix received in [start, end], page after page."""
        return self.paged("/v2/pix", "pix", start=start, end=end, page_size=page_size)

    def paged(self, path: str, items: str, *, start: datetime, end: datetime, page_size: int = 100) -> Iterator[dict]:
        """Every item of a listing in [start, end] (the standard's `inicio`/`fim` and `paginacao`), page after
        page: `items` names the list in each answer."""
        page = 0
        while True:
            answer = self.call("GET", path, params={
                "inicio": timestamp(start), "fim": timestamp(end),
                "paginacao.paginaAtual": page, "paginacao.itensPorPagina": page_size}) or {}
            yield from answer.get(items) or []
            pages = ((answer.get("parametros") or {}).get("paginacao") or {}).get("quantidadeDePaginas", 0)
            page += 1
            if page >= int(pages or 0):
                return

    def devolucao_create(self, end_to_end_id: str, devolucao_id: str, *, amount: int) -> dict:
        return self.call("PUT", f"/v2/pix/{end_to_end_id}/devolucao/{devolucao_id}",  # type: ignore[return-value]
                         body={"valor": amount_format(amount)})

    def devolucao_get(self, end_to_end_id: str, devolucao_id: str) -> dict | None:
        return self.call("GET", f"/v2/pix/{end_to_end_id}/devolucao/{devolucao_id}", missing_ok=True)

    # --- Webhook -----------------------------------------------------------------------------------------------------
    def webhook_register(self, key: str, url: str, *, headers: dict | None = None) -> dict:
        """Register the URL the bank notifies for `key` (the bank appends `/pix` to it)."""
        return self.call("PUT", f"/v2/webhook/{key}", body={"webhookUrl": url},  # type: ignore[return-value]
                         headers=headers)

    def webhook_get(self, key: str) -> dict | None:
        return self.call("GET", f"/v2/webhook/{key}", missing_ok=True)
