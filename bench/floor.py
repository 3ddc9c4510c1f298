"""Floors: what a request costs on this machine and stack when it only writes what its endpoint must write.

`python -m bench` serves this URLconf (bench/floor_settings.py: the service's settings, these URLs in front of the
service's) on a gunicorn of its own, against this tree's database, and measures each floor beside its endpoint. A
floor is a plain Django view: no DRF, no validation, no BR Code, no decision; it finds the key pair's merchant (by the
public key, once per process: it checks no secret), reads the JSON body, writes the endpoint's rows with the ORM in
one `transaction.atomic()`, and answers 201 with the object its event carries.

- `POST /floor/payin`: a PIX charge and its `payin.created` event (the outbox row of the webhook).
- `POST /floor/payout`: the merchant's available balance debited under its condition (the hot row), payouts in
  flight credited, the payout, its audit-log entry, the ledger movement with its two entries, and its event (not the
  day's payout total, which the real endpoint adds).

The endpoint over its floor is what validation, the rules and the API machinery cost on top of the same writes.
The service never imports this module.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import uuid

from django.db import transaction
from django.db.models import F
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from accounts.models import AccountEvent
from config.urls import urlpatterns as service_urlpatterns
from integrations.models import ApiKey
from payments.models import AccountKind, LedgerAccount, LedgerEntry, LedgerTransaction, LineType, Payin, Payout
from webhooks.models import Event

PIX_PAYLOAD = "00020101021226" + "0" * 140 + "6304ABCD"  # the length of a real dynamic BR Code
_keys: dict[str, tuple[int, bool, str]] = {}  # public key -> (merchant id, livemode, public key)
_accounts: dict[tuple, tuple[int, int]] = {}  # -> (available, payouts in flight) ledger account ids


def _key(request: HttpRequest) -> tuple[int, bool, str] | None:
    try:
        scheme, token = request.headers.get("Authorization", "").split(" ", 1)
        public = base64.b64decode(token).decode().split(":", 1)[0] if scheme == "Basic" else ""
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    if public not in _keys:
        found = ApiKey.objects.filter(public_key=public, revoked_at=None).values_list("merchant_id", "livemode")
        if not (row := found.first()):
            return None
        _keys[public] = (*row, public)
    return _keys[public]


def _stamp(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _event(merchant_id: int, livemode: bool, type: str, obj: dict, now) -> None:
    event_id = uuid.uuid4()
    Event.objects.create(id=event_id, merchant_id=merchant_id, livemode=livemode, type=type, object_id=obj["id"],
                         created_at=now, payload={"id": str(event_id), "type": type, "createdAt": _stamp(now),
                                                  "livemode": livemode, "apiVersion": "2026-01-01",
                                                  "data": {"object": obj, "previousStatus": None}})


def _unauthorized() -> JsonResponse:
    return JsonResponse({"error": {"type": "authentication_error", "code": "invalid_api_key"}}, status=401)


@csrf_exempt
def payin(request: HttpRequest) -> JsonResponse:
    if (key := _key(request)) is None:
        return _unauthorized()
    data, now = json.loads(request.body), timezone.now()
    with transaction.atomic():
        charge = Payin.objects.create(
            merchant_id=key[0], livemode=key[1], payment_method="PIX", amount=data["amount"], fee=0,
            reference_id=data["referenceId"], description="", metadata={}, customer=data["customer"],
            items=data["items"], payer_ip=data["payerIp"], is_physical_product=data["isPhysicalProduct"],
            webhook_url="", public_token=secrets.token_urlsafe(32), pix_txid=uuid.uuid4().hex[:25],
            pix_payload=PIX_PAYLOAD, pix_expires_at=now, created_at=now, updated_at=now)
        obj = {"id": str(charge.id), "status": "PENDING", "amount": charge.amount, "fee": 0, "netAmount": charge.amount,
               "currency": "BRL", "paymentMethod": "PIX", "referenceId": charge.reference_id, "livemode": key[1],
               "description": "", "metadata": {}, "customer": charge.customer, "items": charge.items,
               "refundedAmount": 0, "paymentUrl": f"http://127.0.0.1/pay/{charge.public_token}",
               "createdAt": _stamp(now), "updatedAt": _stamp(now), "paidAt": None, "failureCode": None,
               "failureMessage": None,
               "pix": {"qrcode": PIX_PAYLOAD, "expiration": _stamp(now), "txid": charge.pix_txid,
                       "qrcodeImageUrl": f"http://127.0.0.1/pay/{charge.public_token}/qrcode.png"}}
        _event(key[0], key[1], "payin.created", obj, now)
    return JsonResponse(obj, status=201)


@csrf_exempt
def payout(request: HttpRequest) -> JsonResponse:
    if (key := _key(request)) is None:
        return _unauthorized()
    data, now = json.loads(request.body), timezone.now()
    amount = data["amount"]
    if key[:2] not in _accounts:
        _accounts[key[:2]] = tuple(
            LedgerAccount.objects.get_or_create(merchant_id=key[0], livemode=key[1], kind=kind)[0].pk
            for kind in (AccountKind.AVAILABLE, AccountKind.PAYOUTS_IN_FLIGHT))
    available, in_flight = _accounts[key[:2]]
    with transaction.atomic():
        if not LedgerAccount.objects.filter(pk=available, balance__gte=amount).update(balance=F("balance") - amount):
            return JsonResponse({"error": {"type": "invalid_request_error", "code": "insufficient_balance"}},
                                status=400)
        LedgerAccount.objects.filter(pk=in_flight).update(balance=F("balance") + amount)
        sent = Payout.objects.create(
            merchant_id=key[0], livemode=key[1], amount=amount, fee=0, pix_key=data["pixKey"],
            pix_key_normalized=data["pixKey"], pix_key_type=data["pixKeyType"], reference_id=data["referenceId"],
            external_id=uuid.uuid4().hex, metadata={}, local_date=now.date(), created_at=now, updated_at=now)
        obj = {"id": str(sent.id), "status": "PENDING", "amount": amount, "fee": 0, "currency": "BRL",
               "pixKey": sent.pix_key, "pixKeyType": sent.pix_key_type, "referenceId": sent.reference_id,
               "externalId": sent.external_id, "beneficiaryName": "", "beneficiaryDocument": "", "description": "",
               "metadata": {}, "livemode": key[1], "createdAt": _stamp(now), "updatedAt": _stamp(now),
               "completedAt": None, "failureCode": None, "failureMessage": None}
        AccountEvent.objects.create(merchant_id=key[0], actor_key=key[2],
                                    action=AccountEvent.Action.PAYOUT_CREATED, obj_type="payout", obj_id=obj["id"],
                                    after={"amount": amount, "fee": 0}, created_at=now)
        movement = LedgerTransaction.objects.create(
            merchant_id=key[0], livemode=key[1], object_type="payout", object_id=obj["id"],
            reference_id=sent.reference_id, description=f"Pix payout to {sent.pix_key_type} key", created_at=now)
        LedgerEntry.objects.bulk_create([
            LedgerEntry(transaction=movement, account_id=account, amount=signed, line_type=LineType.PAYOUT,
                        balance_after=0, created_at=now)
            for account, signed in ((available, -amount), (in_flight, amount))])
        _event(key[0], key[1], "payout.created", obj, now)
    return JsonResponse(obj, status=201)


urlpatterns = [path("floor/payin", payin), path("floor/payout", payout), *service_urlpatterns]
