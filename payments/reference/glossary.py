"""Descriptions and examples of the API's properties and parameters, by name: a name means the same thing in every
body (`livemode`, `referenceId`, `createdAt`), so it is described once. `"Component.property"` keys hold the few that
differ by object. A field's help_text, where it has one, is used instead (payments.reference.hook)."""

from __future__ import annotations

from typing import Any

TIMESTAMP = "2026-11-20T21:39:00.123Z"
PAYIN_ID = "0193a4f2-7c1e-7b8a-9d2f-5e6a1b2c3d4e"
PAYOUT_ID = "0193a4f3-1a2b-7c3d-8e4f-5a6b7c8d9e0f"
DISPUTE_ID = "0193a4f6-2b3c-7d4e-8f50-6a7b8c9d0e1f"
# The card token of the examples (tests/fuzz gives its merchant a card saved under it, so the examples are accepted).
CARD_TOKEN = "card_Qm3v8ZkT1pR7wX2nL9aF4cHd"  # the shape payments.payins.cards gives a token

# name -> (description, example)
PROPERTIES: dict[str, tuple[str, Any]] = {
    "id": ("The object's id: a UUID (v7, time-ordered).", PAYIN_ID),
    "livemode": ("true for live mode (live keys, real money), false for the sandbox (test keys).", False),
    "createdAt": ("When the object was created: ISO 8601 in UTC with milliseconds.", TIMESTAMP),
    "updatedAt": ("When the object last changed: ISO 8601 in UTC with milliseconds.", TIMESTAMP),
    "currency": ("Always BRL.", "BRL"),
    "amount": ("Integer cents (BRL): 10000 is R$ 100,00.", 10000),
    "fee": ("The fee charged for this object, integer cents; never more than the amount.", 99),
    "netAmount": ("amount minus fee, integer cents: what the balance is credited when the charge is paid.", 9901),
    "refundedAmount": ("Cents refunded so far (refunds pending included).", 0),
    "referenceId": ("Your own id for the object (an order id), 1 to 64 of letters, digits and . _ : -.", "order-1234"),
    "description": ("Free text, at most 140 characters; for a charge it is shown to the payer (so no invisible or "
                    "control characters).", "Order 1234"),
    "metadata": ("Your own key-value pairs: at most 20 keys of 1 to 40 characters, string values of at most 500. "
                 "Echoed back and in webhooks.", {"orderId": "1234"}),
    "webhookUrl": ("Where this object's events are also sent (besides the endpoints registered in the dashboard): "
                   "https://, no credentials, a host that resolves only to public addresses.",
                   "https://shop.example.com/webhooks/pagamentos"),
    "payerIp": ("The payer's IPv4 or IPv6 address, as your server saw it.", "203.0.113.9"),
    "isPhysicalProduct": ("true when goods are shipped: the customer's address and phone are then required.", False),
    "paymentMethod": ("PIX, CREDIT_CARD or BOLETO (uppercase).", "PIX"),
    "customer": ("The payer, echoed back as sent (normalized).", None),
    "items": ("What is sold: 1 to 100 items, whose quantity × unitPrice add up to amount exactly.", None),
    "card": ("The card: a token from an earlier charge, or the card's data.", None),
    "pix": ("PIX options (PIX only).", None),
    "boleto": ("BOLETO options (BOLETO only).", None),
    "address": ("The customer's address: required for BOLETO and for physical products.", None),
    "name": ("Full name, 2 to 100 characters.", "Ana Souza"),
    "document": ("CPF (11 digits) or CNPJ (14 characters), without punctuation.", "52998224725"),
    "email": ("E-mail address, at most 254 characters.", "ana@example.com"),
    "phone": ("Phone with area code: 10 to 13 digits.", "11987654321"),
    "street": ("Street, at most 150 characters.", "Avenida Paulista"),
    "number": ("Street number, at most 20 characters.", "1000"),
    "complement": ("Apartment, suite, etc.; at most 100 characters, may be empty.", "Apto 42"),
    "zipCode": ("CEP, 8 digits.", "01310100"),
    "city": ("City, at most 80 characters.", "São Paulo"),
    "state": ("One of the 27 UF codes.", "SP"),
    "title": ("The item's name, 1 to 256 characters.", "Caneca"),
    "quantity": ("How many, an integer from 1 to 1,000,000.", 1),
    "unitPrice": ("Price of one unit, integer cents, from 0 to the account's maximum per charge.", 10000),
    "holderName": ("The cardholder's name as printed on the card, 2 to 100 characters.", "ANA SOUZA"),
    "expirationMonth": ("Expiry month, two digits 01 to 12.", "12"),
    "expirationYear": ("Expiry year, YYYY (YY is accepted in requests); not in the past.", "2030"),
    "cvv": ("The card's security code: 3 digits, 4 for American Express. Sent to the rail, never stored.", "123"),
    "installments": ("Number of installments, 1 to 12; default 1.", 1),
    "boletoFine": ("A late live boleto's fine: basis points of the amount, once (200 is 2%); 0: none.", 200),
    "boletoInterest": ("A late live boleto's interest: basis points of the amount a month, charged by the day (100 "
                       "is 1% a month); 0: none.", 100),
    "hasInterest": ("true when the payer pays interest on this number of installments (the rail's account "
                    "settings).", False),
    "token": ("A card token: reuse the card in later charges of this account and mode.", CARD_TOKEN),
    "brand": ("The card brand: visa, mastercard, amex, elo, hipercard, diners, discover or jcb.", "visa"),
    "bin": ("The first 6 digits of the card number.", "411111"),
    "last4": ("The last 4 digits of the card number.", "1111"),
    "authorizationCode": ("The issuer's authorization code of a PAID card charge; null otherwise.", "A1B2C3"),
    "paymentUrl": ("The hosted payment page to send the payer to (public, unguessable).",
                   "https://pay.example.com/pay/6Zb3kQm9T0aX"),
    "paidAt": ("When the payment was confirmed; null until then.", TIMESTAMP),
    "completedAt": ("When the rail confirmed the payout; null until then.", None),
    "failureCode": ("Why the object FAILED (a stable code, see the errors guide); null otherwise.", None),
    "failureMessage": ("The failure in words, for humans; null unless FAILED.", None),
    "qrcode": ("The Pix copy-and-paste payload (BR Code).", "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-"
               "4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D"),
    "expiration": ("When the Pix charge expires: ISO 8601 in UTC.", TIMESTAMP),
    "txid": ("The Pix transaction id: 25 letters and digits, unique per charge.", "Q7mK2xV9pL4tR8nB3cW6yH1dF"),
    "qrcodeImageUrl": ("A PNG of the QR code (public, unguessable).",
                       "https://pay.example.com/payin/0193a4f2-7c1e-7b8a-9d2f-5e6a1b2c3d4e/qrcode.png?t=6Zb3kQm9"),
    "dueDate": ("The boleto's due date (America/Sao_Paulo), YYYY-MM-DD.", None),  # relative to today: see hook
    "instructions": ("Instructions printed on the boleto, at most 255 characters.", "Não receber após o vencimento."),
    "barcode": ("The 44-digit barcode.", "00191138100000100000000000000000000000000017"),
    "digitableLine": ("The 47-digit digitable line, digits only.", "00190000090000000000000000000179113810000010000"),
    "url": ("The printable boleto.", "https://pay.example.com/boleto/6Zb3kQm9T0aX"),
    "expiresIn": ("Seconds until the Pix charge expires, 60 to 604800; default 3600.", 3600),
    "pixKey": ("The beneficiary's Pix key, as sent.", "52998224725"),
    "pixKeyType": ("CPF, CNPJ, EMAIL, PHONE or EVP.", "CPF"),
    "beneficiaryName": ("The beneficiary's name, at most 120 characters.", "Ana Souza"),
    "beneficiaryDocument": ("The beneficiary's CPF or CNPJ; for a CPF or CNPJ key it must be the key itself.",
                            "52998224725"),
    "externalId": ("The Pix end-to-end id: E, the 8-digit ISPB, yyyyMMddHHmm (UTC) and 11 letters or digits.",
                   "E00000000202611202139aB3dE5fG7hJ"),
    "payinId": ("The id of the charge refunded.", PAYIN_ID),
    "reason": ("Why the refund was made, at most 255 characters.", "Customer returned the goods"),
    "action": ("What to simulate.", None),
    "data": ("The objects of this page.", None),
    "hasMore": ("true when there is a next page.", False),
    "nextCursor": ("Pass it as `cursor` for the next page; null on the last page.", None),
    "available": ("Cents that can be paid out now (payouts in flight are already out of it); may be negative "
                  "after a chargeback.", 150000),
    "pending": ("Card money not yet settled, cents.", 0),
    "held": ("Unmatched payments awaiting a decision and open disputes, cents.", 9000),
    "balanceAfter": ("The balance this line moved, right after it, in cents.", 159901),
    "balance": ("Which balance the line moves.", "available"),
    "objectType": ("The kind of object the line is about: payin, refund, payout or adjustment.", "payin"),
    "objectId": ("The id of the object the line is about.", PAYIN_ID),
    "merchantId": ("The merchant's id.", "0193a4f0-0000-7000-8000-000000000001"),
    "kycStatus": ("NOT_SUBMITTED, SUBMITTED, APPROVED or REJECTED: live keys work once APPROVED.", "APPROVED"),
    "apiVersion": ("The API version the event was written in.", "2026-11-20"),
    "previousStatus": ("The object's status before the change; null for *.created events.", "PENDING"),
    "object": ("The charge, payout or refund as its GET endpoint returns it, right after the change.",
               {"id": PAYIN_ID, "status": "PAID"}),
    "error": ("The error.", None),
    "code": ("A stable code to branch on (see the error codes).", "insufficient_balance"),
    "message": ("The error in words, for humans; it may change.", "Insufficient balance"),
    "param": ("The request field the error is about (a dotted path such as customer.document), or null.", None),
    "details": ("For validation errors: one item per problem, all of them at once.", None),
    "requestId": ("The request's id (the X-Request-Id header): quote it to support.", "6f1c2a9e0b7d4c3f"),
    "database": ("ok, or down.", "ok"),
    "broker": ("ok, or down.", "ok"),
}

# "Component.property" -> (description, example): where an object gives a name its own meaning, or its own rule
# (an empty description: the field's help_text describes it).
OVERRIDES: dict[str, tuple[str, Any]] = {
    "Payin.status": ("PENDING, PAID, FAILED, EXPIRED, CANCELED, PARTIALLY_REFUNDED, REFUNDED or CHARGEBACK: see the "
                     "lifecycle in docs/README.md.", "PENDING"),
    "PayinSimulated.status": ("The charge's status after the simulation: PENDING, PAID, FAILED, EXPIRED, CANCELED, "
                              "PARTIALLY_REFUNDED, REFUNDED or CHARGEBACK.", "PAID"),
    "Payout.status": ("PENDING, PROCESSING, COMPLETED, FAILED, CANCELED or RETURNED.", "PENDING"),
    "Refund.status": ("PENDING until the rail confirms (Pix), then SUCCEEDED or FAILED; card refunds succeed at "
                      "once.", "SUCCEEDED"),
    "Refund.amount": ("Cents refunded.", 5000),
    "Refund.failureCode": ("Why the refund FAILED; null otherwise.", None),
    "Refund.reason": ("As sent; null when none was.", None),
    "Payout.id": ("The payout's id: a UUID.", PAYOUT_ID),
    "Payout.fee": ("The payout fee, integer cents (0 by default).", 0),
    "Payout.amount": ("Cents sent to the beneficiary.", 10000),
    "Payout.description": ("As sent; empty when none was.", ""),
    "Payout.beneficiaryName": ("As sent; null when none was.", "Ana Souza"),
    "Payout.beneficiaryDocument": ("As sent, normalized; null when none was.", "52998224725"),
    "Payout.failureCode": ("pix_key_not_found, rejected_by_bank, beneficiary_mismatch or rail_error when FAILED; "
                           "null otherwise.", None),
    "Payin.failureCode": ("card_declined, insufficient_funds, expired_card, incorrect_cvc or processing_error when "
                          "a card charge FAILED; null otherwise.", None),
    "Payin.description": ("As sent; empty when none was.", "Order 1234"),
    "AmexCardDetailsRequest.cvv": ("", "1234"),
    "CardDetailsRequest.number": ("", "4111111111111111"),
    "AmexCardDetailsRequest.number": ("", "378282246310005"),
    "CnpjPayoutRequest.pixKey": ("", "11222333000181"),
    "CnpjPayoutRequest.beneficiaryDocument": ("", "11222333000181"),
    "EmailPayoutRequest.pixKey": ("", "ana@example.com"),
    "PhonePayoutRequest.pixKey": ("", "+5511987654321"),
    "EvpPayoutRequest.pixKey": ("", "123e4567-e89b-42d3-a456-426614174000"),
    "Payin.referenceId": ("As sent; not unique: list charges by it.", "order-1234"),
    "StatementLine.id": ("The line's id.", "0193a4f4-5b6c-7d8e-9f0a-1b2c3d4e5f60"),
    "StatementLine.type": ("payin, payin_fee, refund, payout, payout_fee, payout_reversal, chargeback, settlement or "
                           "adjustment.", "payin"),
    "StatementLine.referenceId": ("The object's referenceId; null for adjustments.", "order-1234"),
    "StatementLine.description": ("What the line is, in words.", "PIX charge"),
    "Event.id": ("The event's id; also the webhook-id header of its deliveries (drop duplicates by it).",
                 "0193a4f5-0000-7000-8000-00000000e001"),
    "Event.type": ("What happened, e.g. payin.paid.", "payin.paid"),
    "Event.data": ("The object and its previous status.", None),
    "Error.error": ("The error: type, code, message, param, details and requestId.", None),
    "ErrorBody.type": ("The error's family: invalid_request_error, authentication_error, permission_error, not_found, "
                       "conflict, idempotency_error, rate_limit_error, api_error or rail_error.",
                       "invalid_request_error"),
    "ErrorBody.param": ("The request field the error is about, or null.", None),
    "ErrorDetail.code": ("The problem's code: required, invalid_document, min_value, ... (see the errors guide).",
                         "invalid_document"),
    "ErrorDetail.message": ("The problem in words.", "Must be a valid CPF (11 digits) or CNPJ (14 characters)."),
    "ErrorDetail.param": ("The field's dotted path, e.g. customer.document or items.0.quantity.", "customer.document"),
    "Health.status": ("ok when the database and the broker answer.", "ok"),
    "Account.name": ("The merchant's account name.", "Loja Demo"),
    "CardData.installments": ("Number of installments.", 1),
    "CardData.expirationYear": ("Expiry year, YYYY.", "2030"),
    "PayinSimulationRequest.action": ("pay (confirm the payment), expire, chargeback (open a dispute on a PAID card "
                                      "charge) or med (open a MED on a PAID Pix charge).", "pay"),
    "UnmatchedPayment.endToEndId": ("The rail's id of the money that arrived (the Pix end-to-end id).",
                                    "E60701190202611251200a1B2c3D4e5F"),
    "Dispute.id": ("The dispute's id.", DISPUTE_ID),
    "Dispute.payinId": ("The disputed charge's id.", PAYIN_ID),
    "Dispute.kind": ("CHARGEBACK (a card network's chargeback) or MED (Pix's Mecanismo Especial de Devolução).",
                     "CHARGEBACK"),
    "Dispute.reason": ("Why the payer's bank disputes the charge, as the network says it; null when it said "
                       "nothing.", "fraudulent"),
    "Dispute.amount": ("Cents in dispute: what was left of the charge after its refunds (pending ones included). "
                       "Held from `available` while the dispute is open.", 10000),
    "Dispute.status": ("OPEN (answer it), UNDER_REVIEW (evidence sent), WON, LOST or ACCEPTED.", "OPEN"),
    "Dispute.evidenceDueBy": ("The deadline for evidence; an OPEN dispute past it is LOST.", TIMESTAMP),
    "Dispute.evidence": ("The merchant's evidence: its text and when it was sent (null until then).", None),
    "Dispute.closedAt": ("When it became WON, LOST or ACCEPTED; null while open.", None),
    "DisputeEvidenceData.text": ("The evidence as sent; null until then.", "Delivered on 2026-11-18; receipt 4821."),
    "DisputeEvidenceData.submittedAt": ("When the evidence was sent; null until then.", None),
    "DisputeEvidenceRequest.text": ("", "Delivered on 2026-11-18 to the cardholder's address; signed receipt 4821."),
    "DisputeSimulationRequest.action": ("win (the merchant wins) or lose (the payer wins).", "win"),
    "PayoutSimulationRequest.action": ("complete (a PENDING or PROCESSING payout), fail, or return (a COMPLETED "
                                       "one).", "complete"),
    "RefundRequestRequest.reason": ("Why you refund, at most 255 characters; echoed back.",
                                    "Customer returned the goods"),
}

# Parameters, by name (path and query alike).
PARAMETERS: dict[str, str] = {
    "payin_id": "The charge's id.",
    "payout_id": "The payout's id.",
    "dispute_id": "The dispute's id.",
    "kind": "Only objects of this kind: for disputes CHARGEBACK (card) or MED (Pix); for unmatched payments "
            "AMOUNT_MISMATCH, DUPLICATE, AFTER_CANCEL or UNKNOWN_REFERENCE.",
    "unmatched_id": "The unmatched payment's id.",
    "payinId": "Only the disputes of this charge.",
    "event_id": "The event's id.",
    "status": "Only objects in this status.",
    "paymentMethod": "Only charges of this payment method.",
    "referenceId": "Only objects with this referenceId.",
    "type": "Only events of this type.",
}


def property_doc(component: str, name: str) -> tuple[str, Any] | None:
    """(description, example) of property `name` of `component`, or None if the glossary has neither."""
    return OVERRIDES.get(f"{component}.{name}") or PROPERTIES.get(name)
