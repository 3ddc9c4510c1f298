from django import forms

from webhooks.models import EventType


class EndpointForm(forms.Form):
    url = forms.CharField(label="URL", max_length=2048,
                          help_text="The https:// address that receives the events (plain http:// and addresses on "
                                    "your own network are accepted only when the service runs locally).")
    description = forms.CharField(max_length=200, required=False)
    event_types = forms.MultipleChoiceField(
        choices=[(t, t) for t in EventType.values if t != EventType.WEBHOOK_TEST], required=False,
        widget=forms.CheckboxSelectMultiple, help_text="Leave all unticked to receive every event type.")
    enabled = forms.BooleanField(required=False, initial=True)
