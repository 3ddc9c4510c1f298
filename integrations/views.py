"""The Integrations page: API key pairs (the secret shown once), revocation. The page is composed with core.pages:
the webhooks app adds its signing secret and endpoints as a section."""

from __future__ import annotations

import secrets

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache

from accounts import roles
from accounts.access import merchant_required, permission_required, second_factor_refusal
from accounts.audit import audit_record
from accounts.models import AccountEvent
from accounts.views import refuse_if_suspended
from core import pages
from core.errors import DomainError
from core.http import post_only
from integrations import services
from integrations.models import ApiKey

FORM_NONCE = "apikey_form_nonce"


class ApiKeyForm(forms.Form):
    label = forms.CharField(label=_("Label"), max_length=100, required=False,
                            help_text=_("Where the keys will live, e.g. 'shop server'."))
    mode = forms.ChoiceField(label=_("Mode"), choices=[("test", _("Test (sandbox)")), ("live", _("Live"))])
    nonce = forms.CharField(widget=forms.HiddenInput)


def _new_form(request: HttpRequest, **initial) -> ApiKeyForm:
    # A one-time nonce per rendered form: the page showing a new secret is the answer to a POST, and reloading it
    # must neither create a second key nor show the secret again.
    request.session[FORM_NONCE] = secrets.token_urlsafe(16)
    return ApiKeyForm(initial={"nonce": request.session[FORM_NONCE], **initial})


PAGE = "integrations"  # core.pages: the webhooks app adds its section to this page


def page_context(request: HttpRequest, *, new_key: ApiKey | None = None, new_secret: str | None = None,
                 **state) -> dict:
    """The Integrations page's own part: the key pairs, and the secret of a pair just created. Secrets appear only in
    the answer to the POST that created or revealed them, never stored, never cached."""
    return {
        "form": _new_form(request, mode="live" if request.livemode else "test"),
        "api_keys": ApiKey.objects.filter(merchant=request.merchant).order_by("-created_at"),
        "new_key": new_key, "new_secret": new_secret,
    }


@never_cache
@merchant_required
def integrations(request: HttpRequest) -> HttpResponse:
    return pages.page_render(request, PAGE)


@never_cache
@post_only("dashboard:integrations")
@permission_required(roles.INTEGRATIONS)
def apikey_create_view(request: HttpRequest) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    if request.POST.get("mode") == "live" and (refusal := second_factor_refusal(request)):
        return refusal  # live keys move real money: a second factor first
    form = ApiKeyForm(request.POST)
    expected = request.session.pop(FORM_NONCE, None)
    if not form.is_valid() or not expected or not secrets.compare_digest(form.cleaned_data["nonce"], expected):
        messages.warning(request, gettext("That form was already used. Your keys are listed below; create another if "
                                          "needed."))
        return redirect("dashboard:integrations")
    try:
        api_key, secret_key = services.apikey_create(merchant=request.merchant,
                                                     livemode=form.cleaned_data["mode"] == "live",
                                                     label=form.cleaned_data["label"])
    except DomainError as error:
        messages.error(request, error.message)
        return redirect("dashboard:integrations")
    audit_record(request, merchant=request.merchant, action=AccountEvent.Action.KEY_CREATED, obj_type="api_key",
                 obj_id=api_key.public_key, after={"label": api_key.label, "livemode": api_key.livemode})
    # Rendered straight from the POST, never stored: after this response the secret exists only with the merchant.
    return pages.page_render(request, PAGE, new_key=api_key, new_secret=secret_key)


@post_only("dashboard:integrations")
@permission_required(roles.INTEGRATIONS)
def apikey_revoke_view(request: HttpRequest, key_id) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    api_key = get_object_or_404(ApiKey, pk=key_id, merchant=request.merchant)
    try:
        services.apikey_revoke(api_key=api_key)
    except DomainError as error:
        messages.error(request, error.message)
    else:
        audit_record(request, merchant=request.merchant, action=AccountEvent.Action.KEY_REVOKED, obj_type="api_key",
                     obj_id=api_key.public_key)
        messages.success(request, gettext("Key pair %(key)s revoked: requests with it now get 401.")
                         % {"key": api_key.public_key})
    return redirect("dashboard:integrations")
