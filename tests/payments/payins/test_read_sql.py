"""The charge reads' literal SQL (payments/payins/read_sql.py) on PostgreSQL: the same charge, rows, values and pages
as the QuerySets they stand in for, only the caller's merchant and mode, each served by its index."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction

from core.api import Listing, paginate
from core.renderers import ApiJSONRenderer
from payments.models import Payin
from payments.payins.read_sql import DOCUMENTS, FIRST_PAGE, NEXT_PAGE, SCOPED_GET, PayinPages, payin_scoped
from payments.payins.serializers import PAYIN_COLUMNS, payin_serialize
from tests.factories import MerchantFactory
from tests.payments.hosted.test_pages import make_payin


@pytest.fixture
def merchant_with_charges(db):
    """Charges of every method, some sharing their creation instant (the id breaks the tie), one holding JSON the API
    never writes, and charges of another merchant and of live mode beside them."""
    merchant = MerchantFactory()
    base = make_payin(merchant, "PIX").created_at
    for number in range(13):
        method = ("PIX", "BOLETO", "CREDIT_CARD")[number % 3]
        boleto = {"boleto_nosso_numero": 1000 + number} if method == "BOLETO" else {}
        payin = make_payin(merchant, method, status="PENDING", paid_at=None, amount=100 + number, **boleto)
        created = base - timedelta(seconds=number // 3, microseconds=(0, 999_999, 1)[number % 3])
        Payin.objects.filter(pk=payin.pk).update(created_at=created, updated_at=created + timedelta(microseconds=1))
    Payin.objects.filter(pk=payin.pk).update(metadata={"big": 2**70, "negative": -(2**63) - 1, "float": 0.1,
                                                       "digits": "1234567890123456789", "text": "São \u2028 \"x\""})
    make_payin(MerchantFactory(), "PIX")
    make_payin(merchant, "PIX", livemode=True)
    return merchant


def queryset_pages(merchant) -> Listing:
    return Listing.of(Payin, PAYIN_COLUMNS, scope={"merchant_id": merchant.pk, "livemode": False})


def test_the_columns_are_the_serializers_in_order_the_json_ones_as_one_array(merchant_with_charges):
    json_fields = [field for field in map(Payin._meta.get_field, PAYIN_COLUMNS)
                   if field.get_internal_type() == "JSONField"]
    assert PAYIN_COLUMNS[-len(DOCUMENTS):] == DOCUMENTS == tuple(field.name for field in json_fields)
    assert all(field.decoder is None for field in json_fields)  # from_db_value is json.loads, as _row reads them
    for sql, params in ((FIRST_PAGE, [merchant_with_charges.pk, False, 1]),
                        (NEXT_PAGE, [merchant_with_charges.pk, False, Payin.objects.first().created_at,
                                     Payin.objects.first().pk, 1])):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            assert tuple(column.name for column in cursor.description) == (
                *PAYIN_COLUMNS[:-len(DOCUMENTS)], "documents")


@pytest.mark.parametrize("limit", [1, 2, 5, 13, 14, 100])
def test_every_page_holds_the_querysets_rows_and_values(merchant_with_charges, limit):
    sql_pages, orm_pages = [], []
    for source, pages in ((PayinPages(merchant_id=merchant_with_charges.pk, livemode=False), sql_pages),
                          (queryset_pages(merchant_with_charges), orm_pages)):
        cursor = None
        while True:
            page = paginate(source, params={"limit": str(limit), **({"cursor": cursor} if cursor else {})},
                            serialize=lambda row: row)
            pages.append((page.data, page.has_more, page.next_cursor))
            if not page.has_more:
                break
            cursor = page.next_cursor

    assert sql_pages == orm_pages
    rows = [row for data, _, _ in sql_pages for row in data]
    assert len(rows) == 14
    instances = list(Payin.objects.filter(merchant=merchant_with_charges, livemode=False)
                     .order_by("-created_at", "-pk"))
    for row, payin in zip(rows, instances, strict=True):
        assert tuple(row) == tuple(getattr(payin, column) for column in PAYIN_COLUMNS)
        assert [type(value) for value in row] == [type(getattr(payin, column)) for column in PAYIN_COLUMNS]
        assert [getattr(value, "tzinfo", None) for value in row] == [
            getattr(getattr(payin, column), "tzinfo", None) for column in PAYIN_COLUMNS]
        assert ApiJSONRenderer().render(payin_serialize(row)) == ApiJSONRenderer().render(payin_serialize(payin))


def test_only_the_merchants_charges_of_the_mode(merchant_with_charges):
    live = PayinPages(merchant_id=merchant_with_charges.pk, livemode=True).page(100, None)
    nobody = PayinPages(merchant_id=uuid.uuid4(), livemode=False).page(100, None)

    assert [row.id for row in live] == list(Payin.objects.filter(merchant=merchant_with_charges, livemode=True)
                                            .values_list("pk", flat=True))
    assert nobody == []


def test_both_pages_read_the_list_index_from_the_keyset_on(merchant_with_charges):
    # The planner would scan a table this small; barred from it and from sorting, it must find both the order and the
    # keyset in the list index rather than filter every newer row. (Without `enable_sort = off`, PostgreSQL 18 may
    # pick payin_list_status by a skip scan and sort its one estimated row: a tie of costs on a table this small.)
    first = Payin.objects.filter(merchant=merchant_with_charges).order_by("-created_at", "-pk").first()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        plans = []
        for sql, params in ((FIRST_PAGE, [merchant_with_charges.pk, False, 21]),
                            (NEXT_PAGE, [merchant_with_charges.pk, False, first.created_at, first.pk, 21])):
            cursor.execute("EXPLAIN " + sql, params)
            plans.append("\n".join(line for line, in cursor.fetchall()))

    for plan in plans:
        assert "Index Scan Backward using payin_list" in plan, plan
        assert "Sort" not in plan, plan
    assert "ROW(created_at, id) < ROW(" in plans[1].split("Index Cond:")[1].splitlines()[0], plans[1]


def test_the_api_answers_the_same_bytes_with_a_filter_that_keeps_every_charge(api, test_key):
    # GET /payin without a filter reads through this module, with one through the QuerySet: the same charges must
    # give the same bodies, cursors included.
    merchant = test_key[0].merchant
    for number in range(7):
        boleto = {"boleto_nosso_numero": 2000 + number} if number % 3 == 1 else {}
        make_payin(merchant, ("PIX", "BOLETO", "CREDIT_CARD")[number % 3], status="PENDING", paid_at=None, **boleto)
    keep_all = {"createdFrom": "2000-01-01T00:00:00Z"}

    answers = {}
    for params in ({}, keep_all):
        bodies, cursor = [], None
        while True:
            response = api.get("/payin", {"limit": 3, **params, **({"cursor": cursor} if cursor else {})})
            assert response.status_code == 200
            bodies.append(response.content)
            cursor = response.json()["nextCursor"]
            if cursor is None:
                break
        answers[bool(params)] = bodies

    assert len(answers[False]) == 3
    assert answers[False] == answers[True]


def test_the_scoped_get_reads_the_charge_as_the_orm_does(merchant_with_charges, django_assert_num_queries):
    for payin in Payin.objects.filter(merchant=merchant_with_charges):
        with django_assert_num_queries(1):
            found = payin_scoped(merchant_id=merchant_with_charges.pk, livemode=payin.livemode, payin_id=payin.pk)

        assert type(found) is Payin and found._state.adding is False and found._state.db == "default"
        for field in Payin._meta.concrete_fields:
            value, expected = getattr(found, field.attname), getattr(payin, field.attname)
            assert (value, type(value), getattr(value, "tzinfo", None)) == (
                expected, type(expected), getattr(expected, "tzinfo", None)), field.name
        assert payin_serialize(found) == payin_serialize(payin)


def test_the_scoped_get_finds_nothing_outside_the_merchant_and_mode(merchant_with_charges):
    payin = Payin.objects.filter(merchant=merchant_with_charges, livemode=False).first()
    other = Payin.objects.exclude(merchant=merchant_with_charges).get()

    assert payin_scoped(merchant_id=merchant_with_charges.pk, livemode=True, payin_id=payin.pk) is None
    assert payin_scoped(merchant_id=other.merchant_id, livemode=False, payin_id=payin.pk) is None
    assert payin_scoped(merchant_id=merchant_with_charges.pk, livemode=False, payin_id=other.pk) is None
    assert payin_scoped(merchant_id=merchant_with_charges.pk, livemode=False, payin_id=uuid.uuid4()) is None


def test_the_scoped_get_reads_the_primary_key_index(merchant_with_charges):
    payin = Payin.objects.filter(merchant=merchant_with_charges).first()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + SCOPED_GET, [payin.pk, merchant_with_charges.pk, False])
        plan = "\n".join(line for line, in cursor.fetchall())

    # By the id, in an index's conditions (the primary key's; PostgreSQL 18 may tie it with a skip scan of another
    # index that ends with the id), never by filtering the merchant's rows for it.
    assert plan.startswith("Index Scan using "), plan
    assert "id = '" in plan.split("Index Cond:")[1].splitlines()[0], plan
