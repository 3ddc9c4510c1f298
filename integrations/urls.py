"""The Integrations page (API keys), in the "dashboard" namespace."""

from django.urls import path

from integrations import views

urlpatterns = [
    path("integrations/", views.integrations, name="integrations"),
    path("integrations/keys/", views.apikey_create_view, name="apikey_create"),
    path("integrations/keys/<uuid:key_id>/revoke/", views.apikey_revoke_view, name="apikey_revoke"),
]
