"""What each operation of the API does, in words, and the request bodies to start from: one per payment method and
per Pix key type. The bodies are sent as they are by the schema fuzzing suite (tests/fuzz, its examples phase), so
each must be accepted by a test-mode key pair."""

from __future__ import annotations

from typing import Any

from payments.reference.glossary import CARD_TOKEN

_CUSTOMER = {"name": "Ana Souza", "document": "52998224725", "email": "ana@example.com"}
_ADDRESS = {"street": "Avenida Paulista", "number": "1000", "complement": "Apto 42", "zipCode": "01310-100",
            "city": "São Paulo", "state": "SP"}
_ITEMS = [{"title": "Caneca", "quantity": 2, "unitPrice": 5000}]
_CHARGE = {"amount": 10000, "referenceId": "order-1234", "payerIp": "203.0.113.9", "isPhysicalProduct": False,
           "customer": _CUSTOMER, "items": _ITEMS}
_CARD = {"holderName": "ANA SOUZA", "number": "4111111111111111", "expirationMonth": "12", "expirationYear": "2030",
         "cvv": "123"}


def _example(summary: str, value: dict) -> dict:
    return {"summary": summary, "value": value}


PAYIN_EXAMPLES = {
    "pix": _example("PIX: a QR code and a copy-and-paste code, PENDING until paid",
                    {**_CHARGE, "paymentMethod": "PIX", "description": "Order 1234", "pix": {"expiresIn": 3600},
                     "metadata": {"orderId": "1234"}}),
    "boleto": _example("BOLETO: the customer's address and phone are required",
                       {**_CHARGE, "paymentMethod": "BOLETO", "referenceId": "order-1235",
                        "customer": {**_CUSTOMER, "phone": "+55 (11) 98765-4321", "address": _ADDRESS},
                        "boleto": {"instructions": "Não receber após o vencimento."}}),
    "card": _example("CREDIT_CARD with a test card: PAID at once (4000000000000002 is declined)",
                     {**_CHARGE, "paymentMethod": "CREDIT_CARD", "referenceId": "order-1236",
                      "card": {**_CARD, "installments": 3}}),
    "card_token": _example("CREDIT_CARD with the token of an earlier PAID charge (card.token in its response)",
                           {**_CHARGE, "paymentMethod": "CREDIT_CARD", "referenceId": "order-1237",
                            "card": {"token": CARD_TOKEN}}),
    "card_shipped": _example("CREDIT_CARD for a physical product: address and phone required",
                             {**_CHARGE, "paymentMethod": "CREDIT_CARD", "referenceId": "order-1238",
                              "isPhysicalProduct": True, "card": _CARD,
                              "customer": {**_CUSTOMER, "phone": "11987654321", "address": _ADDRESS}}),
}

_PAYOUT = {"amount": 10000, "beneficiaryName": "Ana Souza", "description": "Supplier invoice 77"}
PAYOUT_EXAMPLES = {
    "cpf": _example("To a CPF key (the beneficiary's document, if sent, must be the key)",
                    {**_PAYOUT, "referenceId": "payout-cpf-1", "pixKeyType": "CPF", "pixKey": "52998224725",
                     "beneficiaryDocument": "529.982.247-25"}),
    "cnpj": _example("To a CNPJ key (numeric or alphanumeric)",
                     {**_PAYOUT, "referenceId": "payout-cnpj-1", "pixKeyType": "CNPJ", "pixKey": "11222333000181",
                      "beneficiaryName": "Fornecedor Ltda"}),
    "email": _example("To an e-mail key (in the sandbox, @fail.example.com fails with rejected_by_bank)",
                      {**_PAYOUT, "referenceId": "payout-email-1", "pixKeyType": "EMAIL",
                       "pixKey": "ana@example.com"}),
    "phone": _example("To a phone key: +55, the area code and the number",
                      {**_PAYOUT, "referenceId": "payout-phone-1", "pixKeyType": "PHONE",
                       "pixKey": "+5511987654321"}),
    "evp": _example("To a random key (EVP); in the sandbox the all-zero key fails with pix_key_not_found",
                    {**_PAYOUT, "referenceId": "payout-evp-1", "pixKeyType": "EVP",
                     "pixKey": "123e4567-e89b-42d3-a456-426614174000", "metadata": {"invoice": "77"}}),
}

_LIST = ("Newest first, `limit` 1 to 100 (default 20); pass the response's `nextCursor` as `cursor` for the next "
         "page. An unknown parameter or a bad value is 400 validation_error, never silently ignored.")

# operationId -> (description, request examples or None)
OPERATIONS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "health": ("200 when the service, its database and its broker answer; 503 naming what is down. No "
               "authentication.", None),
    "account_retrieve": ("Use it to check a key pair: the merchant and mode the keys belong to, and the KYC status "
                         "(live keys work once it is APPROVED).", None),
    "balance_retrieve": ("`available` can be paid out now (payouts in flight are already out of it); `pending` is "
                         "card money not yet settled; `held` is unmatched payments awaiting a decision and open "
                         "disputes. Integer cents, BRL.", None),
    "balance_transactions_list": ("The statement: one line per movement of the balance (a paid charge gives a "
                                  "`payin` line and a `payin_fee` line), signed cents with the balance after it. "
                                  + _LIST, None),
    "events_list": ("Every status change of a charge, refund or payout, as webhooks carry it; kept 30 days. Filter "
                    "by `type` or `objectId`. " + _LIST, None),
    "events_retrieve": ("One event, exactly as its webhook deliveries carried it.", None),
    "payin_create": (
        "Creates a charge. PIX and BOLETO charges answer PENDING with the QR code or the boleto; a CREDIT_CARD charge "
        "is authorized and captured within the request and answers PAID, or FAILED with `failureCode` (still 201). "
        "Every invalid field is reported at once in `error.details`. In test mode only the test cards are accepted "
        "(see docs/sandbox.md). In live mode a card is Efí's browser token (`card: {token, installments}`; a card "
        "number is 400 raw_card_data_not_allowed) or absent (the payer pays on `paymentUrl`), and a card Efí has not "
        "decided yet answers 202 PROCESSING: wait for its webhook (docs/cards.md). Send an `Idempotency-Key` to "
        "retry safely.", PAYIN_EXAMPLES),
    "payin_list": ("Charges, filtered by status, paymentMethod, referenceId and creation time. " + _LIST, None),
    "payin_retrieve": ("One charge, with its current status. Another merchant's or mode's charge is 404.", None),
    "payin_installments": ("The installments a card of `brand` can pay `amount` in: Efí's table in live mode (with "
                           "its interest), 1 to 12 without interest in test mode. For your own checkout; the hosted "
                           "card page shows the same.", None),
    "boleto_settings_retrieve": ("What a payer pays on top of a live boleto paid after its due date: the fine "
                                 "(once) and the interest (a month, by the day), in basis points of the amount. 0 "
                                 "is none, the default.", None),
    "boleto_settings_update": (
        "Sets the fine or the interest of live boletos created from now on (the bank charges them; "
        "`boleto.paidAmount` says what was paid). The change is in the account's audit log.",
        {"fine_and_interest": _example("2% fine and 1% a month", {"boletoFine": 200, "boletoInterest": 100})}),
    "payin_cancel": ("Cancels a PENDING PIX or BOLETO charge: the QR code or boleto can no longer be paid. Any other "
                     "charge is 409 invalid_state. No body.", None),
    "refund_create": (
        "Refunds part of a PIX or CREDIT_CARD charge, or what is left of it (the default). Card refunds succeed at "
        "once; Pix refunds are PENDING until the rail confirms (`refund.succeeded` / `refund.failed`). The available "
        "balance is debited (400 insufficient_balance if it is lower); fees are not returned. BOLETO charges cannot "
        "be refunded (409 refund_not_supported).",
        {"partial": _example("Refund R$ 50,00", {"amount": 5000, "reason": "Customer returned one item"}),
         "rest": _example("Refund what is left", {"reason": "Order canceled"})}),
    "refund_list": ("The refunds of a charge, newest first, a page at a time like every list.", None),
    "payout_create": (
        "Sends a Pix payout from the available balance. In one transaction the amount and the payout fee move from "
        "`available` to payouts in flight (400 insufficient_balance when the balance is lower, with the message "
        "`Insufficient balance`); the payout is PENDING, then PROCESSING and COMPLETED or FAILED (webhooks "
        "`payout.*`). `referenceId` is unique per account and mode: a second payout with it is 409 "
        "duplicate_reference_id naming the first in `details[0].existingId`.", PAYOUT_EXAMPLES),
    "payout_list": ("Payouts, filtered by status, referenceId and creation time. " + _LIST, None),
    "payout_retrieve": ("One payout, with its current status.", None),
    "payout_cancel": ("Cancels a PENDING payout before the worker sends it to the rail: the money returns to "
                      "`available`. Any other payout is 409 invalid_state. No body.", None),
    "sandbox_payin_simulate": (
        "Test keys only (403 test_mode_only with live keys): makes the simulator pay or expire a PENDING charge, or "
        "open a dispute on a PAID one (chargeback: a card; med: a Pix), with the same ledger movements and webhooks "
        "as the real thing. Decide the dispute with POST /sandbox/disputes/{id}/simulate. `pay` with another "
        "`amount`, or on a charge that is no longer PENDING, plays money that settles nothing: the charge does not "
        "move and the answer's `unmatchedPayment` names the unmatched payment it made.",
        {"pay": _example("Pay a PENDING charge", {"action": "pay"}),
         "pay_other_amount": _example("Pay another amount (an unmatched payment)", {"action": "pay", "amount": 9000}),
         "expire": _example("Expire a PENDING charge", {"action": "expire"}),
         "chargeback": _example("Open a card dispute on a PAID card charge", {"action": "chargeback"}),
         "med": _example("Open a MED on a PAID Pix charge", {"action": "med"})}),
    "unmatched_payment_list": (
        "Money that reached us without settling a PENDING charge exactly: another amount (AMOUNT_MISMATCH), a second "
        "payment (DUPLICATE), a payment after a cancel (AFTER_CANCEL) or a Pix naming no charge (UNKNOWN_REFERENCE). "
        "Its amount waits in `held` (GET /balance) until it is accepted or sent back. Filter by status and kind. "
        + _LIST, None),
    "unmatched_payment_retrieve": ("One unmatched payment, with the charge it named and the payer.", None),
    "unmatched_payment_accept": (
        "Keeps a HELD (or REFUND_FAILED) unmatched payment: its amount moves from `held` to `available`, less the "
        "fee of the charge's method. Any other status is 409 invalid_state. Webhook `unmatched_payment.updated`. "
        "No body.", None),
    "unmatched_payment_refund": (
        "Sends a HELD (or REFUND_FAILED) unmatched payment back to the payer by a Pix devolução: REFUND_PENDING, then "
        "REFUNDED when the rail confirms, or REFUND_FAILED with the money back in `held`. A boleto payment cannot be "
        "sent back (409 refund_not_supported); any other status is 409 invalid_state. No body.", None),
    "unmatched_policy_retrieve": ("What happens to each kind of unmatched payment as it arrives: refund, accept or "
                                  "hold. Defaults: DUPLICATE and AFTER_CANCEL refund; AMOUNT_MISMATCH and "
                                  "UNKNOWN_REFERENCE hold.", None),
    "unmatched_policy_update": (
        "Changes the action of the kinds sent; the others keep theirs. The whole policy is returned.",
        {"accept_mismatches": _example("Keep payments of another amount, hold duplicates",
                                       {"AMOUNT_MISMATCH": "accept", "DUPLICATE": "hold"})}),
    "sandbox_pix_receive": (
        "Test keys only (403 test_mode_only with live keys): a payer sends a Pix to our key naming no charge of "
        "yours (no txid, or one that is not a charge's). It becomes an UNKNOWN_REFERENCE unmatched payment (201).",
        {"receive": _example("A Pix of R$ 77,70 naming nothing", {"amount": 7770})}),
    "dispute_list": ("Disputes (card chargebacks and Pix MED returns), filtered by status, kind and payinId. "
                     + _LIST, None),
    "dispute_retrieve": ("One dispute: its amount (held from `available` while it is OPEN or UNDER_REVIEW), its "
                         "deadline for evidence (`evidenceDueBy`) and its evidence.", None),
    "dispute_evidence_submit": (
        "Answers an OPEN dispute before `evidenceDueBy`: it becomes UNDER_REVIEW until the network decides (WON: the "
        "held amount is available again; LOST: it goes to the payer). Evidence is sent once; after the deadline, or "
        "on any other status, 409 invalid_state. Webhook `dispute.updated`.",
        {"evidence": _example("Answer with evidence", {"text": "Delivered on 2026-11-18 to the cardholder's "
                                                               "address; signed receipt 4821."})}),
    "dispute_accept": ("Gives an OPEN dispute up: the held amount goes to the payer and the charge becomes CHARGEBACK "
                       "(card) or REFUNDED / PARTIALLY_REFUNDED (MED). Any other status is 409 invalid_state. Webhook "
                       "`dispute.closed`. No body.", None),
    "sandbox_dispute_simulate": (
        "Test keys only (403 test_mode_only with live keys): makes the network decide an OPEN or UNDER_REVIEW "
        "dispute, with the same ledger movements and webhooks as the real thing.",
        {"win": _example("The merchant wins: the amount is available again", {"action": "win"}),
         "lose": _example("The payer wins: the amount goes back to the payer", {"action": "lose"})}),
    "sandbox_payout_simulate": (
        "Test keys only (403 test_mode_only with live keys): makes the simulator complete or fail a payout, or "
        "return a COMPLETED one.",
        {"complete": _example("Complete a payout", {"action": "complete"}),
         "fail": _example("Fail a payout (rejected_by_bank)", {"action": "fail"}),
         "return": _example("Return a COMPLETED payout", {"action": "return"})}),
}
