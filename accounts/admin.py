"""Staff tools: the KYC review queue with approve / reject (reason required), withdrawing an approval (reason
required), suspension, the audit trail."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import path, reverse
from django.utils.html import format_html

from accounts import services
from accounts.forms import RejectForm, RevokeForm
from accounts.models import AccountEvent, KycStatus, KycSubmission, Merchant, User
from accounts.services import MERCHANT_SETTINGS
from core.admin import ReadOnlyAdmin, ReadOnlyInline, apply_to_each

# Changes to a merchant owner's login that go into the merchant's audit trail (taking over an account starts here).
AUDITED_USER_FIELDS = ["email", "is_active", "is_staff", "is_superuser"]


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = ["email", "is_staff", "is_active", "date_joined"]
    search_fields = ["email"]
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)

    def save_model(self, request: HttpRequest, obj: User, form, change: bool) -> None:
        changed = [f for f in AUDITED_USER_FIELDS if change and f in form.changed_data]
        owned = list(Merchant.objects.filter(owner=obj).order_by("created_at")) if changed else []
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            diff = {f: {"from": form.initial.get(f), "to": form.cleaned_data.get(f)} for f in changed}
            for merchant in owned:  # each merchant the user owns (a person may own several)
                services.audit_record(
                    merchant=merchant, actor=request.user, action=AccountEvent.Action.SETTINGS_CHANGED,
                    details={"changes": diff},
                    reason="; ".join(f"owner {f}: {c['from']} → {c['to']}" for f, c in diff.items()))

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        response = super().user_change_password(request, id, form_url)
        if request.method == "POST" and response.status_code == 302:  # Django's view redirects once it has saved
            for merchant in Merchant.objects.filter(owner_id=id).order_by("created_at"):
                services.audit_record(merchant=merchant, actor=request.user,
                                      action=AccountEvent.Action.PASSWORD_CHANGED, reason="by staff in the admin")
        return response


class KycSubmissionInline(admin.StackedInline):
    model = KycSubmission
    can_delete = False
    extra = 0
    fields = [f.name for f in KycSubmission._meta.fields if f.name not in ("id", "merchant", "document_file")] + [
        "document_link"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Document")
    def document_link(self, submission: KycSubmission) -> str:
        if not submission.document_file:
            return "-"
        url = reverse("admin:accounts_merchant_kyc_document", args=[submission.merchant_id])
        return format_html('<a href="{}">Download {}</a>', url, submission.document_file.name.rsplit("/", 1)[-1])


class AccountEventInline(ReadOnlyInline):
    model = AccountEvent
    fk_name = "merchant"
    readonly_fields = ["created_at", "action", "from_status", "to_status", "actor", "reason"]
    fields = readonly_fields
    verbose_name_plural = "Audit trail"


class ReviewQueueFilter(admin.SimpleListFilter):
    """The KYC review queue in one click: submitted and waiting, oldest submission first (see get_ordering)."""

    title = "review queue"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin) -> list[tuple[str, str]]:
        return [("pending", "Pending review")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "pending":
            return queryset.filter(kyc_status=KycStatus.SUBMITTED)
        return queryset


@admin.register(Merchant)
class MerchantAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "kyc_status", "kyc_submitted_at", "is_suspended", "created_at"]
    list_filter = [ReviewQueueFilter, "kyc_status", "is_suspended"]
    list_select_related = ["owner", "kyc"]
    search_fields = ["name", "owner__email", "kyc__document", "kyc__legal_name"]
    readonly_fields = ["id", "owner", "kyc_status", "kyc_rejection_reason", "is_suspended", "suspended_at",
                       "created_at"]
    fieldsets = [
        (None, {"fields": ["id", "name", "owner", "kyc_status", "kyc_rejection_reason", "is_suspended",
                           "suspended_at", "api_rate_limit", "created_at"]}),
        ("Fees and limits (empty: the default setting)", {"fields": [
            "pix_fee_bps", "card_fee_bps", "card_fee_fixed", "boleto_fee_fixed", "payout_fee_fixed",
            "charge_max_amount", "payout_max_amount", "payout_daily_max", "card_settlement_days"]}),
        ("Live boletos: late payment (empty: the default setting)", {"fields": [
            "boleto_fine_bps", "boleto_interest_bps"]}),
    ]
    inlines = [KycSubmissionInline, AccountEventInline]
    actions = ["approve_kyc", "reject_kyc", "revoke_kyc", "suspend", "reactivate"]
    ordering = ["-created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # merchants sign up; operators use `createmerchant`

    @admin.display(description="KYC submitted", ordering="kyc__submitted_at")
    def kyc_submitted_at(self, merchant: Merchant):
        submission = getattr(merchant, "kyc", None)
        return submission.submitted_at if submission else None

    def get_ordering(self, request: HttpRequest) -> list[str]:
        if request.GET.get(ReviewQueueFilter.parameter_name) == "pending":
            return ["kyc__submitted_at"]  # first come, first served
        return super().get_ordering(request)

    def save_model(self, request: HttpRequest, obj: Merchant, form, change: bool) -> None:
        """Through the service: only the changed fields are written, and each change is audited with its values."""
        changes = {field: form.cleaned_data[field] for field in form.changed_data if field in MERCHANT_SETTINGS}
        services.merchant_settings_change(merchant=obj, actor=request.user, changes=changes)

    def get_urls(self) -> list:
        return [
            path("<uuid:merchant_id>/kyc-document/", self.admin_site.admin_view(self.kyc_document),
                 name="accounts_merchant_kyc_document"),
            *super().get_urls(),
        ]

    def kyc_document(self, request: HttpRequest, merchant_id) -> FileResponse:
        """KYC documents are never public: staff download them through here, with the admin's permission check."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        submission = get_object_or_404(KycSubmission, merchant_id=merchant_id)
        if not submission.document_file:
            raise Http404
        return FileResponse(submission.document_file.open("rb"), as_attachment=True,
                            filename=submission.document_file.name.rsplit("/", 1)[-1])

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.action(description="Approve KYC of the selected merchants")
    def approve_kyc(self, request: HttpRequest, queryset: QuerySet) -> None:
        apply_to_each(request, queryset, lambda m: services.kyc_approve(merchant=m, actor=request.user),
                      done="KYC approved")

    @admin.action(description="Reject KYC of the selected merchants (asks for a reason)")
    def reject_kyc(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        form = RejectForm(request.POST if "reason" in request.POST else None)
        if form.is_bound and form.is_valid():
            reason = form.cleaned_data["reason"]
            apply_to_each(request, queryset,
                          lambda m: services.kyc_reject(merchant=m, actor=request.user, reason=reason),
                          done="KYC rejected")
            return None
        return render(request, "admin/accounts/merchant/reject.html", {
            **self.admin_site.each_context(request), "title": "Reject KYC", "form": form, "merchants": queryset,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME, "opts": self.model._meta,
        })

    @admin.action(description="Withdraw the KYC approval of the selected merchants (asks for a reason)")
    def revoke_kyc(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        form = RevokeForm(request.POST if "reason" in request.POST else None)
        if form.is_bound and form.is_valid():
            reason, review_again = form.cleaned_data["reason"], form.cleaned_data["outcome"] == "review"
            apply_to_each(request, queryset,
                          lambda m: services.kyc_revoke(merchant=m, actor=request.user, reason=reason,
                                                        review_again=review_again),
                          done="KYC approval withdrawn")
            return None
        return render(request, "admin/accounts/merchant/revoke.html", {
            **self.admin_site.each_context(request), "title": "Withdraw KYC approval", "form": form,
            "merchants": queryset, "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME, "opts": self.model._meta,
        })

    @admin.action(description="Suspend the selected merchants")
    def suspend(self, request: HttpRequest, queryset: QuerySet) -> None:
        apply_to_each(request, queryset, lambda m: services.merchant_suspend(merchant=m, actor=request.user),
                      done="Suspended")

    @admin.action(description="Reactivate the selected merchants")
    def reactivate(self, request: HttpRequest, queryset: QuerySet) -> None:
        apply_to_each(request, queryset, lambda m: services.merchant_reactivate(merchant=m, actor=request.user),
                      done="Reactivated")


@admin.register(AccountEvent)
class AccountEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "merchant", "action", "from_status", "to_status", "actor", "reason"]
    list_filter = ["action"]
    search_fields = ["merchant__name", "actor__email"]
