"""The API's representation of charges and refunds: plain functions building dicts (the hot path of every read and
of every event), documented for OpenAPI by the serializers in `payments.payins.schema`."""

from __future__ import annotations

from core.api import timestamp
from payments.hosted.links import boleto_url, payment_url, qrcode_image_url
from payments.models import Payin, PaymentMethod, Refund

# The columns each serializer reads (its own and through payments.hosted.links): a list page fetches exactly these and
# serializes each row's named tuple with the same function as a charge (core.api.Listing). The JSON columns come
# last: payments.payins.read_sql reads them as one array.
PAYIN_COLUMNS = ("id", "status", "amount", "fee", "payment_method", "reference_id", "livemode", "description",
                 "refunded_amount", "public_token", "created_at", "updated_at", "paid_at", "failure_code",
                 "failure_message", "pix_payload", "pix_expires_at", "pix_txid", "boleto_barcode",
                 "boleto_digitable_line", "boleto_due_date", "boleto_instructions", "authorization_code",
                 "paid_amount", "boleto_pdf_url", "metadata", "customer", "items", "card")
REFUND_COLUMNS = ("id", "payin_id", "amount", "status", "reason", "failure_code", "livemode", "created_at",
                  "updated_at")


def payin_serialize(payin: Payin) -> dict:
    payin_id = str(payin.id)
    body = {
        "id": payin_id,
        "status": payin.status,
        "amount": payin.amount,
        "fee": payin.fee,
        "netAmount": payin.amount - payin.fee,
        "currency": "BRL",
        "paymentMethod": payin.payment_method,
        "referenceId": payin.reference_id,
        "livemode": payin.livemode,
        "description": payin.description,
        "metadata": payin.metadata,
        "customer": payin.customer,
        "items": payin.items,
        "refundedAmount": payin.refunded_amount,
        "paymentUrl": payment_url(payin),
        "createdAt": timestamp(payin.created_at),
        "updatedAt": timestamp(payin.updated_at),
        "paidAt": timestamp(payin.paid_at),
        "failureCode": payin.failure_code or None,
        "failureMessage": payin.failure_message or None,
    }
    if payin.payment_method == PaymentMethod.PIX:
        body["pix"] = {"qrcode": payin.pix_payload, "expiration": timestamp(payin.pix_expires_at),
                       "txid": payin.pix_txid, "qrcodeImageUrl": qrcode_image_url(payin, payin_id)}
    elif payin.payment_method == PaymentMethod.BOLETO:
        body["boleto"] = {"barcode": payin.boleto_barcode, "digitableLine": payin.boleto_digitable_line,
                          "dueDate": payin.boleto_due_date.isoformat(), "url": boleto_url(payin),
                          "instructions": payin.boleto_instructions, "pdfUrl": payin.boleto_pdf_url or None,
                          # A boleto the bank registered with a Pix code (bolix): payable by either, once.
                          "pix": {"qrcode": payin.pix_payload,
                                  "qrcodeImageUrl": qrcode_image_url(payin, payin_id)} if payin.pix_payload else None,
                          "paidAmount": payin.paid_amount}
    else:
        body["card"] = dict(payin.card)
        body["authorizationCode"] = payin.authorization_code or None
    return body


def refund_serialize(refund: Refund) -> dict:
    return {
        "id": str(refund.id),
        "payinId": str(refund.payin_id),
        "amount": refund.amount,
        "status": refund.status,
        "reason": refund.reason or None,
        "failureCode": refund.failure_code or None,
        "livemode": refund.livemode,
        "createdAt": timestamp(refund.created_at),
        "updatedAt": timestamp(refund.updated_at),
    }
