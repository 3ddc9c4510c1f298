"""Public pages of a charge (SPEC §3.5): no login, behind the charge's unguessable token. Included at the root with
the namespace "pay"; the views are in payments/pages.py."""

from django.urls import path

from payments import pages

urlpatterns = [
    path("pay/<str:token>", pages.pay_page, name="page"),
    path("pay/<str:token>/status", pages.pay_status, name="status"),
    path("pay/<str:token>/boleto", pages.boleto_page, name="boleto"),
    # Under the API's paths (its 404 is the API's JSON error body), beside the other /payin/{id} URLs.
    path("payin/<uuid:payin_id>/qrcode.png", pages.qrcode_png, name="qrcode"),
]
