"""The dashboard's first page: balances, paid volume and its chart, the latest activity, and what to do next."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext

from accounts.access import merchant_required
from core.dates import sao_paulo_today
from payments.dashboard import labels
from payments.dashboard.charts import daily_volume, volume_chart_svg
from payments.ledger.selectors import balance_get
from payments.payins.selectors import payin_list
from payments.payouts.selectors import payout_list


@merchant_required
def overview(request: HttpRequest) -> HttpResponse:
    """Balances, today's and the month's paid volume, 30 days of it as a chart, the latest charges and payouts, and
    what to do next while there is nothing yet (a key, a first charge, KYC)."""
    merchant, livemode = request.merchant, request.livemode
    today = sao_paulo_today()
    month_start = today.replace(day=1)
    days = daily_volume(merchant=merchant, livemode=livemode, first=min(month_start, today - timedelta(days=29)),
                        last=today)
    chart_days = days[-30:]
    month = [day for day in days if day.day >= month_start]
    charges = list(payin_list(merchant=merchant, livemode=livemode).order_by("-created_at", "-id")
                   .defer("items", "metadata", "pix_payload")[:10])
    sent = list(payout_list(merchant=merchant, livemode=livemode).order_by("-created_at", "-id")[:10])
    activity = [{"kind": gettext("Charge"), "url": reverse("dashboard:charge_detail", args=[p.pk]), "obj": p,
                 "what": labels.PAYMENT_METHOD[p.payment_method], "status": p.status,
                 "label": labels.CHARGE_STATUS[p.status], "sign": ""} for p in charges]
    activity += [{"kind": gettext("Payout"), "url": reverse("dashboard:payout_detail", args=[p.pk]), "obj": p,
                  "what": gettext("Pix to %(type)s key") % {"type": labels.PIX_KEY_TYPE[p.pix_key_type]},
                  "status": p.status, "label": labels.PAYOUT_STATUS[p.status], "sign": "-"} for p in sent]
    activity.sort(key=lambda row: (row["obj"].created_at, str(row["obj"].pk)), reverse=True)
    return render(request, "payments/dashboard/overview.html", {
        "api_keys": merchant.api_keys.filter(revoked_at__isnull=True, livemode=livemode).count(),
        "balance": balance_get(merchant=merchant, livemode=livemode),
        "today": days[-1], "month_amount": sum(day.amount for day in month),
        "month_count": sum(day.count for day in month), "chart_days": chart_days,
        "chart": volume_chart_svg(chart_days, title=gettext("Paid volume per day, last 30 days")),
        "activity": activity[:10], "has_charges": bool(charges), "public_base_url": settings.PUBLIC_BASE_URL,
    })
