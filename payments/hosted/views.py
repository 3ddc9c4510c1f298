"""The public pages of a charge (SPEC §3.5, §3.6): the hosted payment page, its status feed, the printable boleto and
the Pix QR image.

No login: whoever holds the charge's unguessable `public_token` is the payer. So these pages show what a payer needs
and nothing else (no merchant id, no reference id, no customer e-mail; the boleto shows the payer's own name,
document and address because a boleto must), are kept out of search engines, and send no Referer onwards.
"""

from __future__ import annotations

import hmac
import io
import logging
import re
import unicodedata
from collections.abc import Callable
from datetime import datetime
from functools import wraps
from urllib.parse import urlsplit
from uuid import UUID

import segno
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotFound, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST, require_safe

from accounts.selectors import merchant_display_name
from core.api import timestamp
from core.errors import InvalidState
from core.formats.contact import UF_CODES
from payments import rails
from payments.formats import boleto as boleto_format
from payments.formats.itf import itf_svg
from payments.hosted.links import qrcode_image_url
from payments.models import Payin, PayinStatus, PaymentMethod
from payments.payins import rail_charges
from payments.payins.errors import RailUnavailable
from payments.payins.selectors import CARD_BRANDS as INSTALLMENT_BRANDS
from payments.payins.validation import RAIL_TOKEN
from payments.rails.base import RailError
from payments.templatetags.payments_format import SAO_PAULO, brl

logger = logging.getLogger(__name__)


# QR image: a normal QR (never Micro QR), error correction M exactly (segno would otherwise raise it when the version
# has room, which changes the image for no reader's benefit), 8 px modules and the standard 4-module quiet zone.
QR_ERROR = "m"


QR_SCALE = 8


QR_BORDER = 4


# The payload of a charge never changes, so the image can be cached for the longest a Pix charge lives (7 days).
QR_CACHE_SECONDS = 7 * 24 * 3600


# How often the page asks for the status: a Pix is confirmed in seconds, a boleto in a day or so.
POLL_MS = {PaymentMethod.PIX: 3000, PaymentMethod.BOLETO: 30000, PaymentMethod.CREDIT_CARD: 5000}


# The payer's pages speak pt-BR (payers are Brazilian), unless the payer's browser asks for English before Portuguese
# (ADR 0082). The printable boleto is a Brazilian bank document: always pt-BR. The dashboard's language switch is the
# merchant's choice for the dashboard and changes neither.
PAYER_LANGUAGE = "pt-br"
# One range of Accept-Language (RFC 9110 §12.5.4): a language tag or "*", and its optional weight.
_LANGUAGE_RANGE = re.compile(
    r"\s*([A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*|\*)\s*(?:;\s*[qQ]\s*=\s*([01](?:\.[0-9]{0,3})?))?\s*")
_LANGUAGE_RANGES_READ = 20  # a header is a few ranges; a long one is not read past this


# What the payer reads for each status: (label, note), in the page's language. The page shows them and hands them to
# pay.js, so the live refresh and a reload always say the same thing.
STATUS_TEXT: dict[str, tuple[str, str]] = {
    PayinStatus.PENDING: (_("Waiting for payment"), ""),
    # A live card the network is deciding (ADR 0085).
    PayinStatus.PROCESSING: (_("Processing"), _("Your card payment is being confirmed. This page updates by itself.")),
    PayinStatus.PAID: (_("Paid"), _("Payment received. You can close this page.")),
    PayinStatus.EXPIRED: (_("Expired"), _("This charge expired before it was paid. Ask the seller for a new one.")),
    PayinStatus.CANCELED: (_("Canceled"), _("The seller canceled this charge. Do not pay it.")),
    PayinStatus.FAILED: (_("Failed"), _("The payment was not approved.")),
    PayinStatus.REFUNDED: (_("Refunded"), _("This payment was refunded.")),
    PayinStatus.PARTIALLY_REFUNDED: (_("Partially refunded"), _("Part of this payment was refunded.")),
    PayinStatus.CHARGEBACK: (_("Charged back"), _("This payment was disputed and returned to the payer.")),
}


# A card charge is PENDING only while the rail has not answered (SPEC §3.3): nothing for the payer to do but wait.
CARD_PENDING_TEXT = (_("Processing"), _("Your card payment is being confirmed. This page updates by itself."))


# The instruction every boleto of ours carries, in the bank's words (Portuguese in any language, like the rest of the
# "ficha de compensação"). Printed once, even when the merchant's own instructions say it too.
BOLETO_FIXED_INSTRUCTION = "Não receber após o vencimento."


CARD_BRANDS = {
    "visa": "Visa", "mastercard": "Mastercard", "amex": "American Express", "elo": "Elo", "hipercard": "Hipercard",
    "diners": "Diners Club", "discover": "Discover", "jcb": "JCB",
}


# --- Response plumbing -----------------------------------------------------------------------------------------------
def _public(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """GET/HEAD only, and the headers every public response carries: not indexed, no Referer (it would carry the
    token to whatever site a link leads to), and not stored by caches unless the view says otherwise."""

    @require_safe
    @wraps(view)
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        fixed = getattr(view, "fixed_language", None)
        language = fixed or payer_language(request.headers.get("Accept-Language", ""))
        with translation.override(language):
            response = view(request, *args, **kwargs)
        response["Content-Language"] = language  # LanguageMiddleware adds Vary: Accept-Language
        response["X-Robots-Tag"] = "noindex"
        if "Referrer-Policy" not in response:
            response["Referrer-Policy"] = "no-referrer"
        if "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response

    return wrapped


def payer_language(accept_language: str) -> str:
    """The payer's page's language: English when the browser ranks English above Portuguese in Accept-Language (by
    q-value, then order), else pt-BR (no header, Portuguese first, or neither named)."""
    ranked = []
    for position, part in enumerate(accept_language.split(",")[:_LANGUAGE_RANGES_READ]):
        match = _LANGUAGE_RANGE.fullmatch(part)
        if match is None:
            continue
        weight = float(match[2] or 1)
        if weight > 0:  # q=0 says "not this one"
            ranked.append((-weight, position, match[1].lower().partition("-")[0]))
    for _weight, _position, primary in sorted(ranked):
        if primary in ("pt", "en"):
            return "en" if primary == "en" else PAYER_LANGUAGE
    return PAYER_LANGUAGE


def portuguese_always(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For a page in pt-BR whatever the browser asks (under `_public`): the printable boleto."""
    view.fixed_language = PAYER_LANGUAGE  # type: ignore[attr-defined]
    return view


def _content_security_policy(*, card_form: bool = False) -> str:
    # A script injected into this page could swap the Pix code for someone else's: only our own files run. The QR
    # image comes from PUBLIC_BASE_URL, which may be another origin than the one serving the page (a proxy, a laptop).
    # The card form's page alone also runs the rail's tokenizer, from exactly its origin, which talks to its rail; the
    # form posts only to us (ADR 0086).
    base = urlsplit(settings.PUBLIC_BASE_URL)
    scripts = connect = ""
    form_action = "'none'"
    if card_form:
        tokenizer = tokenizer_origin()
        scripts = f" {tokenizer}"
        connect = " ".join(["", tokenizer, *settings.EFI_TOKENIZER_CONNECT_ORIGINS])
        form_action = "'self'"
    return (
        f"default-src 'none'; script-src 'self'{scripts}; style-src 'self'; "
        f"img-src 'self' {base.scheme}://{base.netloc}; connect-src 'self'{connect}; "
        f"base-uri 'none'; form-action {form_action}; frame-ancestors 'none'"
    )


def tokenizer_origin() -> str:
    parts = urlsplit(settings.EFI_TOKENIZER_SCRIPT_URL)
    return f"{parts.scheme}://{parts.netloc}"


def _render_page(request: HttpRequest, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    card_form = bool(context.get("card_form"))
    response = render(request, template, context, status=status)
    response["Content-Security-Policy"] = _content_security_policy(card_form=card_form)
    if card_form:
        # The form posts to us: the browser must name our origin (CSRF's Origin check), which `no-referrer` turns
        # into "null". Still nothing goes to another origin (the tokenizer's requests carry no Referer).
        response["Referrer-Policy"] = "same-origin"
    return response


def _payin_for_token(token: str) -> Payin:
    """The charge behind a page token, or 404. The token is the whole secret, so the lookup is exact and unique."""
    if not 1 <= len(token) <= Payin._meta.get_field("public_token").max_length:
        raise Http404("No such charge")
    payin = Payin.objects.select_related("merchant", "merchant__kyc").filter(public_token=token).first()
    if payin is None:
        raise Http404("No such charge")
    return payin


def _payable(payin: Payin, now: datetime) -> bool:
    """Can the payer still pay? PENDING and, for Pix and boleto, before the deadline. The expiry job moves a charge
    to EXPIRED a little after its deadline; until it runs the page must not invite a payment that will be late."""
    if payin.status != PayinStatus.PENDING:
        return False
    if payin.payment_method == PaymentMethod.PIX and payin.pix_expires_at is not None:
        return now < payin.pix_expires_at
    if payin.payment_method == PaymentMethod.BOLETO and payin.boleto_due_date is not None:
        return now.astimezone(SAO_PAULO).date() <= payin.boleto_due_date  # payable through the whole due date
    return True


def _status_texts(payin: Payin) -> dict[str, tuple[str, str]]:
    texts = dict(STATUS_TEXT)
    if payin.payment_method == PaymentMethod.CREDIT_CARD and not _card_form_shown(payin):
        texts[PayinStatus.PENDING] = CARD_PENDING_TEXT
    return texts


def _bank_code_check_digit(bank_code: str) -> str:
    """The digit printed after the bank code in a boleto's header ('001-9', '341-7', '104-0'): mod 11 with weights
    2..9 from the right, 10 and 11 becoming 0."""
    total = sum(int(char) * (2 + position % 8) for position, char in enumerate(reversed(bank_code)))
    digit = 11 - total % 11
    return "0" if digit >= 10 else str(digit)


def _boleto_fields(payin: Payin) -> dict:
    """The boleto's line, barcode and nosso número, checked against each other before any of them is shown: a wrong
    digit on a boleto sends the payer's money nowhere, so a stored inconsistency is a 500, not a page."""
    line, code = payin.boleto_digitable_line, payin.boleto_barcode
    if boleto_format.digitable_line_from_barcode(code) != line:
        logger.error("boleto.inconsistent", extra={"payin_id": str(payin.id)})
        raise boleto_format.BoletoFormatError("stored digitable line does not match the stored barcode")
    free = code[-25:]
    if payin.rail_charge_id is not None:
        # Numbered by the bank that registered it (Efí's bolix): its free field is the bank's; the charge's number at
        # the bank stands for the nosso número.
        nosso_numero = str(payin.rail_charge_id)
    else:
        boleto_format.nosso_numero_from_free_field(free)  # its check digit too
        number_start = boleto_format.AGREEMENT_LENGTH
        # As the bank reads it from the barcode: the 17-digit sequence and its check digit.
        nosso_numero = f"{free[number_start:-1]}-{free[-1]}"
    return {
        "line_formatted": boleto_format.format_digitable_line(line),
        "line_digits": line,
        "barcode": code,
        "due_date": payin.boleto_due_date,
        "nosso_numero": nosso_numero,
        "instructions": _boleto_instructions(payin),
    }


def _boleto_instructions(payin: Payin) -> list[str]:
    """The lines of the boleto's "Instruções" cell: the merchant's, what it refers to, and ours; a line that says what
    an earlier one said (ignoring case, accents, spacing and final punctuation) is not printed again."""
    lines = [line.strip() for line in (payin.boleto_instructions or "").splitlines()]
    if payin.description:
        lines.append(f"Referente a: {payin.description}")
    lines.append(BOLETO_FIXED_INSTRUCTION)
    shown: dict[str, str] = {}
    for line in lines:
        key = _instruction_key(line)
        if key and key not in shown:
            shown[key] = line
    return list(shown.values())


def _instruction_key(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    return " ".join(plain.casefold().split()).rstrip(".!;:, ")


# --- Views ----------------------------------------------------------------------------------------------------------
@_public
def pay_page(request: HttpRequest, token: str) -> HttpResponse:
    """The hosted payment page: what to pay and how, for the charge's method, or its final status."""
    payin = _payin_for_token(token)
    now = timezone.now()
    payable = _payable(payin, now)
    # A PENDING charge past its deadline is shown as expired already: the expiry job will make it so shortly.
    shown_status = payin.status
    if payin.status == PayinStatus.PENDING and not payable:
        shown_status = PayinStatus.EXPIRED
    texts = _status_texts(payin)
    context = {
        "token": token,
        "method": payin.payment_method,
        "merchant_name": merchant_display_name(payin.merchant),
        "amount": payin.amount,
        "description": payin.description,
        "status": shown_status,
        "status_label": texts[shown_status][0],
        "status_note": texts[shown_status][1],
        "status_texts": {status: {"label": str(label), "note": str(note)} for status, (label, note) in texts.items()},
        "paid_at": payin.paid_at,
        "payable": payable,
        "polling": payin.status == PayinStatus.PENDING,
        "poll_ms": POLL_MS.get(payin.payment_method, 5000),
        "status_url": reverse("pay:status", args=[token]),
        # Our own messages (payins.transitions.FAILURE_MESSAGES) are in the catalog; a rail's own text shows as sent.
        "failure_message": translation.gettext(payin.failure_message) if payin.status == PayinStatus.FAILED else "",
    }
    if payin.payment_method == PaymentMethod.PIX:
        context.update(
            pix_payload=payin.pix_payload,
            qr_url=qrcode_image_url(payin),
            expires_at=payin.pix_expires_at,
            expires_at_iso=timestamp(payin.pix_expires_at),
            server_now_iso=timestamp(now),
        )
    elif payin.payment_method == PaymentMethod.BOLETO:
        context.update(_boleto_fields(payin), boleto_page_url=reverse("pay:boleto", args=[token]),
                       boleto_pdf_url=payin.boleto_pdf_url, pix_payload=payin.pix_payload,
                       qr_url=qrcode_image_url(payin) if payin.pix_payload else "")
    elif payin.payment_method == PaymentMethod.CREDIT_CARD:
        card = payin.card or {}
        context.update(
            card_brand=CARD_BRANDS.get(card.get("brand") or "", str(card.get("brand") or "").title()),
            card_last4=card.get("last4") or "",
            installments=card.get("installments") or 1,
        )
        if _card_form_shown(payin):
            context.update(_card_form_context(request, payin, token))
    return _render_page(request, "payments/pay.html", context)


def _card_form_shown(payin: Payin) -> bool:
    """A live card charge created without a token, still waiting: the payer pays it here, tokenizing the card in the
    browser with the rail's library (the number never reaches us)."""
    return (payin.livemode and payin.status == PayinStatus.PENDING and payin.rail_charge_id is None
            and rails.for_mode(True).card_tokens_only)


def _card_form_context(request: HttpRequest, payin: Payin, token: str, *, error: str = "",
                       form: dict | None = None) -> dict:
    address = {**((payin.customer or {}).get("address") or {}), **(form or {})}
    return {
        "card_form": True,
        "card_error": error,
        "payee_code": settings.EFI_PAYEE_CODE,
        "efi_environment": "sandbox" if "-h." in settings.EFI_CHARGES_BASE_URL else "production",
        "tokenizer_script_url": settings.EFI_TOKENIZER_SCRIPT_URL,
        "installments_url": reverse("pay:installments", args=[token]),
        "pay_card_url": reverse("pay:card", args=[token]),
        "billing": {name: address.get(name) or "" for name in BILLING_FIELDS},
        "states": UF_CODES,
    }


BILLING_FIELDS = ("street", "number", "complement", "neighborhood", "zipCode", "city", "state")


@_public
def pay_installments(request: HttpRequest, token: str) -> JsonResponse:
    """The card form's installments: the rail's table for the charge's amount and the brand the browser found."""
    payin = _payin_for_token(token)
    brand = request.GET.get("brand", "")
    if payin.payment_method != PaymentMethod.CREDIT_CARD or brand not in INSTALLMENT_BRANDS:
        return JsonResponse({"data": []}, status=400)
    try:
        options = rails.for_mode(payin.livemode).installments(brand=brand, amount=payin.amount)
    except RailError:
        return JsonResponse({"data": []}, status=503)
    return JsonResponse({"data": [{**option, "label": _installment_label(option)} for option in options]})


def _installment_label(option: dict) -> str:
    value = brl(option["installmentValue"])
    if option["hasInterest"]:
        return translation.gettext("%(count)sx of %(value)s (with interest)") % {
            "count": option["installments"], "value": value}
    return translation.gettext("%(count)sx of %(value)s (no interest)") % {"count": option["installments"],
                                                                           "value": value}


@require_POST
def pay_card(request: HttpRequest, token: str) -> HttpResponse:
    """The card form, posted: Efí's payment_token (made in the browser), the installments and the billing address.
    Paid (or refused, or still being decided), the payer is sent back to the page, which shows where it stands."""
    language = payer_language(request.headers.get("Accept-Language", ""))
    with translation.override(language):
        response = _pay_card(request, token)
    response["Content-Language"] = language
    response["X-Robots-Tag"] = "noindex"
    if "Referrer-Policy" not in response:
        response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    return response


def _pay_card(request: HttpRequest, token: str) -> HttpResponse:
    payin = _payin_for_token(token)
    if not _card_form_shown(payin):
        return redirect("pay:page", token=token)
    form = {name: request.POST.get(name, "").strip() for name in BILLING_FIELDS}
    form["zipCode"] = "".join(char for char in form["zipCode"] if char.isdigit())
    form["state"] = form["state"].upper()
    payment_token = request.POST.get("payment_token", "")
    installments = request.POST.get("installments", "1")
    problem = ""
    if not RAIL_TOKEN.fullmatch(payment_token):
        problem = translation.gettext("Your card could not be encrypted. Check the card's details and try again.")
    elif not (installments.isdigit() and 1 <= int(installments) <= 12):
        problem = translation.gettext("Choose the number of installments.")
    elif any(not form[name] for name in BILLING_FIELDS if name != "complement") or len(form["zipCode"]) != 8 \
            or form["state"] not in UF_CODES:
        problem = translation.gettext("Fill in the billing address: street, number, neighborhood, ZIP code (8 "
                                      "digits), city and state.")
    if problem:
        return _card_form_again(request, payin, token, problem, form)
    try:
        rail_charges.live_card_pay(payin_id=payin.pk, payment_token=payment_token, installments=int(installments),
                                   billing_address=form)
    except InvalidState:
        pass  # paid, or being paid, from another tab: the page says which
    except RailUnavailable:
        return _card_form_again(request, payin, token, translation.gettext(
            "The payment network did not answer; nothing was charged. Try again in a moment."), form, status=503)
    return redirect("pay:page", token=token)


def _card_form_again(request: HttpRequest, payin: Payin, token: str, error: str, form: dict, *,
                     status: int = 400) -> HttpResponse:
    texts = _status_texts(payin)
    context = {
        "token": token, "method": payin.payment_method, "merchant_name": merchant_display_name(payin.merchant),
        "amount": payin.amount, "description": payin.description, "status": payin.status,
        "status_label": texts[payin.status][0], "status_note": texts[payin.status][1],
        "status_texts": {key: {"label": str(label), "note": str(note)} for key, (label, note) in texts.items()},
        "payable": True, "polling": False, "installments": 1,
        **_card_form_context(request, payin, token, error=error, form=form),
    }
    return _render_page(request, "payments/pay.html", context, status=status)


@_public
def pay_status(request: HttpRequest, token: str) -> JsonResponse:
    """What pay.js polls: the status as stored, and when it was paid."""
    payin = _payin_for_token(token)
    return JsonResponse({"status": payin.status, "paidAt": timestamp(payin.paid_at)})


@_public
@portuguese_always
def boleto_page(request: HttpRequest, token: str) -> HttpResponse:
    """The printable boleto, laid out like a bank's "ficha de compensação". Once the boleto can no longer be paid
    (paid, canceled, past its due date) the line and barcode are withheld so nobody pays it by mistake."""
    payin = _payin_for_token(token)
    if payin.payment_method != PaymentMethod.BOLETO:
        raise Http404("Not a boleto")
    now = timezone.now()
    payable = _payable(payin, now)
    shown_status = PayinStatus.EXPIRED if payin.status == PayinStatus.PENDING and not payable else payin.status
    label, note = STATUS_TEXT[shown_status]
    fields = _boleto_fields(payin)
    bank_code = fields["barcode"][:3]  # ours (BOLETO_BANK_CODE), or the registering bank's
    context = {
        **fields,
        "payable": payable,
        "status": shown_status,
        "status_label": label,
        "status_note": note,
        "bank_code": f"{bank_code}-{_bank_code_check_digit(bank_code)}",
        "merchant_name": merchant_display_name(payin.merchant),
        "amount": payin.amount,
        "description": payin.description,
        "payer": _boleto_payer(payin.customer or {}),
        "issued_at": payin.created_at,
        "pay_page_url": reverse("pay:page", args=[token]),
        # Digits only, from our own database and re-checked above: nothing in the SVG needs escaping.
        "barcode_svg": (mark_safe(itf_svg(fields["barcode"], height=50, label=translation.gettext("Barcode")))  # noqa: S308
                        if payable else ""),
    }
    return _render_page(request, "payments/boleto.html", context)


def _boleto_payer(customer: dict) -> dict:
    """The payer block of a boleto: name, document and postal address (never the e-mail or phone)."""
    address = customer.get("address") or {}
    street = ", ".join(part for part in (address.get("street", ""), address.get("number", "")) if part)
    if address.get("complement"):
        street = f"{street} - {address['complement']}"
    city = " / ".join(part for part in (address.get("city", ""), address.get("state", "")) if part)
    return {
        "name": customer.get("name", ""),
        "document": customer.get("document", ""),
        "street": street,
        "city": city,
        "zip_code": address.get("zipCode", ""),
    }


@_public
def qrcode_png(request: HttpRequest, payin_id: UUID) -> HttpResponse:
    """The Pix QR code as a PNG. The charge id is in the path (as the API's other charge URLs) and the page token in
    the query: both must match a Pix charge, the token compared in constant time."""
    token = request.GET.get("token", "")
    payin = (Payin.objects.filter(pk=payin_id, payment_method__in=(PaymentMethod.PIX, PaymentMethod.BOLETO))
             .only("public_token", "pix_payload").first())
    if payin is None or not payin.pix_payload or not hmac.compare_digest(payin.public_token.encode(), token.encode()):
        # Returned, not raised: ApiErrorMiddleware.process_exception would turn a raised Http404 into a 500 here.
        return HttpResponseNotFound()
    response = HttpResponse(qrcode_png_bytes(payin.pix_payload), content_type="image/png")
    response["Cache-Control"] = f"public, max-age={QR_CACHE_SECONDS}, immutable"
    return response


def qrcode_png_bytes(payload: str) -> bytes:
    qr = segno.make_qr(payload, error=QR_ERROR, boost_error=False)
    buffer = io.BytesIO()
    qr.save(buffer, kind="png", scale=QR_SCALE, border=QR_BORDER)
    return buffer.getvalue()
