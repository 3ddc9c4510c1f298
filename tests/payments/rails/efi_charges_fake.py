"""A stateful fake of Efí's Charges API (API Cobranças): cards paid with a browser payment_token, boletos payable
by Pix (bolix), refunds, cancels, the installments table and notification tokens with their whole history.

Served over real HTTPS (the server certificate of `efi_fake.Certificates`; no client certificate, as at Efí) with
OAuth2 client credentials at `POST /v1/authorize` (HTTP Basic), Efí's envelope `{"code": 200, "data": ...}` and its
errors `{"code", "error", "error_description"}`. On every status change of a charge with a notification_url it POSTs
the form `notification=<token>` there, as Efí does; the token's history is read with `GET /v1/notification/:token`.

Tests play the payer, the issuer and the bank with the control methods:

    token = fake.card_token(outcome="paid")          # what Efí's browser library would hand the page
    fake.card_token(outcome="unpaid", reason="Saldo insuficiente", retry=True)
    fake.fail_next("POST", "/v1/charge/", mode="drop")  # /pay is done, its answer lost (connection cut)
    fake.pay_billet(charge_id, by="pix", amount=10_200)  # late, with fine; a second call pays twice
    fake.contest(charge_id); fake.chargeback(charge_id, won=False); fake.expire(charge_id)

Amounts are integer cents, as in Efí's Charges API.
"""

from __future__ import annotations

import base64
import binascii
import copy
import itertools
import json
import secrets
import socket
import ssl
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import requests

from payments.formats import boleto
from payments.formats.pix import crc16, tlv
from tests.payments.rails.efi_fake import Certificates, _Handler, _Server

Json = dict[str, Any]
Transport = Callable[[str, str], int]

BRASILIA = ZoneInfo("America/Sao_Paulo")
EFI_BANK_CODE = "364"
STATUSES = ("new", "waiting", "approved", "paid", "unpaid", "refunded", "contested", "canceled", "settled",
            "expired")
REFUSAL = "Transação não autorizada pelo banco emissor do cartão."
BRANDS = ("visa", "mastercard", "amex", "elo", "hipercard")
FREE_INSTALLMENTS = 3  # up to 3x without interest, then 1.99% a month on the total (the fake's account settings)
INTEREST_BPS_MONTH = 199
_FAULT_MODES = ("before", "after", "hang", "drop")


TOKENIZER_SCRIPT_PATH = "/js/payment-token-efi.js"
# The payer's card, by its last four digits, as the stub tokenizer's tokens answer /pay (any other card: paid).
BROWSER_CARDS = {"0002": "unpaid", "0010": "approved"}
# Efí's browser library as the page uses it (`EfiPay.CreditCard`, chained setters, promises), tokenizing through the
# fake instead of Efí. A simple cross-origin POST (text/plain): no preflight.
TOKENIZER_SCRIPT = """
(function () {
  var script = document.currentScript, base = script.src.replace(/\\/js\\/[^/]*$/, "");
  var state = {};
  function brandOf(number) {
    if (/^4/.test(number)) return "visa";
    if (/^5[1-5]/.test(number)) return "mastercard";
    if (/^3[47]/.test(number)) return "amex";
    if (/^(636368|438935|504175|451416|636297|5067|4576|4011|506699)/.test(number)) return "elo";
    if (/^(606282|3841)/.test(number)) return "hipercard";
    return "unsupported";
  }
  var CreditCard = {
    setAccount: function (value) { state.account = value; return CreditCard; },
    setEnvironment: function (value) { state.environment = value; return CreditCard; },
    setCardNumber: function (value) { state.number = value; return CreditCard; },
    setBrand: function (value) { state.brand = value; return CreditCard; },
    setTotal: function (value) { state.total = value; return CreditCard; },
    setCreditCardData: function (data) { state.card = data; return CreditCard; },
    debugger: function () { return CreditCard; },
    verifyCardBrand: function () { return Promise.resolve(brandOf(String(state.number || ""))); },
    getPaymentToken: function () {
      var card = state.card || {};
      return fetch(base + "/tokenize", {method: "POST", headers: {"Content-Type": "text/plain"},
        body: JSON.stringify({account: state.account, environment: state.environment, brand: card.brand,
                              number: card.number})})
        .then(function (response) { return response.json(); });
    }
  };
  window.EfiPay = {CreditCard: CreditCard};
})();
"""


class ApiError(Exception):
    def __init__(self, status: int, error: str, description: Any, code: int | None = None) -> None:
        super().__init__(str(description))
        self.status = status
        self.body = {"code": code or status, "error": error, "error_description": description}


def invalid(prop: str, message: str) -> ApiError:
    return ApiError(400, "validation_error", {"property": prop, "message": message}, code=3500034)


def _default_transport(url: str, token: str) -> int:
    """POST the notification as Efí does: a form with one field, the token."""
    return requests.post(url, data={"notification": token}, timeout=10).status_code


@dataclass
class _Fault:
    method: str
    path_prefix: str
    mode: str
    status: int
    seconds: float
    remaining: int


class _Dropped(Exception):
    """The operation was done; the connection is cut before any answer."""


class FakeEfiCharges:
    def __init__(self, certificates: Certificates, *, client_id: str = "client-id",
                 client_secret: str = "client-secret", token_lifetime: int = 600) -> None:
        self.certificates = certificates
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_lifetime = token_lifetime
        self._lock = threading.RLock()
        self.charges: dict[int, Json] = {}
        self.card_tokens: dict[str, Json] = {}
        self.histories: dict[str, list[Json]] = {}  # notification token -> entries
        self.requests_log: list[Json] = []
        self.deliveries: list[Json] = []
        self.tokenizations: list[Json] = []  # what the browser's tokenizer was given (never the whole number)
        self.tokens_read: Counter[str] = Counter()  # Efí counts a notification delivered when its token is read
        self.pays: Counter[int] = Counter()  # POST /pay per charge_id
        self.token_requests = 0
        self.errors: list[str] = []  # tracebacks of bugs in the fake itself (answered 500)
        self.connection_errors: list[str] = []  # answers a client stopped waiting for
        self.drop_notifications = False
        self.notification_transport: Transport = _default_transport
        self._ids = itertools.count(880_000)
        self._entry_ids = itertools.count(1)
        self._tokens: dict[str, float] = {}
        self._faults: list[_Fault] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[Any] = set()
        self._today_offset = timedelta(0)

    # --- Lifecycle ---------------------------------------------------------------------------------------------------
    def start(self) -> FakeEfiCharges:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certificates.server_file)  # no client certificate asked for
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self  # type: ignore[assignment]
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-efi-charges", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for connection in list(self._connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeEfiCharges:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"https://127.0.0.1:{self._server.server_address[1]}/v1"

    def _connection_opened(self, connection: Any) -> None:
        with self._lock:
            self._connections.add(connection)

    def _connection_closed(self, connection: Any) -> None:
        with self._lock:
            self._connections.discard(connection)

    def today(self) -> date:
        """Efí's calendar day: Brasília's, as boletos' due dates are."""
        return (datetime.now(BRASILIA) + self._today_offset).date()

    def advance_days(self, days: int) -> None:
        self._today_offset += timedelta(days=days)

    # --- Controls ----------------------------------------------------------------------------------------------------
    def card_token(self, *, outcome: str = "paid", reason: str = REFUSAL, retry: bool = False, brand: str = "visa",
                   last4: str = "1111", reuse: bool = False) -> str:
        """A payment_token as Efí's browser library returns it. `outcome`: what `/pay` answers (paid, unpaid,
        approved: the issuer said yes and Efí's analysis is pending, waiting)."""
        assert outcome in ("paid", "unpaid", "approved", "waiting"), outcome
        token = secrets.token_hex(20)
        with self._lock:
            self.card_tokens[token] = {"outcome": outcome, "reason": reason, "retry": retry, "brand": brand,
                                       "mask": f"XXXXXXXXXXXX{last4}", "reuse": reuse, "used": False}
        return token

    def fail_next(self, method: str, path_prefix: str, *, mode: str, status: int = 500, seconds: float = 0.0,
                  times: int = 1) -> None:
        """The next `times` requests misbehave. before: answer `status`, do nothing. after: do it, answer `status`.
        hang: sleep `seconds` first (a slow Efí; the operation happens). drop: do it, cut the connection unanswered."""
        assert mode in _FAULT_MODES, mode
        with self._lock:
            self._faults.append(_Fault(method.upper(), path_prefix, mode, status, seconds, times))

    def approve(self, charge_id: int) -> None:
        """Efí's analysis ends well: an approved card charge becomes paid."""
        self._change(charge_id, "paid", value=self.charges[charge_id]["total"])

    def refuse(self, charge_id: int, reason: str = REFUSAL) -> None:
        with self._lock:
            self.charges[charge_id]["refusal"] = {"reason": reason, "retry": False}
        self._change(charge_id, "unpaid")

    def pay_billet(self, charge_id: int, *, by: str = "barcode", amount: int | None = None) -> None:
        """The payer pays the bolix by its barcode or by its Pix code, any amount (by default the total, with the
        fine if it is past due). A second payment of a paid bolix is recorded too (paid again)."""
        assert by in ("barcode", "pix"), by
        with self._lock:
            charge = self.charges[charge_id]
            assert charge["payment"]["method"] == "banking_billet", charge_id
            if amount is None:
                amount = charge["total"]
                fine = charge["payment"]["banking_billet"].get("configurations", {}).get("fine", 0)
                if self.today() > date.fromisoformat(charge["payment"]["banking_billet"]["expire_at"]):
                    amount += charge["total"] * fine // 10_000
            charge.setdefault("payments", []).append({"by": by, "value": amount})
        self._change(charge_id, "paid", value=amount, received_by_bank_at=self.today().isoformat(), force=True)

    def settle(self, charge_id: int) -> None:
        """Marked paid by hand in Efí's dashboard: no money through Efí."""
        self._change(charge_id, "settled")

    def contest(self, charge_id: int) -> None:
        """The cardholder disputes the payment (a chargeback opens)."""
        self._change(charge_id, "contested")

    def chargeback(self, charge_id: int, *, won: bool) -> None:
        """The dispute ends: won, the charge is paid again; lost, the money goes back to the cardholder."""
        self._change(charge_id, "paid" if won else "refunded")

    def expire(self, charge_id: int) -> None:
        self._change(charge_id, "expired")

    def history(self, charge_id: int) -> list[Json]:
        with self._lock:
            return copy.deepcopy(self.histories.get(self.charges[charge_id]["token"], []))

    # --- State -------------------------------------------------------------------------------------------------------
    def _change(self, charge_id: int, status: str, *, value: int | None = None, received_by_bank_at: str = "",
                force: bool = False, entry_only: bool = False) -> None:
        """A status change: recorded in the token's history and notified (outside the lock). `entry_only`: an entry
        (a partial refund) that leaves the charge's own status as it is."""
        with self._lock:
            charge = self.charges[charge_id]
            previous = charge["status"]
            if previous == status and not force:
                return
            if not entry_only:
                charge["status"] = status
            entry: Json = {"id": next(self._entry_ids), "type": "charge", "custom_id": charge["custom_id"],
                           "status": {"current": status, "previous": previous},
                           "identifiers": {"charge_id": charge_id},
                           "created_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")}
            if value is not None:
                entry["value"] = value
            if received_by_bank_at:
                entry["received_by_bank_at"] = received_by_bank_at
            self.histories.setdefault(charge["token"], []).append(entry)
            url, token = charge["notification_url"], charge["token"]
        if url:
            self._notify(url, token)

    def _notify(self, url: str, token: str) -> None:
        record: Json = {"url": url, "token": token, "status": None, "error": None, "dropped": self.drop_notifications}
        if not self.drop_notifications:
            try:
                record["status"] = self.notification_transport(url, token)
            except Exception as exc:
                record["error"] = repr(exc)
        with self._lock:
            self.deliveries.append(record)

    def _new_charge(self, body: Json, *, method: str = "") -> Json:
        items = body.get("items")
        if not isinstance(items, list) or not items:
            raise invalid("/items", "Informe ao menos um item.")
        total = 0
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
                raise invalid(f"/items/{index}/name", "O nome do item é obrigatório.")
            if not isinstance(item.get("value"), int) or isinstance(item.get("value"), bool) or item["value"] < 1:
                raise invalid(f"/items/{index}/value", "O valor deve ser um inteiro em centavos, maior que zero.")
            amount = item.get("amount", 1)
            if not isinstance(amount, int) or amount < 1:
                raise invalid(f"/items/{index}/amount", "A quantidade deve ser um inteiro maior que zero.")
            total += item["value"] * amount
        metadata = body.get("metadata") or {}
        url = metadata.get("notification_url") or ""
        if url and not str(url).startswith(("http://", "https://")):
            raise invalid("/metadata/notification_url", "URL inválida.")
        charge_id = next(self._ids)
        charge = {"charge_id": charge_id, "total": total, "status": "new", "custom_id": metadata.get("custom_id"),
                  "created_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"), "notification_url": url or None,
                  "items": copy.deepcopy(items), "history": [{"message": "Cobrança criada", "created_at": ""}],
                  "payment": {"method": method} if method else None, "token": str(uuid.uuid4()),
                  "refunds": []}
        self.charges[charge_id] = charge
        return charge

    def _view(self, charge: Json) -> Json:
        view = {key: copy.deepcopy(value) for key, value in charge.items()
                if key not in ("token", "payments", "refunds", "refusal")}
        if charge.get("refusal") and charge["status"] == "unpaid":
            view["reason"] = charge["refusal"]["reason"]
        if view["payment"] is None:
            del view["payment"]
        return view

    # --- HTTP --------------------------------------------------------------------------------------------------------
    def _serve(self, handler: _Handler) -> None:
        parts = urlsplit(handler.path)
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        if parts.path in (TOKENIZER_SCRIPT_PATH, "/tokenize"):
            self._serve_browser(handler, parts.path, raw)
            return
        entry: Json = {"method": handler.command, "path": parts.path, "query": parts.query, "body": None,
                       "authorization_scheme": (handler.headers.get("Authorization") or " ").split(" ")[0],
                       "status": None}
        with self._lock:
            self.requests_log.append(entry)
        fault = self._take_fault(handler.command, parts.path)
        try:
            if fault is not None and fault.mode == "hang":
                time.sleep(fault.seconds)
            if fault is not None and fault.mode == "before":
                raise ApiError(fault.status, "internal_server_error", "Falha simulada.")
            try:
                body = json.loads(raw) if raw else {}
            except ValueError as exc:
                raise ApiError(400, "invalid_json", "O corpo não é JSON válido.") from exc
            entry["body"] = body
            status, payload = self._dispatch(handler.command, parts.path, parts.query, body, handler.headers)
            if fault is not None and fault.mode == "drop":
                raise _Dropped()
            if fault is not None and fault.mode == "after":
                raise ApiError(fault.status, "internal_server_error", "Falha simulada.")
        except _Dropped:
            entry["status"] = "dropped"
            handler.close_connection = True
            try:
                handler.request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        except ApiError as error:
            status, payload = error.status, error.body
        except Exception:
            self.errors.append(traceback.format_exc())
            status, payload = 500, {"code": 500, "error": "internal_server_error", "error_description": "Erro."}
        entry["status"] = status
        data = json.dumps(payload, ensure_ascii=False).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @property
    def tokenizer_script_url(self) -> str:
        """The stand-in for Efí's browser library (EFI_TOKENIZER_SCRIPT_URL in the browser tests)."""
        return self.url.removesuffix("/v1") + TOKENIZER_SCRIPT_PATH

    def _serve_browser(self, handler: _Handler, path: str, raw: bytes) -> None:
        """The payer's browser: the tokenizer script, and the tokenization it calls (a simple cross-origin POST)."""
        with self._lock:
            self.requests_log.append({"method": handler.command, "path": path, "query": "", "body": None,
                                      "authorization_scheme": "", "status": 200})
        if path == TOKENIZER_SCRIPT_PATH:
            data, content_type = TOKENIZER_SCRIPT.encode(), "application/javascript"
        else:
            try:
                card = json.loads(raw)
                payee_code, number = str(card["account"]), "".join(ch for ch in str(card["number"]) if ch.isdigit())
            except (ValueError, KeyError, TypeError):
                payee_code, number = "", ""
            with self._lock:
                self.tokenizations.append({"payee_code": payee_code, "environment": card.get("environment"),
                                           "last4": number[-4:]})
            outcome = BROWSER_CARDS.get(number[-4:], "paid")
            token = self.card_token(outcome=outcome, reason="Saldo insuficiente." if outcome == "unpaid" else REFUSAL,
                                    brand=str(card.get("brand") or "visa"), last4=number[-4:])
            data = json.dumps({"payment_token": token, "card_mask": f"XXXXXXXXXXXX{number[-4:]}"}).encode()
            content_type = "application/json"
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Access-Control-Allow-Origin", "*")
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

    def _dispatch(self, method: str, path: str, query: str, body: Any, headers: Any) -> tuple[int, Json]:
        if not path.startswith("/v1/"):
            raise ApiError(404, "not_found", "Recurso não encontrado.")
        route = path[len("/v1"):]
        if (method, route) == ("POST", "/authorize"):
            return self._authorize(body, headers)
        self._check_token(headers)
        segments = route.strip("/").split("/")
        if not isinstance(body, dict):
            raise ApiError(400, "invalid_json", "O corpo deve ser um objeto.")
        match method, segments:
            case "POST", ["charge"]:
                with self._lock:
                    charge = self._new_charge(body)
                return 200, {"code": 200, "data": {key: charge[key] for key in (
                    "charge_id", "status", "total", "custom_id", "created_at")}}
            case "POST", ["charge", "one-step"]:
                return self._one_step(body)
            case "POST", ["charge", charge_id, "pay"]:
                return self._pay(self._charge_id(charge_id), body)
            case "GET", ["charge", charge_id]:
                with self._lock:
                    return 200, {"code": 200, "data": self._view(self._charge(self._charge_id(charge_id)))}
            case "PUT", ["charge", charge_id, "cancel"]:
                return self._cancel(self._charge_id(charge_id))
            case "POST", ["charge", "card", charge_id, "refund"]:
                return self._refund(self._charge_id(charge_id), body)
            case "GET", ["installments"]:
                return self._installments(parse_qs(query))
            case "GET", ["notification", token]:
                with self._lock:
                    if token not in self.histories:
                        raise ApiError(404, "notification_not_found", "Token de notificação não encontrado.")
                    self.tokens_read[token] += 1
                    return 200, {"code": 200, "data": copy.deepcopy(self.histories[token])}
        raise ApiError(404, "not_found", f"Nenhum recurso em {method} {path}.")

    def _authorize(self, body: Any, headers: Any) -> tuple[int, Json]:
        with self._lock:
            self.token_requests += 1
        scheme, _, encoded = (headers.get("Authorization") or "").partition(" ")
        try:
            credentials = base64.b64decode(encoded.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            credentials = ""
        if scheme.lower() != "basic" or tuple(credentials.partition(":")[::2]) != (self.client_id, self.client_secret):
            raise ApiError(401, "invalid_client", "Credenciais inválidas.")
        if not isinstance(body, dict) or body.get("grant_type") != "client_credentials":
            raise ApiError(400, "invalid_request", "grant_type deve ser client_credentials.")
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[token] = time.monotonic() + self.token_lifetime
        return 200, {"access_token": token, "refresh_token": secrets.token_urlsafe(16),
                     "expires_in": self.token_lifetime, "token_type": "Bearer"}

    def expire_tokens(self) -> None:
        with self._lock:
            self._tokens.clear()

    def _check_token(self, headers: Any) -> None:
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        with self._lock:
            expires = self._tokens.get(token) if scheme.lower() == "bearer" else None
        if expires is None or time.monotonic() >= expires:
            raise ApiError(401, "invalid_token", "Token de acesso inválido ou expirado.")

    @staticmethod
    def _charge_id(text: str) -> int:
        if not text.isdigit():
            raise invalid("/id", "O identificador da cobrança deve ser um inteiro.")
        return int(text)

    def _charge(self, charge_id: int) -> Json:
        charge = self.charges.get(charge_id)
        if charge is None:
            raise ApiError(404, "charge_not_found", "Cobrança não encontrada.", code=3500010)
        return charge

    @staticmethod
    def _check_address(address: Any, prop: str) -> None:
        if not isinstance(address, dict):
            raise invalid(prop, "O endereço é obrigatório.")
        for name in ("street", "number", "neighborhood", "zipcode", "city", "state"):
            if not isinstance(address.get(name), str) or not address[name]:
                raise invalid(f"{prop}/{name}", f"O campo {name} é obrigatório.")
        if not address["zipcode"].isdigit() or len(address["zipcode"]) != 8:
            raise invalid(f"{prop}/zipcode", "O CEP deve ter 8 dígitos.")

    @staticmethod
    def _check_customer(customer: Any, prop: str) -> None:
        if not isinstance(customer, dict):
            raise invalid(prop, "O cliente é obrigatório.")
        juridical = customer.get("juridical_person")
        if juridical is not None:
            if not isinstance(juridical, dict) or len(str(juridical.get("cnpj", ""))) != 14:
                raise invalid(f"{prop}/juridical_person/cnpj", "CNPJ inválido.")
        elif not isinstance(customer.get("cpf"), str) or len(customer["cpf"]) != 11 or not customer.get("name"):
            raise invalid(f"{prop}/cpf", "Informe nome e CPF (11 dígitos), ou juridical_person.")

    def _pay(self, charge_id: int, body: Json) -> tuple[int, Json]:
        card = (body.get("payment") or {}).get("credit_card")
        if not isinstance(card, dict):
            raise invalid("/payment/credit_card", "Informe o pagamento por cartão.")
        installments = card.get("installments")
        if not isinstance(installments, int) or not 1 <= installments <= 12:
            raise invalid("/payment/credit_card/installments", "Parcelas de 1 a 12.")
        self._check_customer(card.get("customer"), "/payment/credit_card/customer")
        self._check_address(card.get("billing_address"), "/payment/credit_card/billing_address")
        with self._lock:
            charge = self._charge(charge_id)
            self.pays[charge_id] += 1
            if charge["status"] != "new":
                raise ApiError(400, "charge_status_invalid",
                               "A transação já possui forma de pagamento definida.", code=3500002)
            token = self.card_tokens.get(str(card.get("payment_token")))
            if token is None or (token["used"] and not token["reuse"]):
                raise ApiError(400, "invalid_payment_token", "payment_token inválido ou já utilizado.", code=3500044)
            token["used"] = True
            value = self._installment_value(charge["total"], installments)
            charge["payment"] = {"method": "credit_card", "created_at": charge["created_at"], "message": None,
                                 "credit_card": {"mask": token["mask"], "installments": installments,
                                                 "installment_value": value,
                                                 "address": copy.deepcopy(card["billing_address"])}}
            outcome = token["outcome"]
            if outcome == "unpaid":
                charge["refusal"] = {"reason": token["reason"], "retry": token["retry"]}
        self._change(charge_id, "waiting")
        if outcome == "paid":
            self._change(charge_id, "approved")
            self._change(charge_id, "paid", value=charge["total"])
        elif outcome == "approved":
            self._change(charge_id, "approved")
        elif outcome == "unpaid":
            self._change(charge_id, "unpaid")
        answer = {"charge_id": charge_id, "total": charge["total"], "status": charge["status"],
                  "installments": installments, "installment_value": value, "payment": "credit_card"}
        if outcome == "unpaid":
            answer["refusal"] = copy.deepcopy(charge["refusal"])
        return 200, {"code": 200, "data": answer}

    @staticmethod
    def _installment_value(total: int, installments: int) -> int:
        if installments <= FREE_INSTALLMENTS:
            return -(-total // installments)
        with_interest = total + total * INTEREST_BPS_MONTH * installments // 10_000
        return -(-with_interest // installments)

    def _installments(self, query: dict[str, list[str]]) -> tuple[int, Json]:
        brand = (query.get("brand") or [""])[0]
        total = (query.get("total") or [""])[0]
        if brand not in BRANDS:
            raise invalid("/brand", "Bandeira inválida.")
        if not total.isdigit() or int(total) < 1:
            raise invalid("/total", "Total inválido.")
        amount = int(total)
        options = [{"installment": n, "has_interest": n > FREE_INSTALLMENTS,
                    "value": self._installment_value(amount, n),
                    "currency": f"{self._installment_value(amount, n) / 100:.2f}".replace(".", ","),
                    "interest_percentage": INTEREST_BPS_MONTH if n > FREE_INSTALLMENTS else 0}
                   for n in range(1, 13)]
        return 200, {"code": 200, "data": {"rate": 0, "name": brand, "installments": options}}

    def _one_step(self, body: Json) -> tuple[int, Json]:
        billet = (body.get("payment") or {}).get("banking_billet")
        if not isinstance(billet, dict):
            raise invalid("/payment/banking_billet", "Informe o boleto.")
        self._check_customer(billet.get("customer"), "/payment/banking_billet/customer")
        try:
            expire_at = date.fromisoformat(str(billet.get("expire_at")))
        except ValueError as exc:
            raise invalid("/payment/banking_billet/expire_at", "Data no formato AAAA-MM-DD.") from exc
        if expire_at < self.today():
            raise invalid("/payment/banking_billet/expire_at", "A data de vencimento não pode ser passada.")
        configurations = billet.get("configurations") or {}
        fine = configurations.get("fine", 0)
        if not isinstance(fine, int) or not 0 <= fine <= 1000:
            raise invalid("/payment/banking_billet/configurations/fine", "Multa de 0 a 1000 (10%).")
        with self._lock:
            charge = self._new_charge(body, method="banking_billet")
            free = f"{charge['charge_id']:025d}"
            barcode = boleto.barcode(bank_code=EFI_BANK_CODE, due_date=expire_at, amount_cents=charge["total"],
                                     free_field=free)
            line = boleto.format_digitable_line(boleto.digitable_line_from_barcode(barcode))
            location = f"qrpix-h.efipay.com.br/v2/cobv/{uuid.uuid4().hex}"
            payload = "".join([tlv("00", "01"), tlv("26", tlv("00", "br.gov.bcb.pix") + tlv("25", location)),
                               tlv("52", "0000"), tlv("53", "986"), tlv("58", "BR"), tlv("59", "EFI TEST"),
                               tlv("60", "SAO PAULO"), tlv("62", tlv("05", "***")), "6304"])
            pix = {"qrcode": payload + crc16(payload), "qrcode_image": "data:image/svg+xml;base64,PHN2Zy8+"}
            link = f"https://pagamento.sejaefi.com.br/{uuid.uuid4().hex}"
            charge["payment"] = {"method": "banking_billet", "created_at": charge["created_at"], "message": None,
                                 "banking_billet": {"barcode": line, "pix": pix, "link": link,
                                                    "pdf": {"charge": f"{link}/pdf"},
                                                    "expire_at": expire_at.isoformat(),
                                                    "configurations": copy.deepcopy(configurations)}}
        self._change(charge["charge_id"], "waiting")
        return 200, {"code": 200, "data": {
            "charge_id": charge["charge_id"], "status": "waiting", "total": charge["total"], "barcode": line,
            "pix": pix, "link": link, "billet_link": link, "pdf": {"charge": f"{link}/pdf"},
            "expire_at": expire_at.isoformat(), "payment": "banking_billet"}}

    def _cancel(self, charge_id: int) -> tuple[int, Json]:
        with self._lock:
            charge = self._charge(charge_id)
            if charge["status"] not in ("new", "waiting", "unpaid", "link"):
                raise ApiError(400, "charge_status_invalid",
                               f"A cobrança não pode ser cancelada: está {charge['status']}.", code=3500020)
        self._change(charge_id, "canceled")
        return 200, {"code": 200}

    def _refund(self, charge_id: int, body: Json) -> tuple[int, Json]:
        with self._lock:
            charge = self._charge(charge_id)
            if charge["status"] != "paid" or (charge.get("payment") or {}).get("method") != "credit_card":
                raise ApiError(400, "charge_status_invalid", "Só cobranças de cartão pagas podem ser estornadas.",
                               code=3500021)
            left = charge["total"] - sum(charge["refunds"])
            amount = body.get("amount", left)
            if not isinstance(amount, int) or isinstance(amount, bool) or not 1 <= amount <= left:
                raise invalid("/amount", f"O valor do estorno deve ser de 1 a {left}.")
            charge["refunds"].append(amount)
            full = amount == left
        # A partial refund leaves the charge paid; its history has an entry for every refund, with its value.
        self._change(charge_id, "refunded", value=amount, entry_only=not full)
        return 200, {"code": 200}
