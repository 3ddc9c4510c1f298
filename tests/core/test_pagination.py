"""Keyset pagination: newest first, no duplicates or gaps even when timestamps tie, strict limit and cursor."""

import base64
import math
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AccountEvent
from core.api import Listing, paginate, reject_unknown_params
from core.errors import DomainError
from payments.models import Payin
from payments.payins.serializers import PAYIN_COLUMNS
from tests.factories import MerchantFactory
from tests.payments.hosted.test_pages import make_payin


def serialize(event: AccountEvent) -> dict:
    return {"id": event.pk}


@pytest.fixture
def events(db):
    merchant = MerchantFactory()
    base = timezone.now()
    # Groups of three share a timestamp, so the id must break ties.
    rows = [AccountEvent(merchant=merchant, action="signed_up", created_at=base - timedelta(seconds=i // 3))
            for i in range(47)]
    AccountEvent.objects.bulk_create(rows)
    return AccountEvent.objects.filter(merchant=merchant)


def walk(queryset, limit: int) -> tuple[list[int], int]:
    seen, pages, cursor = [], 0, None
    while True:
        params = {"limit": str(limit), **({"cursor": cursor} if cursor else {})}
        page = paginate(queryset, params=params, serialize=serialize)
        pages += 1
        seen.extend(row["id"] for row in page.data)
        if not page.has_more:
            assert page.next_cursor is None
            return seen, pages
        cursor = page.next_cursor


@pytest.mark.parametrize("limit", [1, 5, 10, 46, 47, 100])
def test_walks_every_row_once_newest_first(events, limit):
    expected = list(events.order_by("-created_at", "-pk").values_list("pk", flat=True))

    seen, pages = walk(events, limit)

    assert seen == expected
    assert pages == math.ceil(47 / limit)


def test_default_limit_is_20(events):
    page = paginate(events, params={}, serialize=serialize)

    assert len(page.data) == 20
    assert page.has_more is True
    assert page.as_body().keys() == {"data", "hasMore", "nextCursor"}


def test_rows_created_after_the_first_page_do_not_shift_later_pages(events):
    first = paginate(events, params={"limit": "10"}, serialize=serialize)
    AccountEvent.objects.create(merchant=events.first().merchant, action="signed_up")

    second = paginate(events, params={"limit": "10", "cursor": first.next_cursor}, serialize=serialize)

    expected = list(events.order_by("-created_at", "-pk").values_list("pk", flat=True))
    assert [r["id"] for r in first.data + second.data] == expected[1:21]


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "10.5", "", "1e2", "٣"])
def test_limit_outside_1_to_100_is_refused(events, limit):
    with pytest.raises(DomainError) as raised:
        paginate(events, params={"limit": limit}, serialize=serialize)

    assert raised.value.code == "validation_error"
    assert raised.value.details == [{"param": "limit", "code": "invalid_limit",
                                     "message": "limit must be an integer from 1 to 100."}]


@pytest.mark.parametrize("cursor", ["garbage!", "e30", "WyJub3QgYSBkYXRlIiwgIjEiXQ"])
def test_unreadable_cursor_is_refused(events, cursor):
    with pytest.raises(DomainError) as raised:
        paginate(events, params={"cursor": cursor}, serialize=serialize)

    assert raised.value.details[0]["code"] == "invalid_cursor"


def test_a_deeply_nested_cursor_is_refused_not_a_crash(events):
    cursor = base64.urlsafe_b64encode(b"[" * 3000).decode().rstrip("=")  # json.loads raised RecursionError: a 500

    with pytest.raises(DomainError) as raised:
        paginate(events, params={"cursor": cursor}, serialize=serialize)

    assert raised.value.details == [{"param": "cursor", "code": "invalid_cursor",
                                     "message": "The cursor is not one this API returned."}]


def test_unknown_query_parameters_are_refused():
    with pytest.raises(DomainError) as raised:
        reject_unknown_params(["limit", "status", "stauts"], allowed={"status"})

    assert raised.value.code == "unknown_field"
    assert raised.value.details == [{"param": "stauts", "code": "unknown_field",
                                     "message": "Unknown query parameter 'stauts'."}]


def test_page_query_uses_the_keyset_not_offset(events, django_assert_num_queries):
    first = paginate(events, params={"limit": "5"}, serialize=serialize)

    with django_assert_num_queries(1) as captured:
        paginate(events, params={"limit": "5", "cursor": first.next_cursor}, serialize=serialize)

    sql = captured.captured_queries[0]["sql"].upper()
    assert "OFFSET" not in sql
    assert "LIMIT 6" in sql


def test_a_listing_reads_every_column_as_the_orm_does(db):
    # A Listing's page is read as `values_list` rows: the same values, instants and zone (UTC) as the ORM's model
    # instances of the rows.
    merchant = MerchantFactory()
    for method, microsecond in (("PIX", 0), ("BOLETO", 999_999), ("CREDIT_CARD", 1)):
        payin = make_payin(merchant, method, status="PENDING", paid_at=None)  # no money moved: the ledger stays empty
        created = payin.created_at.replace(microsecond=microsecond)
        Payin.objects.filter(pk=payin.pk).update(created_at=created, updated_at=created + timedelta(microseconds=1))
    # JSON the API never writes, read as Django reads it all the same: integers beyond 64 bits, 19 digits in a string,
    # a float, unicode and escapes.
    Payin.objects.filter(pk=payin.pk).update(metadata={"big": 2**70, "negative": -(2**63) - 1, "float": 0.1,
                                                       "digits": "1234567890123456789", "text": "São \u2028 \"x\""})
    listing = Listing.of(Payin, PAYIN_COLUMNS, scope={"merchant_id": merchant.pk, "livemode": False})

    rows = paginate(listing, params={}, serialize=lambda row: row).data

    instances = list(Payin.objects.filter(merchant=merchant).order_by("-created_at", "-pk"))
    assert [row.id for row in rows] == [payin.pk for payin in instances]
    for row, payin in zip(rows, instances, strict=True):
        assert tuple(row) == tuple(getattr(payin, column) for column in PAYIN_COLUMNS)
        for column in ("created_at", "updated_at", "paid_at", "pix_expires_at"):
            value = getattr(row, column)
            assert value is None or (value.tzinfo is not None and value.utcoffset() == timedelta(0))
