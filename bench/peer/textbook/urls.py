from django.urls import path
from pay import views

urlpatterns = [
    path("health", views.health),
    path("ping", views.ping),
    path("account", views.AccountView.as_view()),
    path("payin", views.PayinCreateView.as_view()),
    path("payout", views.PayoutCreateView.as_view()),
]
