"""The rails' public notification routes, outside the API and the dashboard."""

from django.urls import path

from payments.inbound.views import efi_charges_notify, efi_webhook

urlpatterns = [
    path("rails/efi/webhook/<str:secret>", efi_webhook, name="efi-webhook"),
    path("rails/efi/webhook/<str:secret>/pix", efi_webhook, name="efi-webhook-pix"),
    path("rails/efi/charges/notify/<str:secret>", efi_charges_notify, name="efi-charges-notify"),
]
