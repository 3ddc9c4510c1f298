"""The events API (SPEC §6)."""

from django.urls import path

from webhooks.apis import EventDetailApi, EventListApi

urlpatterns = [
    path("events", EventListApi.as_view(), name="events"),
    path("events/<str:event_id>", EventDetailApi.as_view(), name="event"),
]
