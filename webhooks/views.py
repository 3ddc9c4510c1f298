"""Dashboard pages of webhooks: the signing secret, endpoints, deliveries with their attempts, resend, test events."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext

from accounts import roles
from accounts.access import merchant_required, permission_required, second_factor_required
from accounts.audit import audit_record
from accounts.models import AccountEvent
from accounts.views import refuse_if_suspended
from core import pages
from core.errors import DomainError
from core.http import post_only
from webhooks import selectors, services
from webhooks.forms import EndpointForm
from webhooks.models import Delivery, WebhookEndpoint

INTEGRATIONS_PAGE = "integrations"  # the integrations app's page (core.pages), where this app adds a section
INTEGRATIONS_SECTION = "webhooks/_integrations_section.html"


def integrations_section_context(request: HttpRequest, *, revealed_signing_secret: str | None = None,
                                 endpoint_form: EndpointForm | None = None, **state) -> dict:
    """The webhook part of the Integrations page: the signing secret (only in the answer to the POST that revealed
    or rotated it) and the endpoints of the current mode."""
    return {
        "endpoints": selectors.endpoint_list(merchant=request.merchant, livemode=request.livemode),
        "endpoint_form": endpoint_form or EndpointForm(),
        "revealed_secret": revealed_signing_secret,
    }


def _endpoint(request: HttpRequest, endpoint_id) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(merchant=request.merchant, livemode=request.livemode,
                                              pk=endpoint_id).first()
    if endpoint is None:
        raise Http404
    return endpoint


@post_only("dashboard:integrations")
@permission_required(roles.INTEGRATIONS)
@second_factor_required
def signing_secret_reveal(request: HttpRequest) -> HttpResponse:
    # A POST, so the secret is never in a URL, a browser history or an access log; the page is not cached.
    secret = services.signing_secret_reveal(merchant=request.merchant, livemode=request.livemode)
    audit_record(request, merchant=request.merchant, action=AccountEvent.Action.SECRET_REVEALED,
                 obj_type="signing_secret", obj_id="live" if request.livemode else "test")
    return pages.page_render(request, INTEGRATIONS_PAGE, revealed_signing_secret=secret)


@post_only("dashboard:integrations")
@permission_required(roles.INTEGRATIONS)
@second_factor_required
def signing_secret_rotate(request: HttpRequest) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    secret = services.signing_secret_rotate(merchant=request.merchant, livemode=request.livemode)
    audit_record(request, merchant=request.merchant, action=AccountEvent.Action.SECRET_ROTATED,
                 obj_type="signing_secret", obj_id="live" if request.livemode else "test")
    messages.success(request, gettext("Signing secret rotated. For 24 hours every webhook is signed with both the "
                                      "new and the old secret, so update your receiver now."))
    return pages.page_render(request, INTEGRATIONS_PAGE, revealed_signing_secret=secret)


@post_only("dashboard:integrations")
@permission_required(roles.INTEGRATIONS)
def endpoint_create(request: HttpRequest) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    form = EndpointForm(request.POST)
    if form.is_valid():
        try:
            endpoint = services.endpoint_create(merchant=request.merchant, livemode=request.livemode,
                                                url=form.cleaned_data["url"],
                                                event_types=form.cleaned_data["event_types"],
                                                description=form.cleaned_data["description"])
        except DomainError as error:
            form.add_error("url", error.message)
        else:
            audit_record(request, merchant=request.merchant, action=AccountEvent.Action.ENDPOINT_ADDED,
                         obj_type="webhook_endpoint", obj_id=str(endpoint.pk),
                         after={"url": endpoint.url, "event_types": endpoint.event_types})
            messages.success(request, gettext("Endpoint added. Send it a test event to check your receiver."))
            return redirect("dashboard:integrations")
    return pages.page_render(request, INTEGRATIONS_PAGE, endpoint_form=form, status=400)


@permission_required(roles.INTEGRATIONS)
def endpoint_edit(request: HttpRequest, endpoint_id) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    initial = {"url": endpoint.url, "description": endpoint.description, "event_types": endpoint.event_types,
               "enabled": endpoint.enabled}
    form = EndpointForm(request.POST or None, initial=initial)
    if request.method == "POST":
        if refusal := refuse_if_suspended(request):
            return refusal
        if form.is_valid():
            try:
                services.endpoint_update(endpoint=endpoint, **form.cleaned_data)
            except DomainError as error:
                form.add_error("url", error.message)
            else:
                after = {key: form.cleaned_data[key] for key in initial}
                audit_record(request, merchant=request.merchant, action=AccountEvent.Action.ENDPOINT_CHANGED,
                             obj_type="webhook_endpoint", obj_id=str(endpoint.pk), before=initial, after=after)
                messages.success(request, gettext("Endpoint saved."))
                return redirect("dashboard:integrations")
    return render(request, "webhooks/endpoint_edit.html", {"endpoint": endpoint, "form": form})


@post_only("dashboard:endpoint_edit", keep=["endpoint_id"])
@permission_required(roles.INTEGRATIONS)
def endpoint_send_test(request: HttpRequest, endpoint_id) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    event = services.event_send_test(endpoint=_endpoint(request, endpoint_id))
    messages.success(request, gettext("Test event %(id)s queued. Its delivery is listed below within seconds.")
                     % {"id": event.id})
    return redirect("dashboard:deliveries")


@merchant_required
def deliveries(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status") or None
    if status not in (None, *Delivery.Status.values):
        status = None
    rows = selectors.delivery_list(merchant=request.merchant, livemode=request.livemode, status=status)
    page = Paginator(rows.order_by("-created_at", "-id"), 50).get_page(request.GET.get("page"))
    return render(request, "webhooks/deliveries.html", {"page": page, "status": status,
                                                         "statuses": Delivery.Status.values})


@merchant_required
def delivery_detail(request: HttpRequest, delivery_id) -> HttpResponse:
    delivery = selectors.delivery_get(merchant=request.merchant, livemode=request.livemode, delivery_id=delivery_id)
    if delivery is None:
        raise Http404
    return render(request, "webhooks/delivery_detail.html", {
        "delivery": delivery, "attempts": delivery.attempt_log.all()[:100],
        "payload": json.dumps(delivery.event.payload, indent=2, ensure_ascii=False),
    })


@post_only("dashboard:delivery_detail", keep=["delivery_id"])
@permission_required(roles.INTEGRATIONS)
def delivery_resend(request: HttpRequest, delivery_id) -> HttpResponse:
    if refusal := refuse_if_suspended(request):
        return refusal
    delivery = selectors.delivery_get(merchant=request.merchant, livemode=request.livemode, delivery_id=delivery_id)
    if delivery is None:
        raise Http404
    try:
        services.delivery_resend(delivery=delivery)
    except DomainError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, gettext("Delivery queued again."))
    return redirect("dashboard:delivery_detail", delivery_id=delivery.pk)
