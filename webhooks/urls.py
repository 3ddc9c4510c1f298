"""Dashboard pages of webhooks (signing secret, endpoints, deliveries), in the "dashboard" namespace."""

from django.urls import path

from webhooks import views

urlpatterns = [
    path("webhooks/secret/reveal/", views.signing_secret_reveal, name="signing_secret_reveal"),
    path("webhooks/secret/rotate/", views.signing_secret_rotate, name="signing_secret_rotate"),
    path("webhooks/endpoints/", views.endpoint_create, name="endpoint_create"),
    path("webhooks/endpoints/<uuid:endpoint_id>/", views.endpoint_edit, name="endpoint_edit"),
    path("webhooks/endpoints/<uuid:endpoint_id>/test/", views.endpoint_send_test, name="endpoint_test"),
    path("webhooks/deliveries/", views.deliveries, name="deliveries"),
    path("webhooks/deliveries/<uuid:delivery_id>/", views.delivery_detail, name="delivery_detail"),
    path("webhooks/deliveries/<uuid:delivery_id>/resend/", views.delivery_resend, name="delivery_resend"),
]
