"""Keyset pagination: newest first, no duplicates or gaps even when timestamps tie, strict limit and cursor."""

import base64
import math
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AccountEvent
from config.api import paginate, reject_unknown_params
from config.errors import DomainError
from tests.factories import MerchantFactory


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
