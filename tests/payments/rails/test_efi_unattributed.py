"""Issue 14, last gap: a live Pix to the platform's key that names no charge belongs to no merchant. It becomes one
unattributed payment (however often it is notified), which staff with the permission send back to the payer from the
admin: committed REFUND_PENDING, then a devolução at the bank under the payment's id, sent by a worker with no
transaction open, asked for again under the same key when the outcome is unknown, and never made twice. No merchant's
balance moves."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from accounts.models import AccountEvent
from payments.inbound import services as inbound
from payments.models import LedgerTransaction, RailNotification, UnattributedPayment, UnmatchedPayment
from payments.payins.notifications import notification_record
from payments.rails.base import Notification
from payments.unattributed import services as unattributed
from tests.factories import UserFactory
from tests.payments.rails.conftest import WEBHOOK_SECRET
from tests.payments.rails.efi_fake import DEVOLVIDO, EM_PROCESSAMENTO, NAO_REALIZADO

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/payments/unattributedpayment/"
SEND = "payments.unattributed.tasks.unattributed_refund_send"


@pytest.fixture
def queued(monkeypatch) -> list:
    """The tasks the service queues once its transaction commits (the worker's part is called by the test)."""
    sent: list = []
    monkeypatch.setattr("payments.unattributed.services.task_enqueue",
                        lambda name, **kwargs: sent.append((name, kwargs)))
    return sent


def staff_client(*codenames: str) -> tuple[Client, object]:
    user = UserFactory(is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="payments", codename__in=codenames))
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user)
    return client, user


@pytest.fixture
def refunder() -> tuple[Client, object]:
    return staff_client("view_unattributedpayment", "refund_unattributedpayment")


def received(efi, amount: int = 1234) -> tuple[UnattributedPayment, str]:
    e2eid = efi.receive(amount, payer_name="Maria Pagadora", payer_document="52998224725")
    return UnattributedPayment.objects.get(end_to_end_id=e2eid), e2eid


def send_back(client, payment: UnattributedPayment, capture, *, confirm: bool = True):
    data = {"action": "send_back", "_selected_action": [str(payment.pk)]}
    if confirm:
        data["confirm"] = "yes"
    with capture(execute=True):
        return client.post(CHANGELIST, data)


def puts(efi, e2eid: str) -> list[str]:
    return [r["path"] for r in efi.requests_log if r["method"] == "PUT" and r["path"].startswith(f"/v2/pix/{e2eid}/")]


def test_a_live_pix_naming_no_charge_becomes_one_unattributed_payment_however_often_it_is_notified(efi):
    before = timezone.now()
    e2eid = efi.receive(1234, payer_name="Maria Pagadora", payer_document="52998224725")

    row = RailNotification.objects.get(rail="efi", dedupe_key=f"pix-{e2eid}")
    assert row.outcome == "no matching charge: unattributed"
    payment = UnattributedPayment.objects.get()
    assert {field: getattr(payment, field) for field in (
        "rail", "notification_id", "end_to_end_id", "amount", "payer_name", "payer_document", "status", "refund_key",
        "failure_code", "refunded_by_id", "resolved_at")} == {
        "rail": "efi", "notification_id": row.pk, "end_to_end_id": e2eid, "amount": 1234,
        "payer_name": "Maria Pagadora", "payer_document": "52998224725", "status": "RECEIVED", "refund_key": None,
        "failure_code": "", "refunded_by_id": None, "resolved_at": None}
    assert payment.created_at >= before and payment.updated_at == payment.created_at

    # The bank notifies again; a notice of the same Pix arrives under another key; reconciliation lists it.
    again = Client().post(f"/rails/efi/webhook/{WEBHOOK_SECRET}/pix", data=json.dumps({"pix": [efi.pix_view(e2eid)]}),
                          content_type="application/json")
    assert again.status_code == 200, again.content
    other = notification_record(rail_name="efi", notification=Notification(
        dedupe_key="another-notice", kind="payin.paid", amount=1234, end_to_end_id=e2eid, payer_name="Maria Pagadora",
        payer_document="52998224725"))
    assert other.outcome == "no matching charge: unattributed"
    inbound.rail_reconcile(payouts_too=False)

    assert UnattributedPayment.objects.count() == 1
    assert UnattributedPayment.objects.get().notification_id == row.pk
    # Nobody's money: no merchant's balance, no unmatched payment.
    assert not UnmatchedPayment.objects.exists() and not LedgerTransaction.objects.exists()


def test_staff_with_the_permission_send_it_back_and_the_bank_returns_it(
        efi, refunder, queued, django_capture_on_commit_callbacks):
    payment, e2eid = received(efi)
    client, staff = refunder

    page = client.get(CHANGELIST)
    assert page.status_code == 200
    assert '<option value="send_back">Send back to the payer</option>' in page.content.decode()
    in_portuguese = Client(HTTP_ACCEPT_LANGUAGE="pt-br")
    in_portuguese.force_login(staff)
    assert '<option value="send_back">Devolver ao pagador</option>' in in_portuguese.get(CHANGELIST).content.decode()
    # The action asks first: a page naming the payment, and nothing moves.
    confirm = send_back(client, payment, django_capture_on_commit_callbacks, confirm=False)
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert "R$ 12,34, Maria Pagadora (52998224725)" in text and f"<code>{e2eid}</code>" in text
    assert '<input type="hidden" name="confirm" value="yes">' in text
    assert UnattributedPayment.objects.get().status == "RECEIVED" and queued == []

    response = send_back(client, payment, django_capture_on_commit_callbacks)

    assert response.status_code == 302
    payment.refresh_from_db()
    assert (payment.status, payment.refund_key, payment.refunded_by_id, payment.failure_code) == (
        "REFUND_PENDING", payment.pk, staff.pk, "")
    assert queued == [(SEND, {"unattributed_id": str(payment.pk)})]
    assert e2eid not in efi.devolucoes  # the worker sends it, with no transaction open
    entry = AccountEvent.objects.get(obj_type="unattributed_payment")
    assert {field: getattr(entry, field) for field in (
        "merchant", "actor", "action", "obj_id", "before", "after", "reason", "details")} == {
        "merchant": None, "actor": staff, "action": "staff_action", "obj_id": str(payment.pk),
        "before": {"status": "RECEIVED"}, "after": {"status": "REFUND_PENDING"},
        "reason": "sent back to the payer: R$ 12,34",
        "details": {"unattributed_id": str(payment.pk), "amount": 1234, "end_to_end_id": e2eid,
                    "refund_key": str(payment.pk)}}

    unattributed.unattributed_refund_send(unattributed_id=payment.pk)  # the worker's task

    devolucao = efi.devolucoes[e2eid][payment.pk.hex]
    assert devolucao == {"id": payment.pk.hex, "rtrId": devolucao["rtrId"], "valor": "12.34",
                         "horario": {"solicitacao": devolucao["horario"]["solicitacao"]}, "status": EM_PROCESSAMENTO}
    assert UnattributedPayment.objects.get().status == "REFUND_PENDING"
    unattributed.unattributed_refund_send(unattributed_id=payment.pk)  # a repeated task finds the same devolução
    assert list(efi.devolucoes[e2eid]) == [payment.pk.hex]

    assert efi.settle() == 1  # DEVOLVIDO, notified with the Pix's devoluções

    payment.refresh_from_db()
    assert (payment.status, payment.failure_code, payment.resolved_at is not None) == ("REFUNDED", "", True)
    assert efi.devolucoes[e2eid][payment.pk.hex]["status"] == DEVOLVIDO
    # Refunded is final: sending it again is refused by name, and nothing is queued or sent.
    queued.clear()
    again = send_back(client, payment, django_capture_on_commit_callbacks)
    assert again.status_code == 302
    assert "A REFUNDED payment cannot be sent back" in client.get(CHANGELIST).content.decode()
    assert UnattributedPayment.objects.get().status == "REFUNDED" and queued == []
    # Two calls (the task, and its repeat), one key, one devolução.
    assert puts(efi, e2eid) == [f"/v2/pix/{e2eid}/devolucao/{payment.pk.hex}"] * 2
    assert list(efi.devolucoes[e2eid]) == [payment.pk.hex]
    assert not LedgerTransaction.objects.exists()


def test_a_devolucao_the_bank_could_not_make_fails_and_can_be_sent_again(
        efi, refunder, queued, django_capture_on_commit_callbacks):
    payment, e2eid = received(efi)
    client, _ = refunder
    efi.refunds_fail = True
    send_back(client, payment, django_capture_on_commit_callbacks)
    unattributed.unattributed_refund_send(unattributed_id=payment.pk)

    efi.settle()

    payment.refresh_from_db()
    assert (payment.status, payment.failure_code, payment.resolved_at) == ("REFUND_FAILED", "rejected_by_bank", None)
    assert efi.devolucoes[e2eid][payment.pk.hex]["status"] == NAO_REALIZADO

    efi.refunds_fail = False
    send_back(client, payment, django_capture_on_commit_callbacks)

    payment.refresh_from_db()
    # The first devolução is final at the bank (not made): the second attempt is a new one, under a new key.
    assert payment.status == "REFUND_PENDING" and payment.refund_key not in (None, payment.pk)
    assert queued == [(SEND, {"unattributed_id": str(payment.pk)})] * 2
    unattributed.unattributed_refund_send(unattributed_id=payment.pk)
    efi.settle()

    payment.refresh_from_db()
    assert payment.status == "REFUNDED"
    assert {key: devolucao["status"] for key, devolucao in efi.devolucoes[e2eid].items()} == {
        payment.pk.hex: NAO_REALIZADO, payment.refund_key.hex: DEVOLVIDO}
    assert [entry.before for entry in AccountEvent.objects.filter(obj_type="unattributed_payment")
            .order_by("created_at")] == [{"status": "RECEIVED"}, {"status": "REFUND_FAILED"}]


def _backdate(payment: UnattributedPayment) -> None:
    UnattributedPayment.objects.filter(pk=payment.pk).update(updated_at=timezone.now() - timedelta(minutes=1))


def test_a_failing_bank_leaves_it_pending_and_reconciliation_finishes_it_under_the_same_key(
        efi, refunder, queued, django_capture_on_commit_callbacks):
    payment, e2eid = received(efi)
    client, _ = refunder
    send_back(client, payment, django_capture_on_commit_callbacks)
    efi.fail_next("PUT", f"/v2/pix/{e2eid}/devolucao/", mode="after", status=500)  # made, but the answer is lost
    efi.drop_notifications = True

    unattributed.unattributed_refund_send(unattributed_id=payment.pk)

    assert UnattributedPayment.objects.get().status == "REFUND_PENDING"  # unknown outcome: not failed, not resent
    assert inbound.rail_reconcile(payouts_too=False)["unattributed_refunds"] == 0  # too young: maybe on its way
    assert UnattributedPayment.objects.get().status == "REFUND_PENDING"
    _backdate(payment)
    efi.settle()  # DEVOLVIDO at the bank; the notification is lost

    assert inbound.rail_reconcile(payouts_too=False)["unattributed_refunds"] == 1

    payment.refresh_from_db()
    assert (payment.status, payment.refund_key) == ("REFUNDED", payment.pk)
    assert list(efi.devolucoes[e2eid]) == [payment.pk.hex] and puts(efi, e2eid) == [
        f"/v2/pix/{e2eid}/devolucao/{payment.pk.hex}"]


def test_a_send_that_never_reached_the_bank_is_sent_by_reconciliation_under_the_same_key(
        efi, refunder, queued, django_capture_on_commit_callbacks):
    payment, e2eid = received(efi)
    client, _ = refunder
    send_back(client, payment, django_capture_on_commit_callbacks)
    efi.fail_next("PUT", f"/v2/pix/{e2eid}/devolucao/", mode="before", status=503)
    unattributed.unattributed_refund_send(unattributed_id=payment.pk)
    assert UnattributedPayment.objects.get().status == "REFUND_PENDING" and e2eid not in efi.devolucoes
    _backdate(payment)

    inbound.rail_reconcile(payouts_too=False)  # the bank has none under our key: sent now, the same key

    assert list(efi.devolucoes[e2eid]) == [payment.pk.hex]
    efi.settle()
    assert UnattributedPayment.objects.get().status == "REFUNDED"
    assert puts(efi, e2eid) == [f"/v2/pix/{e2eid}/devolucao/{payment.pk.hex}"] * 2


def test_staff_without_the_permission_cannot_send_it_back(efi, queued, django_capture_on_commit_callbacks):
    payment, e2eid = received(efi)
    viewer, _ = staff_client("view_unattributedpayment")

    page = viewer.get(CHANGELIST)
    assert page.status_code == 200 and str(payment.pk) in page.content.decode()
    assert "send_back" not in page.content.decode()
    assert viewer.get(f"{CHANGELIST}{payment.pk}/change/").status_code == 200  # read-only detail

    refused = send_back(viewer, payment, django_capture_on_commit_callbacks)

    # No action is theirs: the post is the plain list again, and nothing happens.
    assert refused.status_code == 200 and 'name="action"' not in refused.content.decode()
    assert UnattributedPayment.objects.get().status == "RECEIVED" and queued == [] and e2eid not in efi.devolucoes
    assert not AccountEvent.objects.filter(obj_type="unattributed_payment").exists()
    # Staff without even the view permission do not see the page.
    stranger, _ = staff_client()
    assert stranger.get(CHANGELIST).status_code == 403
    assert send_back(stranger, payment, django_capture_on_commit_callbacks).status_code == 403


def test_the_admin_action_needs_the_csrf_token(efi, refunder, queued):
    payment, _ = received(efi)
    _, staff = refunder
    strict = Client(enforce_csrf_checks=True, HTTP_ACCEPT_LANGUAGE="en")
    strict.force_login(staff)

    response = strict.post(CHANGELIST, {"action": "send_back", "_selected_action": [str(payment.pk)],
                                        "confirm": "yes"})

    assert response.status_code == 403
    assert UnattributedPayment.objects.get().status == "RECEIVED" and queued == []
