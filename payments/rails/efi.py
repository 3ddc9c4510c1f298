"""The Efí rail (Efí Bank, formerly Gerencianet): live money. Pix charges, devoluções and the webhook are the API
Pix standard (`apipix`); sending Pix is Efí's own `PUT /v3/gn/pix/{idEnvio}`. Cards (by the browser's payment_token
only) and boletos payable by Pix are Efí's Charges API (`efi_charges`), whose calls this class hands on.

Our ids become the ids Efí keys on, so every call is idempotent at the bank: a charge's txid, a refund's devolução
id and a payout's idEnvio are the object's UUID as 32 hex digits (the standard allows 26-35 letters and digits for a
txid, 1-35 for the others). A notification is only ever a hint: each Pix it names is read back from Efí
(`notifications_confirm`) and only what Efí confirms reaches the books.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from datetime import UTC, date, datetime
from math import ceil
from urllib.parse import quote

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from core.parsers import TOO_DEEP_MESSAGE, too_deep
from payments.rails import efi_charges
from payments.rails.apipix import ApiPixClient, amount_format, amount_parse
from payments.rails.base import (
    NOTIFICATION_MAX_ITEMS,
    BoletoRegistration,
    CardData,
    CardResult,
    ChargeEvent,
    ChargeState,
    InvalidNotification,
    Notification,
    NotificationTooLarge,
    OperationStatus,
    RailDispute,
    RailRefused,
)

logger = logging.getLogger(__name__)

PRODUCTION_URL = "https://pix.api.efipay.com.br"
SANDBOX_URL = "https://pix-h.api.efipay.com.br"
REMOVED = ("REMOVIDA_PELO_USUARIO_RECEBEDOR", "REMOVIDA_PELO_PSP")
# Efí's states of a devolução and of a sent Pix, in our words.
DEVOLUCAO_STATUS = {"EM_PROCESSAMENTO": "PENDING", "DEVOLVIDO": "SUCCEEDED", "NAO_REALIZADO": "FAILED"}
SEND_STATUS = {"EM_PROCESSAMENTO": "PENDING", "REALIZADO": "SUCCEEDED", "NAO_REALIZADO": "FAILED"}
# Efí's states of a MED infraction against a Pix we received: open for our answer, answered (Efí's analysts decide),
# accepted (the money goes back to the payer), rejected or cancelled by Efí (the money stays).
INFRACAO_STATUS = {"ABERTA": "OPEN", "EM_DEFESA": "UNDER_REVIEW", "ACEITA": "LOST", "REJEITADA": "WON",
                   "CANCELADA_EFI": "WON"}


# An end-to-end id (32 characters) or an idEnvio (ours: 32 hex digits): letters and digits, at most 35 as every Pix id.
_ID = re.compile(r"[A-Za-z0-9]{1,35}")


def _named(item: dict) -> tuple[str, str]:
    """What one item of a notification names: ("envio", idEnvio) for a Pix we sent, else ("pix", endToEndId)."""
    id_envio = str((item.get("gnExtras") or {}).get("idEnvio") or "")
    return ("envio", id_envio) if id_envio else ("pix", str(item.get("endToEndId") or ""))


def rail_id(key: str) -> str:
    """Our UUID as the id Efí keys on: 32 hex digits."""
    return uuid.UUID(key).hex


def our_key(value: str) -> str:
    """The UUID behind an id we gave Efí; "" for an id that is not ours."""
    try:
        return str(uuid.UUID(hex=value)) if len(value) == 32 else ""
    except (ValueError, TypeError):
        return ""


def person(document: str) -> dict[str, str]:
    """A CPF or CNPJ as the API Pix names it (documents are normalized: 11 or 14 characters); {} for none."""
    if not document:
        return {}
    return {"cnpj" if len(document) == 14 else "cpf": document}


def failure_code(reason: str) -> str:
    """A payout failure code (SPEC §4) from the bank's words."""
    text = reason.lower()
    if "chave" in text and any(word in text for word in ("não encontrada", "nao encontrada", "inexistente")):
        return "pix_key_not_found"
    if any(word in text for word in ("cpf", "cnpj", "titular", "documento")):
        return "beneficiary_mismatch"
    return "rejected_by_bank"


class EfiRail:
    name = "efi"
    payment_methods = frozenset({"PIX", "CREDIT_CARD", "BOLETO"})
    dynamic_pix = True
    static_pix_key = ""  # Efí makes each charge's code, under PIX_KEY
    payout_batch = 5  # five answers of the network, a fraction of a second each, before the last one is sent
    payouts_together = False  # one Pix per call (PUT /v3/gn/pix/:idEnvio)
    card_tokens_only = True  # card numbers never reach us: Efí's browser library makes a payment_token
    boleto_registered = True  # Efí registers and numbers the boleto, with a Pix code for it (bolix)

    def __init__(self) -> None:
        self._client: ApiPixClient | None = None
        self._client_settings: tuple = ()
        self._charges_client: efi_charges.ChargesClient | None = None
        self._charges_settings: tuple = ()
        self.charges = efi_charges.EfiCharges(lambda: self.charges_client)

    @property
    def charges_client(self) -> efi_charges.ChargesClient:
        """The Charges API's client, built like `client`: from the settings, again when they change."""
        current = (settings.EFI_CHARGES_BASE_URL, settings.EFI_CLIENT_ID, settings.EFI_CLIENT_SECRET,
                   settings.EFI_CA_FILE, settings.EFI_TIMEOUT_SECONDS)
        if self._charges_client is None or current != self._charges_settings:
            self._charges_client = efi_charges.ChargesClient(base_url=current[0], client_id=current[1],
                                                             client_secret=current[2], ca_file=current[3],
                                                             timeout=current[4])
            self._charges_settings = current
        return self._charges_client

    @property
    def client(self) -> ApiPixClient:
        """Built from the settings on first use, and again if they change (tests point it at a fake bank)."""
        current = (settings.EFI_BASE_URL, settings.EFI_CLIENT_ID, settings.EFI_CLIENT_SECRET, settings.EFI_CERT_FILE,
                   settings.EFI_CA_FILE, settings.EFI_TIMEOUT_SECONDS)
        if self._client is None or current != self._client_settings:
            self._client = ApiPixClient(rail=self.name, base_url=current[0], client_id=current[1],
                                        client_secret=current[2], cert_file=current[3], ca_file=current[4],
                                        timeout=current[5])
            self._client_settings = current
        return self._client

    # --- Pay-in ------------------------------------------------------------------------------------------------------
    def pix_charge_create(self, *, key: str, livemode: bool, txid: str, amount: int, expires_at: datetime,
                          payer_document: str, payer_name: str, description: str) -> str:
        debtor = {**person(payer_document), "nome": payer_name[:200]} if payer_document else None
        expires_in = max(1, ceil((expires_at - timezone.now()).total_seconds()))
        cob = self.client.cob_create(txid, expires_in=expires_in, amount=amount, key=settings.PIX_KEY, debtor=debtor,
                                     description=description)
        return cob["pixCopiaECola"]

    def pix_charge_cancel(self, *, key: str, txid: str) -> None:
        try:
            self.client.cob_remove(txid)
        except RailRefused:
            cob = self.client.cob_get(txid)
            if cob is None or cob.get("status") not in REMOVED:  # paid, or never registered
                raise
            # Removed already (a repeated cancel, or expired at the bank): the charge is unpayable, as asked.

    def pix_charge_payments(self, *, txid: str) -> list[Notification]:
        cob = self.client.cob_get(txid)
        if cob is None or cob.get("status") != "CONCLUIDA":
            return []
        return [notification for pix in cob.get("pix") or [] for notification in self._pix_notifications(pix)]

    def boleto_register(self, *, key: str, livemode: bool, nosso_numero: int | None, amount: int, due_date: date,
                        **details) -> BoletoRegistration:
        return self.charges.bolix_register(key=key, amount=amount, due_date=due_date, **details)

    def card_authorize(self, *, key: str, livemode: bool, amount: int, installments: int, card: CardData | None,
                       rail_token: str | None) -> CardResult:
        # Never reached: cards go through card_charge_open and card_charge_pay (card_tokens_only).
        raise RailRefused("Efí takes cards only as a payment_token, through a charge")

    def card_status(self, *, key: str) -> CardResult:
        raise RailRefused("Efí card charges are read by their charge_id (charge_get)")

    # --- Charges API: cards and bolix --------------------------------------------------------------------------------
    def card_charge_open(self, *, key: str, amount: int, items: list[dict], description: str,
                         notification_url: str) -> str:
        return self.charges.card_charge_open(key=key, amount=amount, items=items, description=description,
                                             notification_url=notification_url)

    def card_charge_pay(self, *, charge_ref: str, payment_token: str, installments: int, customer: dict,
                        billing_address: dict) -> CardResult:
        return self.charges.card_charge_pay(charge_ref=charge_ref, payment_token=payment_token,
                                            installments=installments, customer=customer,
                                            billing_address=billing_address)

    def charge_get(self, *, charge_ref: str) -> ChargeState | None:
        return self.charges.charge_get(charge_ref=charge_ref)

    def charge_history(self, *, token: str) -> list[ChargeEvent]:
        return self.charges.charge_history(token=token)

    def charge_cancel(self, *, charge_ref: str) -> None:
        self.charges.charge_cancel(charge_ref=charge_ref)

    def card_refund(self, *, charge_ref: str, amount: int) -> None:
        self.charges.card_refund(charge_ref=charge_ref, amount=amount)

    def installments(self, *, brand: str, amount: int) -> list[dict]:
        return self.charges.installments(brand=brand, amount=amount)

    # --- Refunds: devoluções of the Pix that paid the charge ---------------------------------------------------------
    def refund_create(self, *, key: str, livemode: bool, payin_key: str, payment_method: str, amount: int,
                      end_to_end_id: str = "") -> OperationStatus:
        if not end_to_end_id:
            raise RailRefused("a Pix refund needs the end-to-end id of the Pix it gives back")
        devolucao = self.client.devolucao_create(end_to_end_id, rail_id(key), amount=amount)
        return self._devolucao_status(devolucao)

    def refund_status(self, *, key: str, end_to_end_id: str = "") -> OperationStatus:
        devolucao = self.client.devolucao_get(end_to_end_id, rail_id(key)) if end_to_end_id else None
        if devolucao is None:
            # Never reached the bank (the create call failed before it): nothing was given back.
            return OperationStatus(status="FAILED", failure_code="rail_error")
        return self._devolucao_status(devolucao)

    @staticmethod
    def _devolucao_status(devolucao: dict) -> OperationStatus:
        status = DEVOLUCAO_STATUS.get(devolucao.get("status", ""), "PENDING")
        return OperationStatus(status=status, failure_code="rejected_by_bank" if status == "FAILED" else "",
                               end_to_end_id=devolucao.get("rtrId", ""))

    # --- Payouts: Pix sent from our account --------------------------------------------------------------------------
    def payout_send(self, *, key: str, livemode: bool, amount: int, pix_key: str, pix_key_type: str,
                    end_to_end_id: str, beneficiary_document: str = "") -> OperationStatus:
        beneficiary = {"chave": pix_key, **person(beneficiary_document)}
        body = {"valor": amount_format(amount), "pagador": {"chave": settings.PIX_KEY}, "favorecido": beneficiary}
        try:
            sent = self.client.call("PUT", f"/v3/gn/pix/{rail_id(key)}", body=body) or {}
        except RailRefused as refusal:
            # Refused, or refused as a repeat of an idEnvio the bank already has (a retry after a timeout): the bank
            # says which. Only a send it does not know was really refused.
            known = self.payout_status(key=key)
            if known.status != "NOT_FOUND":
                return known
            reason = f"{refusal.problem.get('title', '')} {refusal.problem.get('detail', '')}"
            return OperationStatus(status="FAILED", failure_code=failure_code(reason))
        return OperationStatus(status=SEND_STATUS.get(sent.get("status", ""), "PENDING"),
                               end_to_end_id=sent.get("e2eId", ""))

    def payout_status(self, *, key: str) -> OperationStatus:
        sent = self.client.call("GET", f"/v2/gn/pix/enviados/id-envio/{rail_id(key)}", missing_ok=True)
        if sent is None:
            return OperationStatus(status="NOT_FOUND")
        status = SEND_STATUS.get(sent.get("status", ""), "PENDING")
        return OperationStatus(status=status, end_to_end_id=sent.get("endToEndId", ""),
                               failure_code=failure_code(str(sent.get("motivo", ""))) if status == "FAILED" else "")

    # --- Notifications and reconciliation ----------------------------------------------------------------------------
    def notifications_confirm(self, body: bytes) -> list[Notification]:
        """Each distinct Pix (or Pix sent) the body names, read back from Efí: the same one named twice is asked once,
        and a body naming more than NOTIFICATION_MAX_ITEMS is refused whole before any call (`NotificationTooLarge`):
        reconciliation finds what it named."""
        if too_deep(body or b""):  # Python's parser recurses once a level: a 60 KB `[[[…` would raise RecursionError
            raise InvalidNotification(TOO_DEEP_MESSAGE)
        try:
            items = json.loads(body or b"{}").get("pix") or []
            if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
                raise TypeError("`pix` is not a list of objects")
            named = list(dict.fromkeys(_named(item) for item in items))  # distinct, in the order given
        except (ValueError, AttributeError, TypeError) as exc:
            raise InvalidNotification(str(exc)) from exc
        if len(named) > NOTIFICATION_MAX_ITEMS:
            raise NotificationTooLarge(f"The notification names {len(named)} payments; at most "
                                       f"{NOTIFICATION_MAX_ITEMS} are confirmed a request")
        confirmed: list[Notification] = []
        for kind, reference in named:
            if kind == "envio":
                confirmed += self._send_notifications(reference)
                continue
            end_to_end_id = reference
            pix = self.client.pix_get(end_to_end_id) if _ID.fullmatch(end_to_end_id) else None
            if pix is None:
                logger.warning("rails.notification_not_confirmed",
                               extra={"rail": self.name, "end_to_end_id": end_to_end_id[:40]})
                continue
            confirmed += self._pix_notifications(pix)
        return confirmed

    def _send_notifications(self, id_envio: str) -> list[Notification]:
        if not _ID.fullmatch(id_envio):  # never one of ours: nothing to ask
            logger.warning("rails.notification_not_confirmed", extra={"rail": self.name, "id_envio": id_envio[:40]})
            return []
        key = our_key(id_envio)
        answer = self.payout_status(key=key) if key else OperationStatus(status="NOT_FOUND")
        if answer.status == "NOT_FOUND":
            logger.warning("rails.notification_not_confirmed", extra={"rail": self.name, "id_envio": id_envio[:40]})
            return []
        if answer.status not in ("SUCCEEDED", "FAILED"):
            return []
        return [Notification(dedupe_key=f"envio-{id_envio}-{answer.status}", kind=f"payout.{answer.status.lower()}",
                             key=key, failure_code=answer.failure_code, end_to_end_id=answer.end_to_end_id)]

    @staticmethod
    def _pix_notifications(pix: dict) -> list[Notification]:
        """A Pix as Efí holds it: its payment, and each devolução of it that reached an end."""
        end_to_end_id = str(pix["endToEndId"])
        payer = pix.get("pagador") or {}
        notifications = [Notification(dedupe_key=f"pix-{end_to_end_id}", kind="payin.paid",
                                      amount=amount_parse(pix["valor"]), txid=str(pix.get("txid") or ""),
                                      end_to_end_id=end_to_end_id, payer_name=str(payer.get("nome") or ""),
                                      payer_document=str(payer.get("cpf") or payer.get("cnpj") or ""))]
        for devolucao in pix.get("devolucoes") or []:
            status = DEVOLUCAO_STATUS.get(devolucao.get("status", ""))
            key = our_key(str(devolucao.get("id", "")))
            if key and status in ("SUCCEEDED", "FAILED"):
                notifications.append(Notification(
                    dedupe_key=f"devolucao-{devolucao['id']}-{status}", kind=f"refund.{status.lower()}", key=key,
                    amount=amount_parse(devolucao["valor"]), end_to_end_id=end_to_end_id,
                    failure_code="rejected_by_bank" if status == "FAILED" else ""))
        return notifications

    def payments_received(self, *, start: datetime, end: datetime) -> list[Notification]:
        return [notification for pix in self.client.pix_list(start=start, end=end)
                for notification in self._pix_notifications(pix)]

    # --- MED: infractions against Pix we received --------------------------------------------------------------------
    def disputes_list(self, *, start: datetime, end: datetime) -> list[RailDispute]:
        cases = []
        for infracao in self.client.paged("/v2/gn/infracoes", "infracoes", start=start, end=end):
            try:
                case = self._infracao_case(infracao)
            except (KeyError, TypeError, ValueError) as exc:  # one malformed item must not hide the others
                logger.warning("rails.infraction_unreadable", extra={
                    "rail": self.name, "id_infracao": str(infracao.get("idInfracao", ""))[:40], "why": str(exc)[:200]})
                continue
            if case is not None:
                cases.append(case)
        return cases

    def _infracao_case(self, infracao: dict) -> RailDispute | None:
        status = INFRACAO_STATUS.get(str(infracao.get("status", "")))
        if status is None:
            logger.warning("rails.infraction_status_unknown",
                           extra={"rail": self.name, "status": str(infracao.get("status", ""))[:40]})
            return None
        analysis = infracao.get("dadosAnalise") or {}
        due_by = parse_datetime(str(analysis.get("prazoFinalizacao") or ""))
        return RailDispute(
            reference=str(infracao["idInfracao"]), end_to_end_id=str(infracao.get("endToEndId") or ""),
            amount=amount_parse(infracao["valor"]), status=status,
            reason=str(infracao.get("tipoSituacao") or infracao.get("razao") or "")[:100],
            due_by=due_by if due_by is None or due_by.tzinfo else due_by.replace(tzinfo=UTC),
            answer=str(infracao.get("defesa") or ""))

    def dispute_answer(self, *, reference: str, accept: bool, text: str) -> None:
        self.client.call("POST", f"/v2/gn/infracoes/{quote(reference, safe='')}/defesa",
                         body={"analise": "aceito" if accept else "rejeitado", "justificativa": text})

    def notification_parse(self, body: bytes) -> Notification:
        """A stored row: the confirmed notification, as `notifications.notification_record` keeps it."""
        try:
            return Notification(**json.loads(body))
        except (ValueError, TypeError) as exc:
            raise InvalidNotification(str(exc)) from exc

    # --- Set-up ------------------------------------------------------------------------------------------------------
    def webhook_register(self, url: str) -> dict:
        headers = {} if settings.EFI_WEBHOOK_MTLS else {"x-skip-mtls-checking": "true"}
        return self.client.webhook_register(settings.PIX_KEY, url, headers=headers)


rail = EfiRail()
