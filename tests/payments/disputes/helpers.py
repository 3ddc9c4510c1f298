"""What the dispute tests share: disputes opened through the sandbox, read back through the API, and the held
balance read from the ledger."""

from __future__ import annotations

from payments.models import AccountKind, LedgerAccount


def open_dispute(client, payin_id: str, action: str) -> dict:
    """Sandbox chargeback (card) or med (Pix) on a paid charge, then the dispute it opened, through GET /disputes."""
    response = client.post(f"/sandbox/payin/{payin_id}/simulate", {"action": action}, format="json")
    assert response.status_code == 200, response.content
    listed = client.get("/disputes", {"payinId": payin_id})
    assert listed.status_code == 200, listed.content
    (dispute,) = listed.json()["data"]
    return dispute


def decide(client, dispute_id: str, action: str) -> dict:
    response = client.post(f"/sandbox/disputes/{dispute_id}/simulate", {"action": action}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def held(merchant, livemode: bool = False) -> int:
    account = LedgerAccount.objects.filter(merchant=merchant, livemode=livemode, kind=AccountKind.HELD).first()
    return account.balance if account else 0


def charge_back(client, payin_id: str) -> dict:
    """The old instant chargeback, in two steps: the sandbox opens the dispute (chargeback for a card, med for a Pix)
    and the network decides it LOST; the charge after it."""
    charge = client.get(f"/payin/{payin_id}").json()
    action = "chargeback" if charge["paymentMethod"] == "CREDIT_CARD" else "med"
    decide(client, open_dispute(client, payin_id, action)["id"], "lose")
    response = client.get(f"/payin/{payin_id}")
    assert response.status_code == 200, response.content
    return response.json()
