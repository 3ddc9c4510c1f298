"""The statement page and its CSV export (safe against spreadsheet formula injection)."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from accounts.views import merchant_required
from config.api import timestamp
from config.dates import sao_paulo_today
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
    LineType.PAYIN: "Charge", LineType.PAYIN_FEE: "Charge fee", LineType.REFUND: "Refund",
    LineType.PAYOUT: "Payout", LineType.PAYOUT_FEE: "Payout fee", LineType.PAYOUT_REVERSAL: "Payout reversal",
    LineType.CHARGEBACK: "Chargeback", LineType.SETTLEMENT: "Card settlement", LineType.ADJUSTMENT: "Adjustment",
}


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
              "payin_id": _statement_payin(line, charge_of_refund)} for line in page["rows"]]
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


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(text: str) -> str:
    """A text cell a spreadsheet will not run as a formula (CSV injection): a leading = + - @ (or tab, CR) gets a
    single quote before it. Numbers are written as numbers and need no guard."""
    return f"'{text}" if text.startswith(_FORMULA_START) else text


class _Echo:
    """csv.writer writes each row here and gets the row's text back, to yield it."""

    def write(self, value: str) -> str:
        return value


@merchant_required
def statement_csv(request: HttpRequest) -> HttpResponse:
    """Every line of the statement (optionally of a day range), oldest first, streamed in chunks: 100,000 lines never
    sit in memory together."""
    form = RangeForm(request.GET)
    rows = (_statement_rows(request, form).order_by("created_at", "id")
            .values_list("id", "created_at", "line_type", "account__kind", "amount", "balance_after",
                         "transaction__object_type", "transaction__object_id", "transaction__reference_id",
                         "transaction__description"))
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(CSV_HEADER)
        for (pk, created_at, line_type, kind, amount, balance_after, object_type, object_id, reference_id,
             description) in rows.iterator(chunk_size=CSV_CHUNK):
            yield writer.writerow([pk, timestamp(created_at), csv_safe(line_type), csv_safe(kind), amount,
                                   balance_after, csv_safe(object_type), csv_safe(object_id),
                                   csv_safe(reference_id), csv_safe(description)])

    mode = "live" if request.livemode else "test"
    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="statement-{mode}-{sao_paulo_today():%Y-%m-%d}.csv"'
    response["Cache-Control"] = "private, no-store"
    return response
