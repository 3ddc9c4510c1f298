from django import forms
from django.utils.translation import gettext_lazy as _

from webhooks.models import EventType


class EndpointForm(forms.Form):
    url = forms.CharField(label=_("URL"), max_length=2048,
                          help_text=_("The https:// address that receives the events (plain http:// and addresses on "
                                      "your own network are accepted only when the service runs locally)."))
    description = forms.CharField(label=_("Description"), max_length=200, required=False)
    event_types = forms.MultipleChoiceField(
        label=_("Event types"),
        choices=[(t, t) for t in EventType.values if t != EventType.WEBHOOK_TEST], required=False,
        widget=forms.CheckboxSelectMultiple, help_text=_("Leave all unticked to receive every event type."))
    enabled = forms.BooleanField(label=_("Enabled"), required=False, initial=True)
