"""Demo activity for `seed_demo`: a few test-mode charges in each status, two disputes and two payouts, made
through the same services and sandbox controls an integrator would use."""

from __future__ import annotations

from accounts.models import Merchant
from core import dates
from payments.disputes import selectors as dispute_selectors
from payments.disputes.sandbox import dispute_simulate
from payments.models import Payin
from payments.payins import refunds
from payments.payins import sandbox as payin_sandbox
from payments.payins import services as payins
from payments.payins.validation import payin_request_validate
from payments.payouts import services as payouts
from payments.payouts.validation import payout_request_validate

CUSTOMER = {
    "name": "Maria da Silva", "document": "52998224725", "email": "maria@example.com", "phone": "11987654321",
    "address": {"street": "Avenida Paulista", "number": "1000", "complement": "Sala 1", "zipCode": "01310-100",
                "city": "São Paulo", "state": "SP"},
}


def _charge(merchant: Merchant, method: str, amount: int, reference: str, **extra) -> Payin:
    request = {
        "paymentMethod": method, "amount": amount, "referenceId": reference, "payerIp": "203.0.113.10",
        "isPhysicalProduct": method == "BOLETO", "customer": CUSTOMER,
        "items": [{"title": f"Pedido {reference}", "quantity": 1, "unitPrice": amount}], **extra,
    }
    data = payin_request_validate(request, merchant=merchant, livemode=False, today=dates.sao_paulo_today())
    return payins.payin_create(merchant=merchant, livemode=False, data=data)


def _card(number: str) -> dict:
    return {"holderName": "MARIA DA SILVA", "number": number, "expirationMonth": "12", "expirationYear": "2030",
            "cvv": "1234" if number.startswith("37") else "123"}


def demo_activity(merchant: Merchant) -> int:
    """Create the demo charges once; returns how many were created (0 when the merchant already has charges)."""
    if Payin.objects.filter(merchant=merchant, livemode=False).exists():
        return 0

    def simulate(payin: Payin, action: str) -> None:
        payin_sandbox.payin_simulate(merchant=merchant, payin_id=payin.pk, action=action)

    _charge(merchant, "PIX", 15_000, "demo-order-1001")  # PENDING
    disputed = _charge(merchant, "PIX", 25_990, "demo-order-1002")
    simulate(disputed, "pay")  # PAID
    simulate(disputed, "med")  # still PAID, with an OPEN dispute (MED) holding its amount
    simulate(_charge(merchant, "PIX", 4_990, "demo-order-1003"), "expire")  # EXPIRED
    _charge(merchant, "BOLETO", 89_900, "demo-order-1004")  # PENDING
    simulate(_charge(merchant, "BOLETO", 12_000, "demo-order-1005"), "pay")  # PAID
    boleto = _charge(merchant, "BOLETO", 7_500, "demo-order-1006")
    payins.payin_cancel(merchant=merchant, livemode=False, payin_id=boleto.pk)  # CANCELED
    _charge(merchant, "CREDIT_CARD", 129_900, "demo-order-1007", card=_card("4111111111111111"))  # PAID
    _charge(merchant, "CREDIT_CARD", 5_000, "demo-order-1008", card=_card("4000000000000002"))  # FAILED
    partly = _charge(merchant, "CREDIT_CARD", 30_000, "demo-order-1009",
                     card={**_card("5555555555554444"), "installments": 3})
    refunds.refund_create(merchant=merchant, livemode=False, payin_id=partly.pk, amount=10_000,
                           reason="One item returned")  # PARTIALLY_REFUNDED
    whole = _charge(merchant, "CREDIT_CARD", 8_000, "demo-order-1010", card=_card("378282246310005"))
    refunds.refund_create(merchant=merchant, livemode=False, payin_id=whole.pk, amount=None,
                           reason="Order canceled")  # REFUNDED
    charged_back = _charge(merchant, "CREDIT_CARD", 19_900, "demo-order-1011", card=_card("6362970000457013"))
    simulate(charged_back, "chargeback")
    for dispute in dispute_selectors.payin_disputes(payin=charged_back):
        dispute_simulate(merchant=merchant, dispute_id=dispute.pk, action="lose")  # CHARGEBACK
    for reference, key_type, key, action in [("demo-payout-1", "EMAIL", "fornecedor@example.com", "complete"),
                                             ("demo-payout-2", "CPF", "52998224725", "fail")]:
        data = payout_request_validate({"amount": 2_500, "pixKeyType": key_type, "pixKey": key,
                                        "referenceId": reference, "beneficiaryName": "Fornecedor Ltda"},
                                       merchant=merchant)
        payout = payouts.payout_create(merchant=merchant, livemode=False, data=data)
        payouts.payout_simulate(merchant=merchant, payout_id=payout.pk, action=action)
    return 13
