"""The URLs of a charge's public pages that the API hands out (`paymentUrl`, `boleto.url`, `pix.qrcodeImageUrl`)."""

from __future__ import annotations

import logging

from django.conf import settings

from payments.models import Payin

logger = logging.getLogger(__name__)


# --- URLs the API hands out (the payin serializer calls these) -------------------------------------------------------
def payment_url(payin: Payin) -> str:
    """`paymentUrl`: the hosted payment page."""
    return f"{settings.PUBLIC_BASE_URL}/pay/{payin.public_token}"


def boleto_url(payin: Payin) -> str:
    """`boleto.url`: the printable boleto."""
    return f"{settings.PUBLIC_BASE_URL}/pay/{payin.public_token}/boleto"


def qrcode_image_url(payin: Payin, payin_id: str | None = None) -> str:
    """`pix.qrcodeImageUrl`: the PNG of the Pix payload. `payin_id`: the charge's id as text, when the caller has
    written it already (a UUID's text costs more than the rest of the URL)."""
    return f"{settings.PUBLIC_BASE_URL}/payin/{payin_id or payin.id}/qrcode.png?token={payin.public_token}"
