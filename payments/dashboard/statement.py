"""The statement page and its CSV export (safe against spreadsheet formula injection)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.access import merchant_required
from core.api import timestamp
from core.csvexport import csv_response
from core.dates import sao_paulo_today
from payments.dashboard import labels
from payments.dashboard.forms import RangeForm
from payments.dashboard.pages import keyset_page
from payments.ledger import selectors as ledger_selectors
from payments.ledger.selectors import balance_get
from payments.models import (
    LineType,
    Refund,
)

CSV_CHUNK = 2000


LINE_LABELS = {
    LineType.PAYIN: _("Charge"), LineType.PAYIN_FEE: _("Charge fee"), LineType.REFUND: _("Refund"),
    LineType.PAYOUT: _("Payout"), LineType.PAYOUT_FEE: _("Payout fee"), LineType.PAYOUT_REVERSAL: _("Payout reversal"),
    LineType.CHARGEBACK: _("Chargeback"), LineType.SETTLEMENT: _("Card settlement"),
    LineType.ADJUSTMENT: _("Adjustment"), LineType.DISPUTE: _("Dispute"),
    LineType.UNMATCHED_PAYMENT: _("Unmatched payment"), LineType.UNMATCHED_PAYMENT_FEE: _("Unmatched payment fee"),
}


# The ledger stores its movements' descriptions in English (the API and the CSV give them as stored); the page says
# them in the merchant's language. An adjustment's description is the staff's own words, shown as written.
FIXED_DESCRIPTIONS = {
    "Card settlement": _("Card settlement"), "Chargeback": _("Chargeback"),
    "Refund confirmed by the rail": _("Refund confirmed by the rail"),
    "Refund failed: money returned to the balance": _("Refund failed: money returned to the balance"),
    "Payout completed": _("Payout completed"),
    "Dispute won: the held amount is available again": _("Dispute won: the held amount is available again"),
    "Dispute lost: returned to the payer": _("Dispute lost: returned to the payer"),
    "Dispute accepted: returned to the payer": _("Dispute accepted: returned to the payer"),
    "Payout returned by the receiving bank": _("Payout returned by the receiving bank"),
    "Payment that matched no charge": _("Payment that matched no charge"),
    "Unmatched payment accepted": _("Unmatched payment accepted"),
    "Unmatched payment sent back to the payer": _("Unmatched payment sent back to the payer"),
    "Unmatched payment returned to the payer": _("Unmatched payment returned to the payer"),
    "Return to the payer failed: held again": _("Return to the payer failed: held again"),
}
_CHARGE = re.compile(r"(PIX|CREDIT_CARD|BOLETO) charge")
_REFUND = re.compile(r"Refund of charge (\S+)")
_PAYOUT = re.compile(r"Pix payout to (\w+) key")
_DISPUTE = re.compile(r"Dispute opened \((CHARGEBACK|MED)\)")


def description_text(object_type: str, description: str) -> str:
    if object_type == "adjustment":
        return description
    if description in FIXED_DESCRIPTIONS:
        return str(FIXED_DESCRIPTIONS[description])
    if match := _CHARGE.fullmatch(description):
        return gettext("%(method)s charge") % {"method": labels.PAYMENT_METHOD_CODE[match[1]]}
    if match := _REFUND.fullmatch(description):
        return gettext("Refund of charge %(id)s") % {"id": match[1]}
    if match := _DISPUTE.fullmatch(description):
        return gettext("Dispute opened (%(kind)s)") % {"kind": labels.DISPUTE_KIND[match[1]]}
    if match := _PAYOUT.fullmatch(description):
        return gettext("Pix payout to %(type)s key") % {"type": labels.PIX_KEY_TYPE.get(match[1], match[1])}
    return description


# --- Statement -------------------------------------------------------------------------------------------------------
def _statement_rows(request: HttpRequest, form: RangeForm) -> QuerySet:
    return form.apply(ledger_selectors.statement_lines(merchant=request.merchant, livemode=request.livemode))


@merchant_required
def statement(request: HttpRequest) -> HttpResponse:
    form = RangeForm(request.GET)
    page = keyset_page(request, _statement_rows(request, form))
    refunds = [line.transaction.object_id for line in page["rows"] if line.transaction.object_type == "refund"]
    charge_of_refund = {str(pk): payin_id for pk, payin_id in Refund.objects.filter(
        merchant=request.merchant, livemode=request.livemode, pk__in=refunds).values_list("pk", "payin_id")}
    lines = [{"entry": line, "label": LINE_LABELS.get(line.line_type, line.line_type),
              "payin_id": _statement_payin(line, charge_of_refund),
              "description": description_text(line.transaction.object_type, line.transaction.description),
              "object_label": labels.STATEMENT_OBJECT.get(line.transaction.object_type,
                                                          line.transaction.object_type.capitalize())}
             for line in page["rows"]]
    export = request.GET.copy()
    export.pop("cursor", None)
    return render(request, "payments/dashboard/statement.html", {
        **page, "lines": lines, "form": form, "export_query": export.urlencode(),
        "filtered": form.is_valid() and any(form.cleaned_data.values()),
        "balance": balance_get(merchant=request.merchant, livemode=request.livemode)})


def _statement_payin(line, charge_of_refund: dict):
    movement = line.transaction
    if movement.object_type == "payin":
        return movement.object_id
    if movement.object_type == "refund":
        return charge_of_refund.get(movement.object_id)
    return None


CSV_HEADER = ["id", "created_at", "type", "balance", "amount_cents", "balance_after_cents", "object_type",
              "object_id", "reference_id", "description"]


@merchant_required
def statement_csv(request: HttpRequest) -> HttpResponse:
    """Every line of the statement (optionally of a day range), oldest first, streamed in chunks: 100,000 lines never
    sit in memory together."""
    form = RangeForm(request.GET)
    rows = (_statement_rows(request, form).order_by("created_at", "id")
            .values_list("id", "created_at", "line_type", "account__kind", "amount", "balance_after",
                         "transaction__object_type", "transaction__object_id", "transaction__reference_id",
                         "transaction__description"))

    def lines() -> Iterator[tuple]:
        for (pk, created_at, line_type, kind, amount, balance_after, object_type, object_id, reference_id,
             description) in rows.iterator(chunk_size=CSV_CHUNK):
            yield (pk, timestamp(created_at), line_type, kind, amount, balance_after, object_type, object_id,
                   reference_id, description)

    mode = "live" if request.livemode else "test"
    return csv_response(header=CSV_HEADER, rows=lines(),
                        filename=f"statement-{mode}-{sao_paulo_today():%Y-%m-%d}.csv")
