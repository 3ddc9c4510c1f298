"""The account's API endpoint (SPEC §2)."""

from django.urls import path

from accounts.apis import AccountApi

urlpatterns = [
    path("account", AccountApi.as_view(), name="account"),
]
