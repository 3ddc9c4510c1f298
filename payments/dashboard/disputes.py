"""Dashboard pages of disputes (issue 14): the list, and a case's page with its deadline, the evidence form, accept,
and the sandbox's decision. Reads need a membership; the answers move money and need the MONEY permission."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts import roles
from accounts.access import merchant_required, permission_required
from accounts.audit import audit_record
from accounts.models import AccountEvent
from core.errors import DomainError, NotFound
from core.http import post_only
from payments.dashboard import labels
from payments.dashboard.pages import keyset_page, refuse_write, sandbox_action, timeline
from payments.disputes import selectors as dispute_selectors
from payments.disputes import services as disputes
from payments.disputes.apis import EVIDENCE_MAX_LENGTH
from payments.disputes.sandbox import dispute_simulate
from payments.models import Dispute, DisputeStatus

DISPUTE_SANDBOX = {"win": _("Decision simulated: the dispute is won and the amount is available again."),
                   "lose": _("Decision simulated: the dispute is lost and the amount went back to the payer.")}


class DisputeFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, label=_("Status"),
                               choices=[("", _("Any status")), *labels.DISPUTE_STATUS.items()])
    kind = forms.ChoiceField(required=False, label=_("Kind"),
                             choices=[("", _("Any kind")), *labels.DISPUTE_KIND.items()])


class EvidenceForm(forms.Form):
    text = forms.CharField(label=_("Your evidence"), max_length=EVIDENCE_MAX_LENGTH, widget=forms.Textarea,
                           help_text=_("What was sold, when it was delivered, how the payer agreed. Sent once."))


def _dispute_or_404(request: HttpRequest, dispute_id) -> Dispute:
    try:
        return dispute_selectors.dispute_get(merchant=request.merchant, livemode=request.livemode,
                                             dispute_id=dispute_id)
    except NotFound as exc:
        raise Http404("No such dispute") from exc


@merchant_required
def dispute_list(request: HttpRequest) -> HttpResponse:
    form = DisputeFilterForm(request.GET)
    form.is_valid()
    data = form.cleaned_data
    found = dispute_selectors.dispute_list(merchant=request.merchant, livemode=request.livemode,
                                           status=data.get("status") or None, kind=data.get("kind") or None)
    page = keyset_page(request, found.select_related("payin"))
    return render(request, "payments/dashboard/disputes.html", {
        "form": form, "filtered": any(data.get(name) for name in form.fields), **page})


def _dispute_page(request: HttpRequest, dispute: Dispute, *, evidence_form: EvidenceForm | None = None,
                  status: int = 200) -> HttpResponse:
    is_open = dispute.status == DisputeStatus.OPEN and not dispute.rail_answer_accept  # accepted: the bank closes it
    can_answer = is_open and dispute.evidence_due_by > timezone.now()
    sandbox_actions = []
    if not request.livemode and dispute.status in (DisputeStatus.OPEN, DisputeStatus.UNDER_REVIEW):
        sandbox_actions = [("win", gettext("Simulate won")), ("lose", gettext("Simulate lost"))]
    return render(request, "payments/dashboard/dispute_detail.html", {
        "dispute": dispute, "payin": dispute.payin, "can_answer": can_answer, "can_accept": is_open,
        "evidence_form": (evidence_form or EvidenceForm()) if can_answer else None,
        "sandbox_actions": sandbox_actions, "events": timeline(request, [str(dispute.pk)]),
        "object_id": str(dispute.pk)}, status=status)


@merchant_required
def dispute_detail(request: HttpRequest, dispute_id) -> HttpResponse:
    return _dispute_page(request, _dispute_or_404(request, dispute_id))


@post_only("dashboard:dispute_detail", keep=["dispute_id"])
@permission_required(roles.MONEY)
def dispute_evidence(request: HttpRequest, dispute_id) -> HttpResponse:
    if refusal := refuse_write(request):
        return refusal
    dispute = _dispute_or_404(request, dispute_id)
    form = EvidenceForm(request.POST)
    if not form.is_valid():
        return _dispute_page(request, dispute, evidence_form=form, status=400)
    try:
        disputes.dispute_evidence_submit(merchant=request.merchant, livemode=request.livemode, dispute_id=dispute.pk,
                                         text=form.cleaned_data["text"])
    except DomainError as error:
        messages.error(request, error.message)
    else:
        audit_record(request, merchant=request.merchant, action=AccountEvent.Action.DISPUTE_EVIDENCE_SENT,
                     obj_type="dispute", obj_id=str(dispute.pk), before={"status": dispute.status},
                     after={"status": DisputeStatus.UNDER_REVIEW})
        messages.success(request, gettext("Evidence sent. The dispute is under review."))
    return redirect("dashboard:dispute_detail", dispute_id=dispute.pk)


@post_only("dashboard:dispute_detail", keep=["dispute_id"])
@permission_required(roles.MONEY)
def dispute_accept(request: HttpRequest, dispute_id) -> HttpResponse:
    if refusal := refuse_write(request):
        return refusal
    dispute = _dispute_or_404(request, dispute_id)
    try:
        disputes.dispute_accept(merchant=request.merchant, livemode=request.livemode, dispute_id=dispute.pk)
    except DomainError as error:
        messages.error(request, error.message)
    else:
        audit_record(request, merchant=request.merchant, action=AccountEvent.Action.DISPUTE_ACCEPTED,
                     obj_type="dispute", obj_id=str(dispute.pk), before={"status": dispute.status},
                     after={"status": DisputeStatus.ACCEPTED})
        messages.success(request, gettext("Dispute accepted. The amount went back to the payer."))
    return redirect("dashboard:dispute_detail", dispute_id=dispute.pk)


@post_only("dashboard:dispute_detail", keep=["dispute_id"])
@permission_required(roles.MONEY)
def dispute_simulate_view(request: HttpRequest, dispute_id) -> HttpResponse:
    if refusal := refuse_write(request):
        return refusal
    dispute = _dispute_or_404(request, dispute_id)
    return sandbox_action(request, redirect("dashboard:dispute_detail", dispute_id=dispute.pk), DISPUTE_SANDBOX,
                          lambda action: dispute_simulate(merchant=request.merchant, dispute_id=dispute.pk,
                                                          action=action))
