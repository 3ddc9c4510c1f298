"""Calendar days as Brazilian merchants and payers count them: America/Sao_Paulo, whatever the server's time zone.

Boleto due dates, Pix daily limits, the dashboard's date filters and charts all count days here."""

from __future__ import annotations

from datetime import date, datetime, time
from zoneinfo import ZoneInfo

from django.utils import timezone

SAO_PAULO = ZoneInfo("America/Sao_Paulo")


def sao_paulo_date(moment: datetime) -> date:
    """The Sao Paulo calendar day of an aware instant."""
    return timezone.localtime(moment, timezone=SAO_PAULO).date()


def sao_paulo_today() -> date:
    return sao_paulo_date(timezone.now())


def sao_paulo_midnight(day: date) -> datetime:
    """The first instant of a Sao Paulo calendar day, as an aware datetime."""
    return datetime.combine(day, time.min, tzinfo=SAO_PAULO)
