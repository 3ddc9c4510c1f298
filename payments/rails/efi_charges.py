"""Efí's Charges API (API Cobranças): live cards and registered boletos payable by Pix ("bolix"), for the Efí rail
(`payments.rails.efi` delegates its card and boleto calls here). Stateless: it speaks Efí's protocol and says what Efí
answered in our words (its own status mapping below); the services decide and write.

Protocol (Efí's official SDKs' endpoint tables): `POST /v1/authorize` with HTTP Basic client_id:client_secret gives a
Bearer token (no client certificate, unlike the Pix API); answers are `{"code": 200, "data": ...}`, errors
`{"code", "error", "error_description"}`. A card is a charge (`POST /charge`) paid by `POST /charge/:id/pay` with the
browser's `payment_token`; a bolix is one `POST /charge/one-step`. Efí's ids are its own integers (`charge_id`): the
charge is created, and its id stored by the caller, before anything can be paid, so a repeated or lost answer is
settled by reading `GET /charge/:id`, never by paying again. Notifications are a form POST of a token; the token's
whole history is read with `GET /notification/:token`.

Errors are as in `apipix`: a 4xx is a refusal (`RailRefused`, with Efí's error body as `problem`); a timeout, a cut
connection, a 5xx, 408 or 429 is an unknown outcome (`RailTimeout`).
"""

from __future__ import annotations

import logging
import re
from datetime import date
from typing import Any

import requests

from payments.formats import boleto
from payments.rails.apipix import ApiPixClient
from payments.rails.base import (
    BoletoRegistration,
    CardResult,
    ChargeEvent,
    ChargeState,
    InvalidNotification,
    RailRefused,
    RailTimeout,
)

logger = logging.getLogger(__name__)

PRODUCTION_URL = "https://cobrancas.api.efipay.com.br/v1"
SANDBOX_URL = "https://cobrancas-h.api.efipay.com.br/v1"
# Efí's statuses of a charge, in our words. `approved` is the issuer's yes with Efí's risk analysis still pending: not
# paid. `settled` is a charge marked paid by hand at Efí: no money arrived through it.
CHARGE_STATUS = {
    "new": "PENDING", "link": "PENDING", "waiting": "PENDING", "identified": "PENDING",
    "approved": "PROCESSING",
    "paid": "PAID",
    "unpaid": "FAILED",
    "refunded": "REFUNDED",
    "contested": "CONTESTED",
    "canceled": "CANCELED",
    "expired": "EXPIRED",
    "settled": "SETTLED",
}
# Efí's refusal reasons (Portuguese, free text) as the card failure codes of SPEC §3.3; anything else is a decline.
REFUSAL_CODES = (
    (re.compile(r"saldo|limite|insuficiente", re.IGNORECASE), "insufficient_funds"),
    (re.compile(r"vencid|expirad|validade", re.IGNORECASE), "expired_card"),
    (re.compile(r"c[óo]digo de seguran[çc]a|cvv", re.IGNORECASE), "incorrect_cvc"),
    (re.compile(r"erro|falha|indispon", re.IGNORECASE), "processing_error"),
)
TOKEN = re.compile(r"[A-Za-z0-9_-]{1,128}")
BRANDS = ("visa", "mastercard", "amex", "elo", "hipercard")


def refusal_code(reason: str) -> str:
    for pattern, code in REFUSAL_CODES:
        if pattern.search(reason or ""):
            return code
    return "card_declined"


def custom_id(key: str) -> str:
    """Our charge's id as Efí's custom_id (at most 255 characters): its UUID, as we write it."""
    return key


class ChargesClient(ApiPixClient):
    """Efí's Charges API for one process: the same pooled session and token cache as the Pix client, without a
    client certificate, the token from `/authorize`, Efí's envelope unwrapped (`data`) and its errors read."""

    def __init__(self, *, base_url: str, client_id: str, client_secret: str, ca_file: str = "", timeout: float = 10.0):
        super().__init__(rail="efi", base_url=base_url, client_id=client_id, client_secret=client_secret,
                         cert_file="", ca_file=ca_file, timeout=timeout, token_path="/authorize")

    @property
    def session(self) -> requests.Session:
        session = super().session
        session.cert = None  # the Charges API has no mutual TLS
        return session

    def call(self, method: str, path: str, *, body: dict | None = None, params: dict | None = None,
             headers: dict | None = None, missing_ok: bool = False) -> Any:
        """One call; Efí's `data` (a dict or a list), or None for a 404 when `missing_ok`."""
        try:
            answer = super().call(method, path, body=body, params=params, headers=headers, missing_ok=missing_ok)
        except RailRefused as refusal:
            problem = refusal.problem
            description = problem.get("error_description")
            text = description if isinstance(description, str) else str(description or "")
            raise RailRefused(f"efi: {method} {path} refused ({refusal.status}): {problem.get('error', '')} "
                              f"{text[:300]}".strip(), status=refusal.status, problem=problem) from refusal
        if answer is None:
            return None
        if "data" not in answer:
            return {}
        return answer["data"]


# --- Reading Efí's answers -------------------------------------------------------------------------------------------
def card_result(data: dict) -> CardResult:
    """`/pay`'s or `GET /charge`'s answer about a card charge, in our words: PAID, FAILED, or PENDING (Efí holds it:
    waiting, approved and analysing)."""
    status = CHARGE_STATUS.get(str(data.get("status") or ""), "PENDING")
    payment = data.get("payment") if isinstance(data.get("payment"), dict) else {}
    card = payment.get("credit_card") if isinstance(payment.get("credit_card"), dict) else {}
    installments = int(data.get("installments") or card.get("installments") or 0)
    installment_value = int(data.get("installment_value") or card.get("installment_value") or 0)
    if status == "PAID":
        return CardResult(status="PAID",
                          installments=installments, installment_value=installment_value,
                          card_mask=str(card.get("mask") or ""))
    if status in ("FAILED", "CANCELED"):
        refusal = data.get("refusal") if isinstance(data.get("refusal"), dict) else {}
        reason = str(refusal.get("reason") or data.get("reason") or "")
        return CardResult(status="FAILED", failure_code=refusal_code(reason), failure_message=reason[:255],
                          retryable=bool(refusal.get("retry")), installments=installments,
                          installment_value=installment_value)
    return CardResult(status="PENDING", installments=installments, installment_value=installment_value)


def charge_state(data: dict) -> ChargeState:
    payment = data.get("payment") if isinstance(data.get("payment"), dict) else {}
    return ChargeState(charge_ref=str(data["charge_id"]), status=CHARGE_STATUS.get(str(data.get("status")), "UNKNOWN"),
                       rail_status=str(data.get("status") or ""), total=int(data.get("total") or 0),
                       method=str(payment.get("method") or ""), card=card_result(data))


def history_events(entries: Any) -> list[ChargeEvent]:
    """A notification token's history, in our words, oldest first. `InvalidNotification` for a body Efí could not
    have sent."""
    if not isinstance(entries, list):
        raise InvalidNotification("the notification history is not a list")
    events = []
    for entry in entries:
        try:
            status = entry["status"]
            events.append(ChargeEvent(
                entry_id=int(entry["id"]), kind=str(entry.get("type") or ""),
                charge_ref=str(entry["identifiers"]["charge_id"]), custom_id=str(entry.get("custom_id") or ""),
                status=CHARGE_STATUS.get(str(status.get("current")), "UNKNOWN"),
                rail_status=str(status.get("current") or ""), previous=str(status.get("previous") or ""),
                value=int(entry["value"]) if entry.get("value") is not None else None,
                received_on=str(entry.get("received_by_bank_at") or "")))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidNotification(f"unreadable history entry: {type(exc).__name__}") from exc
    return sorted(events, key=lambda event: event.entry_id)


def billet_registration(data: dict) -> BoletoRegistration:
    """One-step's answer: Efí's `barcode` is the digitable line as printed (dots and spaces)."""
    line = re.sub(r"\D", "", str(data.get("barcode") or ""))
    pix = data.get("pix") if isinstance(data.get("pix"), dict) else {}
    pdf = data.get("pdf") if isinstance(data.get("pdf"), dict) else {}
    try:
        barcode = boleto.barcode_from_digitable_line(line)
    except ValueError as exc:
        # Registered at Efí, but a line we cannot read: unknown to us as an answer.
        raise RailTimeout(f"efi: one-step answered a digitable line that does not check ({exc})") from exc
    return BoletoRegistration(charge_ref=str(data["charge_id"]), digitable_line=line, barcode=barcode,
                              pix_qrcode=str(pix.get("qrcode") or ""), pdf_url=str(pdf.get("charge") or ""),
                              link=str(data.get("billet_link") or data.get("link") or ""),
                              status=CHARGE_STATUS.get(str(data.get("status")), "UNKNOWN"))


# --- Building Efí's bodies -------------------------------------------------------------------------------------------
def items_body(items: list[dict], amount: int, description: str) -> list[dict]:
    """Efí's items must add up to the charge: ours are the merchant's description of it, and their sum need not be
    the amount (a discount, shipping), so the charge is one item of the amount, named after the first of them."""
    name = (description or (items[0].get("title") if items else "") or "Pagamento")[:255]
    return [{"name": name, "value": amount, "amount": 1}]


def address_body(address: dict, *, neighborhood: str = "") -> dict:
    body = {"street": address["street"][:200], "number": str(address["number"])[:55],
            "neighborhood": (address.get("neighborhood") or neighborhood or "Centro")[:255],
            "zipcode": address["zipCode"], "city": address["city"][:255], "state": address["state"]}
    if address.get("complement"):
        body["complement"] = address["complement"][:55]
    return body


def customer_body(customer: dict, *, with_address: bool = False) -> dict:
    document = customer.get("document") or ""
    body: dict[str, Any] = {"email": customer["email"]}
    if len(document) == 14:
        body["juridical_person"] = {"corporate_name": customer["name"][:255], "cnpj": document}
    else:
        body.update({"name": customer["name"][:255], "cpf": document})
    phone = customer.get("phone") or ""
    if phone:
        body["phone_number"] = phone[-11:]  # Efí's: area code and number, without +55
    if with_address and customer.get("address"):
        body["address"] = address_body(customer["address"])
    return body


class EfiCharges:
    """The card and boleto operations of the Efí rail."""

    def __init__(self, client_for) -> None:
        self._client_for = client_for  # a callable: the current ChargesClient (built from the settings)

    @property
    def client(self) -> ChargesClient:
        return self._client_for()

    def card_charge_open(self, *, key: str, amount: int, items: list[dict], description: str,
                         notification_url: str) -> str:
        """A charge at Efí, not yet payable: its charge_id."""
        data = self.client.call("POST", "/charge", body={
            "items": items_body(items, amount, description),
            "metadata": {"custom_id": custom_id(key), "notification_url": notification_url}})
        return str(data["charge_id"])

    def card_charge_pay(self, *, charge_ref: str, payment_token: str, installments: int, customer: dict,
                        billing_address: dict) -> CardResult:
        data = self.client.call("POST", f"/charge/{int(charge_ref)}/pay", body={"payment": {"credit_card": {
            "customer": customer_body(customer), "installments": installments,
            "billing_address": address_body(billing_address), "payment_token": payment_token}}})
        return card_result(data)

    def charge_get(self, *, charge_ref: str) -> ChargeState | None:
        data = self.client.call("GET", f"/charge/{int(charge_ref)}", missing_ok=True)
        return None if data is None else charge_state(data)

    def charge_history(self, *, token: str) -> list[ChargeEvent]:
        if not TOKEN.fullmatch(token or ""):
            raise InvalidNotification("not a notification token")
        data = self.client.call("GET", f"/notification/{token}", missing_ok=True)
        if data is None:
            return []  # a token Efí does not know: nothing to believe
        return history_events(data)

    def charge_cancel(self, *, charge_ref: str) -> None:
        """`RailRefused` when Efí will not cancel it (paid, or already ended): ask `charge_get` why."""
        self.client.call("PUT", f"/charge/{int(charge_ref)}/cancel")

    def card_refund(self, *, charge_ref: str, amount: int) -> None:
        self.client.call("POST", f"/charge/card/{int(charge_ref)}/refund", body={"amount": amount})

    def installments(self, *, brand: str, amount: int) -> list[dict]:
        data = self.client.call("GET", "/installments", params={"brand": brand, "total": amount}) or {}
        return [{"installments": int(option["installment"]), "installmentValue": int(option["value"]),
                 "hasInterest": bool(option.get("has_interest")),
                 "interestPercentage": int(option.get("interest_percentage") or 0)}
                for option in data.get("installments") or []]

    def bolix_register(self, *, key: str, amount: int, items: list[dict], description: str, customer: dict,
                       due_date: date, instructions: str, fine_bps: int, interest_bps_month: int,
                       days_to_write_off: int, notification_url: str) -> BoletoRegistration:
        configurations: dict[str, Any] = {"days_to_write_off": days_to_write_off}
        if fine_bps:
            configurations["fine"] = fine_bps  # Efí's unit: hundredths of a percent (200 = 2%)
        if interest_bps_month:
            configurations["interest"] = {"value": interest_bps_month, "type": "monthly"}
        billet: dict[str, Any] = {"customer": customer_body(customer, with_address=True),
                                  "expire_at": due_date.isoformat(), "configurations": configurations}
        if instructions:
            billet["message"] = instructions[:255]
        data = self.client.call("POST", "/charge/one-step", body={
            "items": items_body(items, amount, description),
            "metadata": {"custom_id": custom_id(key), "notification_url": notification_url},
            "payment": {"banking_billet": billet}})
        return billet_registration(data)
