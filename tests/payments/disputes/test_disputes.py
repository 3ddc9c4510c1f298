"""Disputes (issue 14): card chargebacks and Pix MED opened by the rail (the sandbox here), answered with evidence or
accepted, decided WON or LOST, or LOST at their deadline; their money held meanwhile, never returned twice."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AccountEvent
from payments.disputes import services as disputes
from payments.disputes import tasks as dispute_tasks
from payments.models import Dispute
from payments.payins.notifications import notification_receive
from tests.factories import ApiKeyFactory, MerchantFactory
from tests.payments.disputes.helpers import decide, held, open_dispute
from tests.payments.payins.test_payin_api import (
    assert_ledger_balanced,
    balance,
    create,
    envelope,
    error,
    events_of,
    get,
    invalid_state,
    iso,
    line,
    paid_pix,
    parse_iso,
    simulate,
    statement,
    validation,
)


@pytest.fixture(autouse=True)
def _api_settings(settings):
    settings.API_RATE_LIMIT = 1_000_000
    settings.FEE_PIX_BPS, settings.FEE_CARD_BPS, settings.FEE_CARD_FIXED, settings.FEE_BOLETO_FIXED = 99, 399, 39, 349
    settings.DISPUTE_CHARGEBACK_EVIDENCE_DAYS, settings.DISPUTE_MED_EVIDENCE_DAYS = 7, 7


@pytest.fixture
def other_api(api_client_for, db):
    return api_client_for(*ApiKeyFactory.with_secret(merchant=MerchantFactory(), livemode=False))


@pytest.fixture
def live_api(api_client_for, merchant):
    return api_client_for(*ApiKeyFactory.with_secret(merchant=merchant, livemode=True))


def not_found(response) -> None:
    error(response, 404, type="not_found", code="not_found", message="No such dispute")


def expected_dispute(got: dict, *, payin_id: str, kind: str, amount: int, status: str = "OPEN",
                     evidence: dict | None = None, closed: bool = False) -> dict:
    """The whole body; id and timestamps from `got`, their formats and the 7-day deadline checked."""
    created = parse_iso(got["createdAt"])
    assert got["evidenceDueBy"] == iso(created + timedelta(days=7))
    assert (got["closedAt"] is not None) == closed
    return {"id": got["id"], "payinId": payin_id, "kind": kind,
            "reason": "fraudulent" if kind == "CHARGEBACK" else "fraud", "amount": amount, "status": status,
            "evidenceDueBy": got["evidenceDueBy"], "evidence": evidence or {"text": None, "submittedAt": None},
            "createdAt": got["createdAt"], "closedAt": got["closedAt"], "livemode": False}


# --- Opening ---------------------------------------------------------------------------------------------------------
def test_a_card_chargeback_opens_a_dispute_holding_the_amount(api, merchant):
    charge = create(api, "CREDIT_CARD", amount=10000)  # test mode settles at once: 9562 available

    dispute = open_dispute(api, charge["id"], "chargeback")

    assert dispute == expected_dispute(dispute, payin_id=charge["id"], kind="CHARGEBACK", amount=10000)
    assert api.get(f"/disputes/{dispute['id']}").json() == dispute
    assert get(api, charge["id"]) == charge  # still PAID until the case is decided
    assert balance(api)["available"] == 9562 - 10000  # may go negative, as a chargeback always could
    assert held(merchant) == 10000
    opened = [line("dispute", -10000, 9562 - 10000, object_id=dispute["id"], object_type="dispute",
                   description="Dispute opened (CHARGEBACK)"),
              line("dispute", 10000, 10000, object_id=dispute["id"], object_type="dispute",
                   description="Dispute opened (CHARGEBACK)", balance="held")]
    assert sorted(statement(api)[:2], key=str) == sorted(opened, key=str)
    (created,) = events_of(api, dispute["id"])
    assert created == envelope(created, type="dispute.created", obj=dispute, previous_status=None)
    assert_ledger_balanced()


def test_a_med_on_a_paid_pix_opens_a_dispute(api, merchant):
    charge = paid_pix(api, 10000)

    dispute = open_dispute(api, charge["id"], "med")

    assert dispute == expected_dispute(dispute, payin_id=charge["id"], kind="MED", amount=10000)
    assert balance(api)["available"] == 9901 - 10000
    assert held(merchant) == 10000
    assert_ledger_balanced()


def test_a_dispute_after_a_partial_refund_holds_only_the_rest(api, merchant):
    charge = paid_pix(api, 10000)
    refund = api.post(f"/payin/{charge['id']}/refunds", {"amount": 3000}, format="json")
    assert refund.status_code == 201, refund.content  # PENDING: still counted, never returned twice

    dispute = open_dispute(api, charge["id"], "med")

    assert dispute["amount"] == 7000
    assert held(merchant) == 7000
    assert balance(api)["available"] == 9901 - 3000 - 7000
    assert_ledger_balanced()


def test_sandbox_dispute_openings_that_the_network_would_refuse_are_409(api):
    card = create(api, "CREDIT_CARD", amount=1000)
    pix = paid_pix(api, 1000)
    boleto = simulate(api, create(api, "BOLETO")["id"], "pay")
    pending = create(api, "PIX")
    refunded = paid_pix(api, 1000)
    assert api.post(f"/payin/{refunded['id']}/refunds", {}, format="json").status_code == 201
    open_dispute(api, card["id"], "chargeback")

    for payin_id, action, message in [
            (card["id"], "chargeback", "This charge was already disputed"),
            (pix["id"], "chargeback", "A PIX charge cannot have a CHARGEBACK dispute"),
            (card["id"], "med", "A CREDIT_CARD charge cannot have a MED dispute"),
            (boleto["id"], "med", "BOLETO payments cannot be disputed"),
            (pending["id"], "med", "A PENDING charge cannot be disputed"),
            (refunded["id"], "med", "Nothing is left of this charge to dispute: it was refunded")]:
        invalid_state(api.post(f"/sandbox/payin/{payin_id}/simulate", {"action": action}, format="json"), message)
    assert Dispute.objects.count() == 1
    assert_ledger_balanced()


def test_a_repeated_chargeback_notice_opens_one_dispute(api, merchant):
    charge = paid_pix(api, 10000)

    outcomes = [notification_receive(rail_name="simulator", body=json.dumps(
        {"id": f"cb-{n}", "type": "payin.chargeback", "key": charge["id"], "amount": 10000}).encode()).outcome
        for n in range(2)]

    dispute = Dispute.objects.get()
    assert outcomes == [f"dispute opened {dispute.pk}", f"ignored: already disputed ({dispute.pk})"]
    assert (dispute.kind, dispute.amount, held(merchant)) == ("MED", 10000, 10000)
    assert_ledger_balanced()


def test_a_charge_under_dispute_cannot_be_refunded(api):
    charge = paid_pix(api, 10000)
    open_dispute(api, charge["id"], "med")

    response = api.post(f"/payin/{charge['id']}/refunds", {"amount": 100}, format="json")

    invalid_state(response, "A charge under dispute cannot be refunded")
    assert_ledger_balanced()


# --- Evidence and accept ---------------------------------------------------------------------------------------------
def test_evidence_puts_an_open_dispute_under_review_once(api):
    dispute = open_dispute(api, create(api, "CREDIT_CARD", amount=10000)["id"], "chargeback")

    response = api.post(f"/disputes/{dispute['id']}/evidence", {"text": "Delivered on 2025-11-20, signed."},
                        format="json")

    assert response.status_code == 200, response.content
    reviewed = response.json()
    assert reviewed["evidence"]["submittedAt"] is not None
    assert reviewed == {**dispute, "status": "UNDER_REVIEW",
                        "evidence": {"text": "Delivered on 2025-11-20, signed.",
                                     "submittedAt": reviewed["evidence"]["submittedAt"]}}
    latest = events_of(api, dispute["id"])[0]
    assert latest == envelope(latest, type="dispute.updated", obj=reviewed, previous_status="OPEN")
    invalid_state(api.post(f"/disputes/{dispute['id']}/evidence", {"text": "again"}, format="json"),
                  "A dispute in status UNDER_REVIEW cannot become UNDER_REVIEW")
    invalid_state(api.post(f"/disputes/{dispute['id']}/accept"),
                  "A dispute in status UNDER_REVIEW cannot become ACCEPTED")
    assert_ledger_balanced()


@pytest.mark.parametrize(("body", "details"), [
    ({}, [{"param": "text", "code": "required", "message": "This field is required."}]),
    ({"text": ""}, [{"param": "text", "code": "blank", "message": "This field may not be blank."}]),
    ({"text": 1}, [{"param": "text", "code": "invalid", "message": "Must be a JSON string."}]),
    ({"text": "x" * 20001}, [{"param": "text", "code": "max_length",
                              "message": "Ensure this field has no more than 20000 characters."}]),
])
def test_invalid_evidence_is_400(api, body, details):
    dispute = open_dispute(api, paid_pix(api, 1000)["id"], "med")

    validation(api.post(f"/disputes/{dispute['id']}/evidence", body, format="json"), details)
    assert api.get(f"/disputes/{dispute['id']}").json() == dispute


def test_the_longest_evidence_is_taken_however_it_is_escaped(api):
    # 20,000 characters, each sent as a surrogate pair of \\u escapes: 240,012 bytes, over the API's usual 64 KiB.
    dispute = open_dispute(api, paid_pix(api, 1000)["id"], "med")
    text = "\N{GRINNING FACE}" * 20_000
    body = json.dumps({"text": text})
    assert len(body) == 240_012

    response = api.post(f"/disputes/{dispute['id']}/evidence", data=body, content_type="application/json")

    assert response.status_code == 200, response.content[:500]
    assert response.json()["evidence"]["text"] == text


def test_evidence_over_256_kib_is_413_before_it_is_read(api):
    dispute = open_dispute(api, paid_pix(api, 1000)["id"], "med")
    body = json.dumps({"text": "Delivered."}) + " " * (256 * 1024)

    response = api.post(f"/disputes/{dispute['id']}/evidence", data=body, content_type="application/json")

    assert response.status_code == 413
    error = response.json()["error"]
    assert (error["code"], error["message"]) == ("payload_too_large", "Request bodies are limited to 256 KiB")
    assert api.get(f"/disputes/{dispute['id']}").json() == dispute


def test_evidence_after_the_deadline_is_409(api):
    dispute = open_dispute(api, paid_pix(api, 1000)["id"], "med")
    Dispute.objects.filter(pk=dispute["id"]).update(evidence_due_by=timezone.now() - timedelta(seconds=1))

    invalid_state(api.post(f"/disputes/{dispute['id']}/evidence", {"text": "late"}, format="json"),
                  "The deadline for evidence has passed")


def test_accepting_a_card_dispute_charges_the_charge_back(api, merchant):
    charge = create(api, "CREDIT_CARD", amount=10000)
    dispute = open_dispute(api, charge["id"], "chargeback")

    response = api.post(f"/disputes/{dispute['id']}/accept")

    assert response.status_code == 200, response.content
    accepted = response.json()
    assert accepted == {**expected_dispute(accepted, payin_id=charge["id"], kind="CHARGEBACK", amount=10000,
                                           status="ACCEPTED", closed=True), "id": dispute["id"]}
    charged_back = get(api, charge["id"])
    assert charged_back == {**charge, "status": "CHARGEBACK", "updatedAt": charged_back["updatedAt"]}
    assert (balance(api)["available"], held(merchant)) == (9562 - 10000, 0)  # the money went to the payer
    closed = events_of(api, dispute["id"])[0]
    assert closed == envelope(closed, type="dispute.closed", obj=accepted, previous_status="OPEN")
    latest = events_of(api, charge["id"])[0]
    assert latest == envelope(latest, type="payin.chargeback", obj=charged_back, previous_status="PAID")
    entry = AccountEvent.objects.get(action=AccountEvent.Action.DISPUTE_ACCEPTED)
    assert (entry.obj_type, entry.obj_id, entry.after) == ("dispute", dispute["id"], {"status": "ACCEPTED"})
    invalid_state(api.post(f"/disputes/{dispute['id']}/accept"), "A dispute in status ACCEPTED cannot become ACCEPTED")
    assert_ledger_balanced()


# --- Decisions -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["CREDIT_CARD", "PIX"])
def test_a_won_dispute_gives_the_amount_back(api, merchant, method):
    charge = create(api, "CREDIT_CARD", amount=10000) if method == "CREDIT_CARD" else paid_pix(api, 10000)
    dispute = open_dispute(api, charge["id"], "chargeback" if method == "CREDIT_CARD" else "med")
    api.post(f"/disputes/{dispute['id']}/evidence", {"text": "Delivered."}, format="json")

    won = decide(api, dispute["id"], "win")

    assert (won["status"], won["closedAt"] is not None) == ("WON", True)
    assert get(api, charge["id"]) == charge  # PAID, as it was
    assert (balance(api)["available"], held(merchant)) == (charge["netAmount"], 0)
    description = "Dispute won: the held amount is available again"
    won_lines = [line("dispute", 10000, charge["netAmount"], object_id=dispute["id"], object_type="dispute",
                      description=description),
                 line("dispute", -10000, 0, object_id=dispute["id"], object_type="dispute", description=description,
                      balance="held")]
    assert sorted(statement(api)[:2], key=str) == sorted(won_lines, key=str)
    closed = events_of(api, dispute["id"])[0]
    assert closed == envelope(closed, type="dispute.closed", obj=won, previous_status="UNDER_REVIEW")
    invalid_state(api.post(f"/sandbox/disputes/{dispute['id']}/simulate", {"action": "lose"}, format="json"),
                  "A dispute in status WON cannot become LOST")
    assert_ledger_balanced()


def test_a_lost_med_refunds_the_charge(api, merchant):
    charge = paid_pix(api, 10000)
    dispute = open_dispute(api, charge["id"], "med")

    lost = decide(api, dispute["id"], "lose")

    assert lost["status"] == "LOST"
    refunded = get(api, charge["id"])
    assert refunded == {**charge, "status": "REFUNDED", "refundedAmount": 10000, "updatedAt": refunded["updatedAt"]}
    assert (balance(api)["available"], held(merchant)) == (9901 - 10000, 0)
    latest = events_of(api, charge["id"])[0]
    assert latest == envelope(latest, type="payin.refunded", obj=refunded, previous_status="PAID")
    assert_ledger_balanced()


def test_a_lost_med_after_a_partial_refund_returns_only_the_rest(api, merchant, settings):
    settings.SIMULATOR_AUTO_CONFIRM_SECONDS = 0
    charge = paid_pix(api, 10000)
    refund = api.post(f"/payin/{charge['id']}/refunds", {"amount": 3000}, format="json").json()
    dispute = open_dispute(api, charge["id"], "med")

    decide(api, dispute["id"], "lose")

    after = get(api, charge["id"])
    assert (after["status"], after["refundedAmount"]) == ("REFUNDED", 10000)
    assert refund["amount"] + dispute["amount"] == charge["amount"]  # never the same money twice
    assert (balance(api)["available"], held(merchant)) == (9901 - 10000, 0)
    assert_ledger_balanced()


def test_a_lost_card_dispute_after_a_partial_refund_is_a_chargeback(api, merchant):
    charge = create(api, "CREDIT_CARD", amount=10000)
    assert api.post(f"/payin/{charge['id']}/refunds", {"amount": 4000}, format="json").status_code == 201
    dispute = open_dispute(api, charge["id"], "chargeback")

    decide(api, dispute["id"], "lose")

    after = get(api, charge["id"])
    assert (after["status"], after["refundedAmount"], dispute["amount"]) == ("CHARGEBACK", 4000, 6000)
    assert (balance(api)["available"], held(merchant)) == (9562 - 10000, 0)
    assert_ledger_balanced()


@pytest.mark.parametrize(("body", "details"), [
    ({"action": "draw"}, [{"param": "action", "code": "invalid_choice", "message": "Must be one of win, lose."}]),
    ({}, [{"param": "action", "code": "required", "message": "This field is required."}]),
])
def test_sandbox_dispute_unknown_action_is_400(api, body, details):
    dispute = open_dispute(api, paid_pix(api, 1000)["id"], "med")

    validation(api.post(f"/sandbox/disputes/{dispute['id']}/simulate", body, format="json"), details)


def test_sandbox_dispute_decisions_need_test_keys(api, live_api):
    dispute = open_dispute(api, paid_pix(api, 1000)["id"], "med")

    response = live_api.post(f"/sandbox/disputes/{dispute['id']}/simulate", {"action": "win"}, format="json")

    error(response, 403, type="permission_error", code="test_mode_only",
          message="Sandbox controls work with test keys only")


# --- The deadline ----------------------------------------------------------------------------------------------------
def test_open_disputes_past_their_deadline_are_lost_once(api, merchant):
    late = open_dispute(api, create(api, "CREDIT_CARD", amount=10000)["id"], "chargeback")
    answered = open_dispute(api, paid_pix(api, 5000)["id"], "med")
    api.post(f"/disputes/{answered['id']}/evidence", {"text": "Delivered."}, format="json")
    in_time = open_dispute(api, paid_pix(api, 2000)["id"], "med")
    Dispute.objects.filter(pk__in=[late["id"], answered["id"]]).update(
        evidence_due_by=timezone.now() - timedelta(seconds=1))

    counts = [dispute_tasks.disputes_expire(), dispute_tasks.disputes_expire()]

    assert counts == [1, 0]
    statuses = {str(d.pk): d.status for d in Dispute.objects.all()}
    assert statuses == {late["id"]: "LOST", answered["id"]: "UNDER_REVIEW", in_time["id"]: "OPEN"}
    assert get(api, late["payinId"])["status"] == "CHARGEBACK"
    assert held(merchant) == 5000 + 2000
    closed = events_of(api, late["id"])[0]
    assert closed["type"] == "dispute.closed" and closed["data"]["previousStatus"] == "OPEN"
    assert_ledger_balanced()


def test_the_deadline_follows_the_settings(api, settings):
    settings.DISPUTE_MED_EVIDENCE_DAYS = 3
    charge = paid_pix(api, 1000)

    dispute, created = disputes.dispute_open(payin_id=charge["id"])

    assert created and dispute.evidence_due_by - dispute.created_at == timedelta(days=3)


# --- Reads -----------------------------------------------------------------------------------------------------------
def test_list_filters_and_pages(api):
    card = open_dispute(api, create(api, "CREDIT_CARD", amount=1000)["id"], "chargeback")
    meds = [open_dispute(api, paid_pix(api, 1000 + n)["id"], "med") for n in range(3)]
    decide(api, meds[0]["id"], "win")
    meds[0] = api.get(f"/disputes/{meds[0]['id']}").json()

    def ids(**params) -> list[str]:
        response = api.get("/disputes", params)
        assert response.status_code == 200, response.content
        return [d["id"] for d in response.json()["data"]]

    assert ids() == [meds[2]["id"], meds[1]["id"], meds[0]["id"], card["id"]]
    assert ids(kind="CHARGEBACK") == [card["id"]]
    assert ids(status="WON") == [meds[0]["id"]]
    assert ids(status="OPEN", kind="MED") == [meds[2]["id"], meds[1]["id"]]
    first = api.get("/disputes", {"limit": 2}).json()
    assert (first["data"], first["hasMore"]) == ([meds[2], meds[1]], True)
    second = api.get("/disputes", {"limit": 2, "cursor": first["nextCursor"]}).json()
    assert second == {"data": [meds[0], card], "hasMore": False, "nextCursor": None}


def test_list_refuses_bad_filters(api):
    validation(api.get("/disputes", {"status": "CLOSED", "kind": "x", "payinId": "nope"}), [
        {"param": "status", "code": "invalid_choice",
         "message": "status must be one of OPEN, UNDER_REVIEW, WON, LOST, ACCEPTED."},
        {"param": "kind", "code": "invalid_choice", "message": "kind must be one of CHARGEBACK, MED."},
        {"param": "payinId", "code": "invalid_object_id", "message": "payinId must be a UUID."}])


def test_another_merchants_or_modes_dispute_does_not_exist(api, other_api, live_api):
    dispute = open_dispute(api, paid_pix(api, 1000)["id"], "med")

    for client in (other_api, live_api):
        not_found(client.get(f"/disputes/{dispute['id']}"))
        not_found(client.post(f"/disputes/{dispute['id']}/accept"))
        not_found(client.post(f"/disputes/{dispute['id']}/evidence", {"text": "mine"}, format="json"))
        assert client.get("/disputes").json() == {"data": [], "hasMore": False, "nextCursor": None}
    not_found(other_api.post(f"/sandbox/disputes/{dispute['id']}/simulate", {"action": "win"}, format="json"))
    not_found(api.get("/disputes/not-a-uuid"))
    assert api.get(f"/disputes/{dispute['id']}").json() == dispute
