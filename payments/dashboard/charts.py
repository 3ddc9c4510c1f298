"""The overview's daily volume: one grouped query, drawn as SVG on the server (no JavaScript, no CDN, no library).

Volume is what payers paid: the gross amount of every charge on the Sao Paulo day it was paid. It is read from the
ledger: each paid charge is exactly one `payin` credit (its whole amount) to the merchant's `available` or `pending`
account, written in the same transaction that sets `paid_at`, and the statement's index (account, created_at) serves
a 31-day range at any table size, where charges have no index on `paid_at`. Refunds and chargebacks later do not
lower the day's volume, as a payment provider's "gross volume" does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, ngettext

from accounts.models import Merchant
from core.dates import sao_paulo_midnight
from payments.models import AccountKind, LedgerAccount, LedgerEntry, LineType
from payments.templatetags.payments_format import SAO_PAULO, brl, sp_date


@dataclass(frozen=True)
class DayVolume:
    day: date
    amount: int  # cents
    count: int  # charges paid that day




def daily_volume(*, merchant: Merchant, livemode: bool, first: date, last: date) -> list[DayVolume]:
    """Paid volume of every Sao Paulo day from `first` to `last` (inclusive), oldest first, days without a payment
    included as zero. One query, grouped by the Sao Paulo date in the database (SQLite and PostgreSQL alike)."""
    accounts = LedgerAccount.objects.filter(merchant=merchant, livemode=livemode,
                                            kind__in=[AccountKind.AVAILABLE, AccountKind.PENDING])
    rows = (LedgerEntry.objects
            .filter(account__in=accounts, line_type=LineType.PAYIN, created_at__gte=sao_paulo_midnight(first),
                    created_at__lt=sao_paulo_midnight(last + timedelta(days=1)))
            .annotate(day=TruncDate("created_at", tzinfo=SAO_PAULO))
            .values("day").annotate(total=Sum("amount"), charges=Count("id")).order_by())
    found = {row["day"]: (row["total"], row["charges"]) for row in rows}
    days = []
    day = first
    while day <= last:
        total, charges = found.get(day, (0, 0))
        days.append(DayVolume(day=day, amount=total, count=charges))
        day += timedelta(days=1)
    return days


# --- Drawing ---------------------------------------------------------------------------------------------------------
WIDTH, HEIGHT = 480, 170
TOP, BOTTOM = 22, 20  # room for the peak label above and the date labels below
PLOT = HEIGHT - TOP - BOTTOM


def volume_chart_svg(days: list[DayVolume], *, title: str) -> SafeString:
    """A bar per day, with an accessible name and description summing it up; the page gives the same figures as a
    table for screen readers and for anyone who wants the exact numbers (`<rect>` titles are only hover tips)."""
    total = sum(d.amount for d in days)
    peak = max(days, key=lambda d: d.amount, default=None)
    if peak is not None and peak.amount > 0:
        summary = gettext("Total %(total)s in %(days)s days; highest day %(day)s with %(amount)s.") % {
            "total": brl(total), "days": len(days), "day": sp_date(peak.day), "amount": brl(peak.amount)}
    else:
        summary = gettext("No payments in the last %(days)s days.") % {"days": len(days)}
    slot = WIDTH / max(len(days), 1)
    bar_width = round(slot * 0.7, 2)
    parts = [
        f'<svg class="chart-svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}. '
        f'{escape(summary)}" xmlns="http://www.w3.org/2000/svg" focusable="false">',
        f"<title>{escape(title)}</title>",
        f"<desc>{escape(summary)}</desc>",
        f'<line class="chart-axis" x1="0" y1="{TOP + PLOT}" x2="{WIDTH}" y2="{TOP + PLOT}"/>',
    ]
    top_amount = peak.amount if peak is not None else 0
    for index, day in enumerate(days):
        height = round(day.amount / top_amount * PLOT, 2) if top_amount else 0
        if day.amount > 0:
            height = max(height, 2)  # a small day stays visible next to a big one
        x = round(index * slot + (slot - bar_width) / 2, 2)
        y = round(TOP + PLOT - height, 2)
        tip = ngettext("%(day)s: %(amount)s, %(count)s charge", "%(day)s: %(amount)s, %(count)s charges",
                       day.count) % {"day": sp_date(day.day), "amount": brl(day.amount), "count": day.count}
        parts.append(f'<rect class="bar" x="{x}" y="{y}" width="{bar_width}" height="{height}">'
                     f"<title>{escape(tip)}</title></rect>")
    if top_amount:
        parts.append(f'<text class="chart-label" x="0" y="14">{escape(brl(top_amount))}</text>')
    if days:
        parts.append(f'<text class="chart-label" x="0" y="{HEIGHT - 4}">{escape(days[0].day.strftime("%d/%m"))}'
                     "</text>")
        parts.append(f'<text class="chart-label" x="{WIDTH}" y="{HEIGHT - 4}" text-anchor="end">'
                     f'{escape(days[-1].day.strftime("%d/%m"))}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text above is escaped
