"""Schemathesis hooks for `tests/fuzz`: the test data that the OpenAPI schema cannot describe.

The schema says all that JSON Schema can say about a request (lengths, patterns, enums, required fields, one variant
per payment method and per Pix key type); what it cannot say is written in its descriptions: check digits, a date
relative to today, a card token or a cursor that must have been returned before, an Idempotency-Key that must be new,
a beneficiary document equal to the key, a webhook host that must be public. Schemathesis draws such values at random,
and the service rightly refuses them, so a *positive* case (one the fuzzer claims valid) gets them made true here,
keeping everything else it drew. Negative parts are left alone: what makes them invalid stays invalid. Every value
written here matches the schema as the drawn one did, and nothing here touches a response or a check.

The test passes, in environment variables, the service (FUZZ_BASE_URL, FUZZ_AUTH) and the objects it created through
the API: FUZZ_CARD_TOKEN, FUZZ_CURSORS (list path -> a nextCursor of it), FUZZ_IDS (path parameter -> ids).
"""

from __future__ import annotations

import hashlib
import ipaddress
import itertools
import json
import os
import re
import socket
import uuid
from datetime import date, datetime, timedelta
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import ZoneInfo

import requests
import schemathesis
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import TestPhase

BASE_URL = os.environ.get("FUZZ_BASE_URL", "")
AUTH = tuple(os.environ.get("FUZZ_AUTH", ":").split(":", 1))
CARD_TOKEN = os.environ.get("FUZZ_CARD_TOKEN", "")
CURSORS: dict[str, str] = json.loads(os.environ.get("FUZZ_CURSORS", "{}"))
IDS: dict[str, list[str]] = json.loads(os.environ.get("FUZZ_IDS", "{}"))

# SPEC §3.7: the numbers test mode accepts (the service's own list is not read: this is the oracle's copy).
AMEX_TEST_CARDS = ["378282246310005"]
TEST_CARDS = ["4111111111111111", "5555555555554444", "6362970000457013", "6062825624254001", "4000000000000002",
              "4000000000009995", "4000000000000069", "4000000000000127", "4000000000000119"]
_keys = itertools.count(1)
_RUN = uuid.uuid4().hex[:6]  # keys stay new against a database that outlives the run (24 h of stored keys)


def _pick(options: list, seed: object) -> object:
    """A choice that depends only on the drawn value, so a case replays the same."""
    digest = hashlib.sha256(repr(seed).encode()).digest()
    return options[int.from_bytes(digest[:4], "big") % len(options)]


def _positive(case: schemathesis.Case, location: ParameterLocation) -> bool:
    meta = case.meta
    return meta is None or not meta.is_negative_at(location)


# --- CPF and CNPJ (an independent implementation of the check digits) ------------------------------------------------
def _mod11(values: list[int], weights: list[int]) -> int:
    remainder = sum(v * w for v, w in zip(values, weights, strict=True)) % 11
    return 0 if remainder < 2 else 11 - remainder


def _cpf(base: str) -> str:
    digits = [int(c) for c in base]
    first = _mod11(digits, list(range(10, 1, -1)))
    return base + str(first) + str(_mod11([*digits, first], list(range(11, 1, -1))))


def _cnpj(base: str) -> str:
    values = [ord(c) - 48 for c in base]
    first = _mod11(values, [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2])
    return base + str(first) + str(_mod11([*values, first], [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]))


def _valid_document(value: str) -> str:
    """The drawn document with its check digits made right (and not one digit repeated)."""
    plain = value.translate(str.maketrans("", "", ".-/ ")).upper()
    if len(plain) == 11:
        base = plain[:9] if len(set(plain[:9])) > 1 else "1" + plain[1:9].replace("1", "2")
        return _cpf(base)
    base = plain[:12] if len(set(plain[:12])) > 1 else "A" + plain[1:12]
    return _cnpj(base)


# --- Cards, dates, URLs, metadata ------------------------------------------------------------------------------------
def _card(card: dict) -> None:
    if "token" in card:
        card["token"] = CARD_TOKEN
        return
    number = card.get("number")
    if isinstance(number, str):
        card["number"] = _pick(AMEX_TEST_CARDS if number.startswith(("34", "37")) else TEST_CARDS, number)
    month, year = card.get("expirationMonth"), card.get("expirationYear")
    if isinstance(month, str) and isinstance(year, str) and year.isdigit():
        today = date.today()
        full_year = int(year) + 2000 if len(year) == 2 else int(year)
        if (full_year, int(month)) < (today.year + 1, today.month):  # expired, or about to be during the run
            future = today.year + 1 + int(year) % 5
            card["expirationYear"] = str(future)[-len(year):]


def _due_date(options: dict) -> None:
    value = options.get("dueDate")
    if isinstance(value, str):
        today = datetime.now(ZoneInfo("America/Sao_Paulo")).date()
        drawn = date.fromisoformat(value)
        if not today <= drawn <= today + timedelta(days=365):
            options["dueDate"] = (today + timedelta(days=1 + drawn.toordinal() % 364)).isoformat()


PUBLIC_ADDRESS = "93.184.216.34"


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    host = host.strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))  # 127.1, 0x7f.1, 2130706433 are addresses too
        except OSError:
            return None


def _public_host(host: str) -> bool:
    host = host.lower()
    if len(host.rstrip(".")) > 253 or host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost"):
        return False
    address = _address(host)
    # A name: whatever it resolves to is the service's business at the time.
    return address is None or (address.is_global and not (address.is_multicast or address.is_reserved))


def _schema_valid_url(case: schemathesis.Case, url: str) -> bool:
    """Whether `url` fits the schema's webhookUrl (the same in every body that has one)."""
    components = case.operation.schema.raw_schema["components"]["schemas"]
    schema = next(c["properties"]["webhookUrl"] for c in components.values() if "webhookUrl" in c.get("properties", {}))
    return len(url) <= schema["maxLength"] and re.fullmatch(schema["pattern"], url) is not None


def _webhook_url(case: schemathesis.Case, body: dict, *, positive: bool) -> None:
    """In a positive case, a host that must be public made public. In any case, most names replaced by a public
    address, so that the run does not wait on DNS: the sandbox's resolver loses a few percent of its answers, and the
    service then waits its DNS timeout; one name in eight is kept, so the lookup is still exercised. A URL that does
    not fit the schema is left as it is (it may be what makes the case negative), and so is one the change would
    make unfit."""
    url = body.get("webhookUrl")
    if not isinstance(url, str) or not _schema_valid_url(case, url):
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    private = positive and not _public_host(host)
    skip_dns = _address(host) is None and hashlib.sha256(host.encode()).digest()[0] % 8 != 0
    if private or skip_dns:
        port = f":{parts.port}" if parts.port is not None else ""
        replaced = urlunsplit((parts.scheme, f"{PUBLIC_ADDRESS}{port}", parts.path, parts.query, parts.fragment))
        if _schema_valid_url(case, replaced):
            body["webhookUrl"] = replaced


def _metadata(body: dict) -> None:
    """Keys of 1 to 40 characters without NUL (the schema's OpenAPI 3.0 has no `propertyNames` to say so)."""
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        repaired = {}
        for index, (key, value) in enumerate(metadata.items()):
            fixed = key.replace("\x00", "")[:40] or "k"
            if fixed in repaired:
                fixed = f"{fixed[:36]}{index:04d}"  # metadata has at most 20 keys: 4 digits make it unique
            repaired[fixed] = value
        body["metadata"] = repaired


# --- Refunds: what is left of the charge -----------------------------------------------------------------------------
REFUND = ("POST", "/payin/{payin_id}/refunds")


def _refundable(case: schemathesis.Case) -> int | None:
    """What is left to refund of the case's charge (asked of the API now, as the state is the service's), or None
    when the charge does not exist or cannot be refunded (404 and 409: answers a valid request may get)."""
    response = requests.get(f"{BASE_URL}/payin/{case.path_parameters.get('payin_id')}", auth=AUTH, timeout=30)
    if response.status_code != 200:
        return None
    charge = response.json()
    if charge["paymentMethod"] == "BOLETO" or charge["status"] not in ("PAID", "PARTIALLY_REFUNDED"):
        return None
    return charge["amount"] - charge["refundedAmount"]


def _is_refund(case: schemathesis.Case) -> bool:
    return (case.method.upper(), case.operation.path) == REFUND and isinstance(case.path_parameters, dict)


@schemathesis.hook
def filter_case(context: schemathesis.HookContext, case: schemathesis.Case) -> bool:
    # A charge whose whole amount is refunded or being refunded (a Pix refund waits for the rail, and no worker runs
    # here) still says PAID: any refund of it is "more than what is left", 400 by the SPEC. No valid body exists.
    if _is_refund(case) and _positive(case, ParameterLocation.BODY) and _positive(case, ParameterLocation.PATH):
        return _refundable(case) != 0
    # POST /payin's items must add up to its amount (ADR 0077), which no schema states. The coverage phase varies the
    # amount of the schema's example to its bounds and sends the example's items as they are: with schemathesis
    # 4.32.5 map_case's repair (_items_total) did not reach the request sent, so such a case would be a valid body
    # "refused". It is left out; every other coverage case of POST /payin, and the fuzzing phase, run.
    if (case.method.upper(), case.operation.path) == ("POST", "/payin") and case.meta is not None \
            and case.meta.phase.name == TestPhase.COVERAGE and isinstance(case.body, dict) \
            and _items_in_bounds(case, case.body) and not _items_add_up(case.body):
        return False
    return True


def _items_add_up(body: dict) -> bool:
    return sum(item["quantity"] * item["unitPrice"] for item in body["items"]) == body["amount"]


# --- Hooks -----------------------------------------------------------------------------------------------------------
def _repair_payin(case: schemathesis.Case, body: dict) -> None:
    customer = body.get("customer")
    if isinstance(customer, dict) and isinstance(customer.get("document"), str):
        customer["document"] = _valid_document(customer["document"])
    if isinstance(body.get("card"), dict):
        _card(body["card"])
    if isinstance(body.get("boleto"), dict):
        _due_date(body["boleto"])
    _webhook_url(case, body, positive=True)
    _metadata(body)
    _items_total(body)


def _items_total(body: dict) -> None:
    """Items that add up to the amount (ADR 0077), which no JSON schema can say: the first item takes what the others
    leave (one unit of it), or, when the others pass the amount, the whole amount, the others becoming free."""
    amount, items = body.get("amount"), body.get("items")
    if not (isinstance(amount, int) and not isinstance(amount, bool) and amount > 0 and isinstance(items, list)
            and items and all(isinstance(item, dict) for item in items)):
        return
    others = items[1:]
    if not all(isinstance(item.get(name), int) for item in others for name in ("quantity", "unitPrice")):
        return
    rest = sum(item["quantity"] * item["unitPrice"] for item in others)
    if rest > amount:
        for item in others:
            item["unitPrice"] = 0
        rest = 0
    items[0]["quantity"], items[0]["unitPrice"] = 1, amount - rest


def _items_in_bounds(case: schemathesis.Case, body: dict) -> bool:
    """Whether every item's quantity and unitPrice, and the amount, are within the schema's bounds."""
    components = case.operation.schema.raw_schema["components"]["schemas"]
    item = next(c["properties"] for c in components.values()  # the request's item, not the answer's (no bounds)
                if "minimum" in c.get("properties", {}).get("unitPrice", {}))
    quantity, price = item["quantity"], item["unitPrice"]
    items, amount = body.get("items"), body.get("amount")

    def within(value: object, bounds: dict) -> bool:
        return type(value) is int and bounds.get("minimum", value) <= value <= bounds.get("maximum", value)

    return within(amount, price) and isinstance(items, list) and all(
        isinstance(entry, dict) and within(entry.get("quantity"), quantity) and within(entry.get("unitPrice"), price)
        for entry in items)


def _repair_payout(case: schemathesis.Case, body: dict) -> None:
    key_type, key = body.get("pixKeyType"), body.get("pixKey")
    if key_type in ("CPF", "CNPJ") and isinstance(key, str):
        body["pixKey"] = key = _valid_document(key)
    if isinstance(body.get("beneficiaryDocument"), str):
        body["beneficiaryDocument"] = key if key_type in ("CPF", "CNPJ") else _valid_document(
            body["beneficiaryDocument"])
    _webhook_url(case, body, positive=True)
    _metadata(body)


@schemathesis.hook
def map_path_parameters(context: schemathesis.HookContext, path_parameters: dict | None) -> dict | None:
    # Half of the drawn ids (those that are ids: a negative draw is left alone) become ids of objects that exist.
    for name, value in (path_parameters or {}).items():
        if IDS.get(name) and isinstance(value, str) and _is_uuid(value) and _pick([True, False], value):
            path_parameters[name] = _pick(IDS[name], value)
    return path_parameters


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


@schemathesis.hook
def map_case(context: schemathesis.HookContext, case: schemathesis.Case) -> schemathesis.Case:
    operation = (case.method.upper(), case.operation.path)
    if _positive(case, ParameterLocation.HEADER) and case.headers and "Idempotency-Key" in case.headers:
        # A new request needs a new key: a drawn key that was drawn before would rightly be 422.
        key = f"{_RUN}{next(_keys)}:{case.headers['Idempotency-Key']}"
        case.headers["Idempotency-Key"] = key[:255].rstrip(" ")
    if _positive(case, ParameterLocation.QUERY) and case.query and case.query.get("cursor"):
        case.query["cursor"] = CURSORS[case.operation.path]
    if _is_refund(case) and _positive(case, ParameterLocation.BODY) and isinstance(case.body, dict):
        left = _refundable(case)
        amount = case.body.get("amount")
        if left and isinstance(amount, int) and amount > left:
            case.body["amount"] = 1 + amount % left
    if isinstance(case.body, dict) and operation in (("POST", "/payin"), ("POST", "/payout")):
        if _positive(case, ParameterLocation.BODY):
            (_repair_payin if operation == ("POST", "/payin") else _repair_payout)(case, case.body)
        else:
            _webhook_url(case, case.body, positive=False)
    return case
