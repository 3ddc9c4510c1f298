"""Payer-facing formatting for templates: money in reais and Sao Paulo dates (SPEC §1: calendar dates are in
America/Sao_Paulo). Used by the public pages and the dashboard: `{% load payments_format %}`.

Filters fail quietly, as Django's own do: a value they cannot format becomes "" rather than a 500 on a page a payer
is looking at. Money must be integer cents; a float or Decimal is refused, not rounded.
"""

from __future__ import annotations

from datetime import date, datetime

from django import template
from django.utils.html import format_html
from django.utils.translation import gettext

from core.dates import SAO_PAULO

register = template.Library()



@register.filter
def brl(cents: object) -> str:
    """Integer cents as reais, Brazilian style: 123456 → 'R$ 1.234,56', -100 → '-R$ 1,00', 0 → 'R$ 0,00'."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        return ""
    sign = "-" if cents < 0 else ""
    reais, centavos = divmod(abs(cents), 100)
    return f"{sign}R$ {reais:,}".replace(",", ".") + f",{centavos:02d}"


@register.filter
def sp_datetime(value: object) -> str:
    """'20/11/2026 18:39' in Sao Paulo time. Naive datetimes are taken as already local, as Django's `date` does."""
    local = _to_sao_paulo(value)
    return local.strftime("%d/%m/%Y %H:%M") if isinstance(local, datetime) else ""


@register.filter
def sp_zoned(value: object, precision: str = "minutes") -> str:
    """A date-time that says its zone, for the dashboard, in the active language: '20/11/2026 18:39 (Brasília time)',
    '20/11/2026 18:39 (horário de Brasília)'; `sp_zoned:"seconds"` adds the seconds. The one filter both languages
    use (sp_datetime stays bare: the payer's pages put it inside their own sentences, which name the zone)."""
    local = _to_sao_paulo(value)
    if not isinstance(local, datetime):
        return ""
    when = local.strftime("%d/%m/%Y %H:%M:%S" if precision == "seconds" else "%d/%m/%Y %H:%M")
    # In a <time>, the moment and the zone each kept on one line (app.css): a narrow column breaks between them only,
    # never inside "(horário de Brasília)" (issue 37: four lines on the charge page).
    before, _, after = gettext("%(when)s (Brasília time)").partition("%(when)s")
    return format_html('<time class="zoned" datetime="{}">{}<span class="when">{}</span> <span class="zone">{}</span>'
                       "</time>", local.isoformat(), before, when, after.strip())


@register.filter
def sp_time(value: object) -> str:
    """'18:39' in Sao Paulo time."""
    local = _to_sao_paulo(value)
    return local.strftime("%H:%M") if isinstance(local, datetime) else ""


@register.filter
def sp_date(value: object) -> str:
    """'20/11/2026'. A date is printed as it is (a boleto's due date is already a Sao Paulo calendar date); a
    datetime is first moved to Sao Paulo, so 2026-11-21T01:00Z is still 20/11/2026 there."""
    if isinstance(value, datetime):
        value = _to_sao_paulo(value)
    if isinstance(value, date):
        return value.strftime("%d/%m/%Y")
    return ""


@register.filter
def br_document(value: object) -> str:
    """CPF '12345678909' → '123.456.789-09'; CNPJ (numeric or alphanumeric) '12ABC34501DE35' → '12.ABC.345/01DE-35'.
    Anything else is returned unchanged: showing what was stored beats hiding it."""
    if not isinstance(value, str):
        return ""
    if len(value) == 11 and value.isdigit():
        return f"{value[:3]}.{value[3:6]}.{value[6:9]}-{value[9:]}"
    if len(value) == 14 and value.isascii() and value.isalnum():
        return f"{value[:2]}.{value[2:5]}.{value[5:8]}/{value[8:12]}-{value[12:]}"
    return value


@register.filter
def cep(value: object) -> str:
    """Postal code '01310100' → '01310-100'; anything else unchanged."""
    if not isinstance(value, str):
        return ""
    return f"{value[:5]}-{value[5:]}" if len(value) == 8 and value.isdigit() else value


def _to_sao_paulo(value: object) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.astimezone(SAO_PAULO) if value.tzinfo is not None else value
