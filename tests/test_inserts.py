"""core.inserts: rows written together are written all or none, and rows of one model keep their order."""

from __future__ import annotations

import uuid
from datetime import date
from types import SimpleNamespace

import pytest
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DataError, IntegrityError, connection, transaction

from core import inserts, readback
from core.numbered import _NUMBERED_CACHED_LENGTH, numbered
from payments.ledger import services as ledger
from payments.models import AccountKind, LedgerEntry, LedgerTransaction, LineType
from webhooks.models import Event


def event(merchant, **fields) -> Event:
    return Event(merchant=merchant, livemode=False, type="payin.created", object_id="x", payload={"a": [1, "é"]},
                 **fields)


def test_rows_are_written_with_every_value(merchant):
    first, second = event(merchant), event(merchant)
    inserts.insert(first, second)
    stored = Event.objects.filter(pk__in=[first.pk, second.pk]).order_by("created_at", "pk")
    assert [(e.pk, e.merchant_id, e.type, e.payload, e.created_at) for e in stored] == [
        (first.pk, merchant.pk, "payin.created", {"a": [1, "é"]}, first.created_at),
        (second.pk, merchant.pk, "payin.created", {"a": [1, "é"]}, second.created_at)]
    assert not first._state.adding


def test_one_failing_row_leaves_none_behind(merchant):
    taken = event(merchant)
    inserts.insert(taken)
    fresh = event(merchant)
    with pytest.raises(IntegrityError), transaction.atomic():
        inserts.insert(fresh, event(merchant, id=taken.pk))  # the second one's id is taken
    assert not Event.objects.filter(pk=fresh.pk).exists()


def test_a_failing_statement_before_the_rows_leaves_none_behind(merchant):
    taken = event(merchant)
    inserts.insert(taken)
    fresh = event(merchant)
    taken_id = Event._meta.pk.get_db_prep_value(taken.pk, connection)
    with pytest.raises(IntegrityError), transaction.atomic():
        inserts.insert(fresh, before=(("UPDATE webhooks_event SET type = NULL WHERE id = %s", [taken_id]),))
    assert not Event.objects.filter(pk=fresh.pk).exists()
    assert Event.objects.get(pk=taken.pk).type == "payin.created"


def test_ledger_entries_keep_the_order_of_their_legs(merchant):
    with transaction.atomic():
        movement = ledger.post(merchant=merchant, livemode=False, object_type="adjustment", object_id="1", legs=[
            ledger.Leg(AccountKind.AVAILABLE, 5, LineType.ADJUSTMENT),
            ledger.Leg(AccountKind.AVAILABLE, 7, LineType.ADJUSTMENT),
            ledger.Leg(AccountKind.ADJUSTMENTS, -12, LineType.ADJUSTMENT),
        ])
    entries = list(LedgerEntry.objects.filter(transaction=movement).order_by("pk"))
    assert [(e.amount, e.balance_after) for e in entries] == [(5, 5), (7, 12), (-12, -12)]
    assert LedgerTransaction.objects.filter(pk=movement.pk).exists()


def _comparable(value):
    """A parameter by what it means: JSON wrappers by their content and class (Django's JSON adapter makes a new
    wrapper each time), integers by value (on PostgreSQL Django wraps them in psycopg's Int2/Int4/Int8, which name
    a size the column's type decides anyway)."""
    if hasattr(value, "obj"):
        return type(value).__name__, value.obj
    if isinstance(value, int) and not isinstance(value, bool):
        return int, int(value)
    return type(value), value


@pytest.mark.parametrize("late", [False, True], ids=["pending", "paid"])
def test_parameters_are_what_djangos_conversion_gives(merchant, late):
    """The plain-field shortcut of `_params` sends exactly what `get_db_prep_save` would, for every column of a
    charge with values of every kind: TextChoices members, JSON, datetimes (UTC and another zone), dates, None in
    JSON, date, datetime and IP columns, a foreign key, an IP."""
    from datetime import date, timedelta
    from datetime import timezone as fixed_zone

    from django.utils import timezone

    from payments.models import Payin, PayinStatus, PaymentMethod

    now = timezone.now()
    elsewhere = now.astimezone(fixed_zone(timedelta(hours=-3)))
    payin = Payin(merchant=merchant, livemode=True, status=PayinStatus.PAID, payment_method=PaymentMethod.BOLETO,
                  amount=12_345, fee=99, reference_id="order-1", description="Café", metadata={"k": "v"},
                  customer={"name": "Ana"}, items=[{"title": "x", "quantity": 1, "unitPrice": 1}],
                  payer_ip="203.0.113.9" if late else None, is_physical_product=True, webhook_url="",
                  public_token="t" * 43, boleto_nosso_numero=7, boleto_due_date=date(2026, 12, 1) if late else None,
                  card={"brand": "visa"} if late else None, paid_at=elsewhere if late else None,
                  created_at=now, updated_at=elsewhere)
    _, fields = inserts._statement(Payin)
    expected = [_comparable(field.get_db_prep_save(field.pre_save(payin, True), connection)) for field in fields]

    assert [_comparable(v) for v in inserts._params(payin)] == expected
    for from_dict in (True, False):  # both ways of reading the attributes
        assert [_comparable(v) for v in inserts._values_written(Payin, from_dict=from_dict)(payin, connection)] \
            == expected
    # An instance without some attribute (a deferred field, read through Django) reads through Django, to the same
    # values.
    loaded = Payin(**{field.attname: getattr(payin, field.attname) for field in fields})
    del loaded.__dict__["description"]
    loaded.refresh_from_db = lambda fields: setattr(loaded, "description", payin.description)
    assert [_comparable(v) for v in inserts._params(loaded)] == expected


def test_json_columns_are_wrapped_directly_only_where_that_is_djangos_whole_conversion():
    """On PostgreSQL a JSONField's dict or list goes straight into psycopg's Jsonb (what Django's four layers of
    conversion end in); another value (a string: JSON text of a string) still takes Django's way, and on SQLite
    (JSON text made by Django) the shortcut is never taken."""
    from django.db import models
    from psycopg.types.json import Jsonb

    from payments.models import Payin

    postgres = connection.vendor == "postgresql"
    assert inserts._json_wrapper(Payin._meta.get_field("metadata"), connection) is (Jsonb if postgres else None)
    assert inserts._json_wrapper(Payin._meta.get_field("payer_ip"), connection) is None
    custom = models.JSONField(encoder=None)
    custom.get_db_prep_save = lambda value, connection: "changed"  # a conversion of its own: not the wrapper's
    assert inserts._json_wrapper(custom, connection) is None
    assert inserts._json_wrapper(models.JSONField(encoder=DjangoJSONEncoder), connection) is None  # its own dumps
    payin = Payin(metadata="text", customer={"a": 1}, items=[1])
    fields = inserts._statement(Payin)[1]
    values = dict(zip([f.attname for f in fields], inserts._params(payin), strict=True))
    for name in ("metadata", "customer", "items"):
        made = Payin._meta.get_field(name).get_db_prep_save(getattr(payin, name), connection)
        assert _comparable(values[name]) == _comparable(made)


@pytest.mark.parametrize("value", [
    {"name": "Zoë \u2028 ☕", "n": [1, -2, 2**63 - 1, None, True, 0.5], "nested": {"": [{}]}},
    {"big": 2**70}, ["a", {"b": "c"}],
], ids=["json types", "beyond 64 bits", "list"])
def test_json_text_means_what_the_standard_library_writes(value):
    """`_json_text` (orjson where it writes the same JSON): the same value read back as the standard library's text
    gives; an integer orjson cannot write goes to the standard library."""
    import json

    text = inserts._json_text(value)
    assert json.loads(text) == json.loads(json.dumps(value)) == value


def test_json_text_raises_what_the_standard_library_raises_for_a_type_json_lacks():
    with pytest.raises(TypeError):
        inserts._json_text({"when": date(2026, 1, 1)})
    with pytest.raises(TypeError):
        inserts._json_text({object(): "a key JSON cannot have"})


def test_json_columns_written_by_the_shortcut_read_back_as_sent(merchant):
    stored = event(merchant)
    stored.payload = {"object": {"name": "Zoë ☕", "items": [{"q": 2**40}], "none": None}, "big": 2**70}
    inserts.insert(stored)
    assert Event.objects.get(pk=stored.pk).payload == stored.payload


def test_only_fields_whose_conversion_keeps_the_value_are_plain():
    """Derived, not listed: on PostgreSQL an aware datetime goes as it is (on SQLite it becomes text, so it is not
    plain there); a JSON, date or IP column keeps only None; an auto_now field is never plain (pre_save writes it)."""
    from datetime import datetime

    from django.db import models

    from payments.models import Payin

    kinds = dict(zip([f.name for f in inserts._statement(Payin)[1]],
                     inserts._plain_types(Payin), strict=True))
    postgres = connection.vendor == "postgresql"
    assert kinds["created_at"] is (datetime if postgres else type(None))
    assert (kinds["card"], kinds["boleto_due_date"], kinds["payer_ip"]) == (type(None),) * 3
    assert (kinds["amount"], kinds["reference_id"], kinds["livemode"]) == (int, str, bool)
    stamped = models.DateTimeField(auto_now=True)
    stamped.set_attributes_from_name("stamped")
    assert inserts._plain_type(stamped, connection) is None


def test_a_then_query_runs_in_the_same_statement_and_its_error_leaves_no_row(merchant):
    written = event(merchant)
    assert inserts.insert(written, then=("SELECT 40 + %s", [2])) == (42,)
    assert Event.objects.filter(pk=written.pk).exists()

    refused = event(merchant)
    with pytest.raises(DataError), transaction.atomic():
        inserts.insert(refused, then=("SELECT 1 / %s", [0]))  # the main query fails: the rows go with it
    assert not Event.objects.filter(pk=refused.pk).exists()


def test_placeholders_are_numbered_as_psycopg_numbers_them():
    assert numbered("SELECT %s, '100%%', %s") == "SELECT $1, '100%', $2"
    long = "SELECT " + ", ".join(["%s"] * 5000)  # beyond the numbered statements kept: numbered all the same
    assert len(long) > _NUMBERED_CACHED_LENGTH
    assert numbered(long) == "SELECT " + ", ".join(f"${n}" for n in range(1, 5001))
    for stray in ("SELECT 5 %d", "SELECT '%'"):
        with pytest.raises(ValueError, match="only %s placeholders"):
            numbered(stray)


def test_a_statement_of_many_values_is_bound_by_the_server_in_order(merchant):
    """More than psycopg's 50 cached values, some repeated and a percent sign among the literals: every value in
    its place."""
    values = [f"v{n}" for n in range(120)]
    sql = "SELECT '%%' || " + " || ".join(["%s::text"] * len(values))
    assert inserts.execute(sql, values, fetch=True) == ("%" + "".join(values),)


def test_then_needs_postgresql(merchant, monkeypatch):
    monkeypatch.setattr(inserts, "connection", SimpleNamespace(vendor="sqlite"))  # refused before any statement
    with pytest.raises(ValueError, match="PostgreSQL"):
        inserts.insert(event(merchant), then=("SELECT 1", []))


def _instance_state(instance) -> tuple:
    """What an instance holds: its attributes (a random default, a fresh UUID or the time now, by its type), the
    related objects it caches (by identity), and its state flags."""
    random_defaults = {field.attname for field in instance._meta.concrete_fields
                       if field.has_default() and callable(field.default) and field.default not in (dict, list)}
    values = {key: type(value) if key in random_defaults else value
              for key, value in vars(instance).items() if key != "_state"}
    cached = {name: id(obj) for name, obj in instance._state.fields_cache.items()}
    return values, cached, instance._state.adding, instance._state.db


def _hot_constructions(merchant) -> list[tuple[type, dict]]:
    """The models `inserts.new` builds on the API's hot paths, with the values those paths give, and variations:
    a foreign key as an object, as an id, as None, fields left to their defaults."""
    from datetime import date

    from django.utils import timezone

    from accounts.models import AccountEvent
    from payments.models import Payin, Payout
    from webhooks.models import Delivery

    now = timezone.now()
    parent = event(merchant)
    movement = LedgerTransaction(merchant=merchant, livemode=False, object_type="payout", object_id="x")
    with transaction.atomic():
        account = ledger.lock(merchant=merchant, livemode=False)[AccountKind.AVAILABLE]
    return [
        (Payin, dict(merchant=merchant, livemode=False, payment_method="PIX", amount=5000, fee=99, reference_id="r",
                     description="", metadata={}, customer={"name": "Ana"}, items=[], payer_ip="203.0.113.9",
                     is_physical_product=False, webhook_url="", public_token="t" * 43, created_at=now,
                     updated_at=now)),
        (Payin, dict(merchant_id=merchant.pk, livemode=True, amount=1, customer={}, items=[])),
        (Payin, dict()),
        (Event, dict(id=parent.pk, merchant=merchant, livemode=False, type="payin.created", object_id="x",
                     payload={"id": "x"}, created_at=now)),
        (Delivery, dict(event=parent, merchant=merchant, livemode=False, endpoint=None, url="https://example.com/h",
                        next_attempt_at=now, created_at=now, enqueued_at=now)),
        (Payout, dict(merchant=merchant, livemode=False, amount=100, fee=0, pix_key="a@b.co",
                      pix_key_normalized="a@b.co", pix_key_type="EMAIL", reference_id="p", external_id="E1",
                      beneficiary_name="", beneficiary_document="", description="", metadata={}, webhook_url="",
                      local_date=date(2026, 11, 28), created_at=now, updated_at=now)),
        (AccountEvent, dict(merchant=None, actor=None, actor_key="pk_test_x", action="payout.created",
                            obj_type="payout", obj_id="1", before=None, after={"amount": 1}, reason="", details={},
                            ip=None, user_agent="")),
        # The worker's ledger movements (payments.ledger.services.post_many).
        (LedgerTransaction, dict(merchant=merchant, livemode=False, object_type="payout", object_id="x",
                                 reference_id="r", description="d")),
        (LedgerEntry, dict(transaction=movement, account=account, amount=-100, line_type=LineType.PAYOUT,
                           balance_after=900, created_at=movement.created_at)),
    ]


def test_new_makes_the_instance_djangos_keyword_path_makes(merchant):
    for model, values in _hot_constructions(merchant):
        made, expected = inserts.new(model, **values), model(**values)
        assert type(made) is model
        assert _instance_state(made) == _instance_state(expected), model.__name__
        for name, obj in made._state.fields_cache.items():  # the related object itself, not a copy
            assert obj is values.get(name, obj)


def test_a_related_object_goes_through_djangos_descriptor_whenever_a_router_is_configured(merchant, monkeypatch):
    """`inserts._link` stands for the descriptor only without database routers: with one, the router decides (here
    it refuses the relation, and `new` raises as Django does)."""
    import copy

    from django.db import router

    from payments.models import Payin
    from webhooks.models import Delivery

    class Refusing:
        def allow_relation(self, obj1, obj2, **hints):
            return False

    assert inserts.new(Payin, merchant=merchant).merchant is merchant
    # Objects of two databases: without routers Django refuses the second one, and so does `new`.
    elsewhere = copy.copy(merchant)
    elsewhere._state = copy.copy(merchant._state)
    elsewhere._state.db = "other"
    for build in (inserts.new, lambda model, **values: model(**values)):
        with pytest.raises(ValueError, match="router prevents"):
            build(Delivery, event=event(merchant), merchant=elsewhere)
    monkeypatch.setitem(router.__dict__, "routers", [Refusing()])
    with pytest.raises(ValueError, match="router prevents"):
        inserts.new(Payin, merchant=merchant)


def test_new_refuses_or_hands_to_django_what_it_does_not_build(merchant):
    from payments.models import Payin

    with pytest.raises(TypeError, match="unexpected keyword"):
        inserts.new(Payin, amount=1, colour="red")
    both = inserts.new(Payin, merchant=merchant, merchant_id=merchant.pk, amount=1)  # Django's own way
    assert (both.merchant_id, both.merchant) == (merchant.pk, merchant)
    with pytest.raises(ValueError, match="must be a"):  # the descriptor's type check still applies
        inserts.new(Payin, merchant=event(merchant), amount=1)


def test_new_builds_from_the_declared_fields_only_what_django_would_write_the_same_way(merchant):
    from accounts.models import KycSubmission
    from payments.models import Payin

    # A field whose attribute is another descriptor (a file's) is written by that descriptor: Django builds those.
    assert inserts._construction(KycSubmission) is None
    # Defaults made anew on each call (a UUID, a dict) are never shared between instances; constant ones are kept.
    first, second = inserts.new(Payin, amount=1), inserts.new(Payin, amount=1)
    assert first.id != second.id and first.metadata == second.metadata == {} and first.metadata is not second.metadata
    djangos = Payin()
    assert (first.status, first.refunded_amount, first.pix_txid, first.description) == (
        djangos.status, djangos.refunded_amount, djangos.pix_txid, djangos.description)


def _returning_all(model) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in model._meta.concrete_fields)
    return f"SELECT {columns} FROM {quote(model._meta.db_table)} WHERE {quote(model._meta.pk.column)} = %s"


def test_returned_makes_the_instance_a_raw_query_makes(merchant):
    """A row with converted columns (JSON; datetimes, which SQLite gives as text) read both ways: the same
    attributes, the same state; no row gives None."""
    stored = event(merchant)
    inserts.insert(stored)
    sql = _returning_all(Event)
    pk = Event._meta.pk.get_db_prep_value(stored.pk, connection)
    mine = readback.returned(Event, sql, [pk])
    djangos = next(iter(Event.objects.raw(sql, [pk])))
    assert _instance_state(mine) == _instance_state(djangos)
    assert (mine.payload, mine.created_at, mine.merchant_id) == ({"a": [1, "é"]}, stored.created_at, merchant.pk)
    assert readback.returned(Event, sql, [Event._meta.pk.get_db_prep_value(uuid.uuid4(), connection)]) is None


def test_returned_answers_the_row_a_statement_changed(merchant):
    """An UPDATE … RETURNING every column: the row as the statement left it, its change committed with it."""
    stored = event(merchant)
    inserts.insert(stored)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in Event._meta.concrete_fields)
    sql = (f"UPDATE {quote(Event._meta.db_table)} SET {quote('type')} = %s "
           f"WHERE {quote('id')} = %s RETURNING {columns}")
    changed = readback.returned(Event, sql, ["payin.paid", Event._meta.pk.get_db_prep_value(stored.pk, connection)])
    assert (changed.pk, changed.type, changed.payload) == (stored.pk, "payin.paid", {"a": [1, "é"]})
    assert Event.objects.get(pk=stored.pk).type == "payin.paid"


def test_returned_sets_the_columns_after_the_models_as_a_raw_query_sets_its_annotations(merchant):
    first, second = event(merchant), event(merchant)
    inserts.insert(first, second)
    sql = _returning_all(Event).replace(" FROM ", ", 40 + 2 AS answer FROM ").replace(" = %s", " IN (%s, %s)")
    pks = [Event._meta.pk.get_db_prep_value(e.pk, connection) for e in (first, second)]
    mine = sorted(readback.returned_all(Event, sql, pks, extra=("answer",)), key=lambda e: e.created_at)
    djangos = sorted(Event.objects.raw(sql, pks), key=lambda e: e.created_at)
    assert [_instance_state(e) for e in mine] == [_instance_state(e) for e in djangos]
    assert [(e.pk, e.answer) for e in mine] == [(first.pk, 42), (second.pk, 42)]


def test_returned_rows_of_the_workers_models_are_the_instances_a_raw_query_makes(merchant):
    """Built from the declarations (`readback._loader`): a payout (a foreign key, a date, datetimes, JSON; a failed
    one, outside the day's total) and the simulator's books, the same attributes and state as Django's `from_db`
    gives, with nothing cached."""
    from payments.models import Payout, SimulatorOperation

    payout = Payout(merchant=merchant, livemode=False, amount=100, fee=5, pix_key="a@b.co",
                    pix_key_normalized="a@b.co", pix_key_type="EMAIL", reference_id="p-1", external_id="E1",
                    status="FAILED", metadata={"order": [1, "é"]}, local_date=date(2026, 11, 29))
    operation = SimulatorOperation(key=str(uuid.uuid4()), livemode=False, kind="payout", amount=100, status="PENDING")
    inserts.insert(payout, operation)
    for model, pk in ((Payout, payout.pk), (SimulatorOperation, operation.pk)):
        assert readback._loader(model, connection.alias).__name__ == "make"  # not Django's from_db
        sql = _returning_all(model)
        value = model._meta.pk.get_db_prep_value(pk, connection)
        mine = readback.returned(model, sql, [value])
        djangos = next(iter(model.objects.raw(sql, [value])))
        assert _instance_state(mine) == _instance_state(djangos), model.__name__
        assert list(vars(mine)) == list(vars(djangos))  # the attributes in Django's order too
        assert mine._state.fields_cache == {}
    value = Payout._meta.pk.get_db_prep_value(payout.pk, connection)
    assert readback.returned(Payout, _returning_all(Payout), [value]).merchant == merchant  # read on access


def test_returned_rows_of_a_model_with_init_receivers_are_made_by_django(merchant):
    from django.db.models.signals import post_init

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.pk)

    stored = event(merchant)
    inserts.insert(stored)
    post_init.connect(receiver, sender=Event)
    inserts._construction.cache_clear()
    readback._loader.cache_clear()
    try:
        found = readback.returned(Event, _returning_all(Event), [Event._meta.pk.get_db_prep_value(stored.pk,
                                                                                                 connection)])
    finally:
        post_init.disconnect(receiver, sender=Event)
        inserts._construction.cache_clear()
        readback._loader.cache_clear()
    assert seen == [stored.pk] and found.pk == stored.pk and not found._state.adding


def test_a_value_filled_in_later_must_be_one_sent_as_it_is():
    """`inserts.plain_position`: where a field's value sits in a row's values, for a field whose value is sent
    unchanged (an integer); a field converted on its way (JSON, a UUID) is refused."""
    from payments.models import Payin

    fields = [field.attname for field in inserts._statement(LedgerEntry)[1]]
    assert inserts.plain_position(LedgerEntry, "balance_after") == fields.index("balance_after")
    assert inserts.plain_position(LedgerEntry, "account_id") == fields.index("account_id")
    for attname in ("metadata", "merchant_id"):
        with pytest.raises(ValueError, match="converted"):
            inserts.plain_position(Payin, attname)
