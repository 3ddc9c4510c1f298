"""Form pieces the dashboard's apps share."""

from __future__ import annotations

from datetime import datetime

from django import forms
from django.utils.translation import gettext_lazy as _

DAY_FORMAT = "%d/%m/%Y"


class DayInput(forms.DateInput):
    """A calendar day typed as the pages print it, 31/12/2026. Not `type="date"`: Chromium draws that input in the
    browser's locale (12/31/2026 in an American one), so it disagreed with every date the pages print."""

    def __init__(self) -> None:
        super().__init__(format=DAY_FORMAT, attrs={
            "inputmode": "numeric", "autocomplete": "off", "size": 10, "maxlength": 10,
            "placeholder": _("dd/mm/yyyy")})

    def format_value(self, value):
        """A day sent as yyyy-mm-dd (an older link) is shown back as dd/mm/yyyy, like every other date."""
        if isinstance(value, str):
            try:
                value = datetime.strptime(value.strip(), "%Y-%m-%d").date()
            except ValueError:
                return value
        return super().format_value(value)


def day_field(label: str) -> forms.DateField:
    """An optional day filter: dd/mm/yyyy, and yyyy-mm-dd too (the links and bookmarks of the date inputs before)."""
    return forms.DateField(required=False, label=label, widget=DayInput(), input_formats=[DAY_FORMAT, "%Y-%m-%d"],
                           error_messages={"invalid": _("Enter a date like 31/12/2026.")})
