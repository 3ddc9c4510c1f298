"""Public pages of a charge (SPEC §3.5): no login, behind the charge's unguessable token. Included at the root with
the namespace "pay"; the views are in payments/hosted/views.py."""

from django.urls import path

from payments.hosted import views as hosted

urlpatterns = [
    path("pay/<str:token>", hosted.pay_page, name="page"),
    path("pay/<str:token>/status", hosted.pay_status, name="status"),
    path("pay/<str:token>/boleto", hosted.boleto_page, name="boleto"),
    path("pay/<str:token>/installments", hosted.pay_installments, name="installments"),
    path("pay/<str:token>/card", hosted.pay_card, name="card"),
    # Under the API's paths (its 404 is the API's JSON error body), beside the other /payin/{id} URLs.
    path("payin/<uuid:payin_id>/qrcode.png", hosted.qrcode_png, name="qrcode"),
]
