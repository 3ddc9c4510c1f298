"""The fast path of POST /payout's validation: for every body, the serializer's own result or no answer at all.

A corpus of valid bodies (every key type, with and without the optional fields) and deterministic mutations of each
(every field removed, or replaced by hostile values and near misses, an unknown field added) goes through both
paths: whatever the fast path accepts, the serializer accepts with an identical result, and whatever the serializer
refuses, the fast path leaves to it.
"""

import copy
import json
from collections import OrderedDict

import pytest

from accounts.models import Merchant
from core.errors import DomainError
from core.formats import documents
from payments.formats.pix_keys import PIX_KEY_TYPES
from payments.payouts.validation import _fast_validate, _validate_with_serializer, payout_request_validate

MAXIMUM = 5_000_000
MISSING = object()
EVP = "5f0c1a9e-3b7d-4c2e-9a41-7d2b6e8f0c13"  # a uuid4, fixed so that the corpus is the same on every run
REFERENCE = "9b2e4c6a8d0f1e3c5a7b9d1f3e5c7a9b"
CPF = "52998224725"
CNPJ = "11222333000181"
CNPJ_ALPHANUMERIC = "12ABC34501DE35"
# A valid CNPJ with "SS" in it: "ß".upper() is "SS", but documents are upper-cased in ASCII only, so "12abß3450de.."
# is refused by both paths (it is among the mutations), while "12abss3450de.." is this CNPJ.
CNPJ_SS = "12ABSS3450DE" + documents.cnpj_check_digits("12ABSS3450DE")
EMAIL_77 = "a" * 20 + "@" + "b" * 52 + ".com"


def body(**fields) -> dict:
    return {"amount": 1, "pixKeyType": "EVP", "pixKey": EVP, "referenceId": REFERENCE, **fields}


VALID_BODIES = [
    body(),
    body(pixKey=EVP.upper(), amount=MAXIMUM),
    body(pixKeyType="CPF", pixKey=CPF),
    body(pixKeyType="CPF", pixKey=CPF, beneficiaryName="Ana Souza", beneficiaryDocument="529.982.247-25"),
    body(pixKeyType="CNPJ", pixKey=CNPJ, beneficiaryDocument=CNPJ, description="Saque semanal"),
    body(pixKeyType="CNPJ", pixKey=CNPJ_ALPHANUMERIC, beneficiaryDocument="12.abc.345/01de-35",
         metadata={"batch": "7"}),
    body(pixKeyType="EMAIL", pixKey="Ana.Souza@Example.com", description="  Saque  ", metadata={"a": "1", "b": ""}),
    body(pixKeyType="EMAIL", pixKey=EMAIL_77, beneficiaryDocument="111.444.777-35"),
    body(pixKeyType="PHONE", pixKey="+5511987654321", beneficiaryName="  Ana  "),
    body(pixKeyType="PHONE", pixKey="552133334444", beneficiaryDocument="11.222.333/0001-81", amount=123_456),
    body(beneficiaryName="Ana Souza", beneficiaryDocument=CNPJ_ALPHANUMERIC, description="Saque",
         metadata={"order": "42", "source": "api"}),
    body(beneficiaryName="", description=" \t ", metadata={}),
    body(referenceId="A-z_0.9:x" + "y" * 55, beneficiaryName="x" * 120, description="x" * 140),
    body(metadata={f"k{i:02d}" + "k" * 37: "v" * 500 for i in range(20)}),
    body(pixKeyType="CNPJ", pixKey=CNPJ_SS, beneficiaryDocument="12abss3450de" + CNPJ_SS[-2:]),
]
WEBHOOK_BODY = body(webhookUrl="https://hooks.example.com/payout")

NASTY = [
    None, "", " ", "  x  ", 0, -1, 1.5, "100", True, False, [], {}, "a" * 10_000, "\x00", "é", "１２３", "\ud800",
    2**63, 5000.0, "x\x00", "\t\n", "\u00a0x\u3000",
]
VARIANTS = {
    # 10**5000 is not JSON Python can parse, but the amount field refuses it (only there: str() of it raises).
    "amount": [1, 2, 1000, 1001, MAXIMUM - 1, MAXIMUM, MAXIMUM + 1, 2**63 - 1, -(2**63), 10**5000, "5000", "1.0"],
    "pixKeyType": [*PIX_KEY_TYPES, "evp", "Cpf", " CPF", "CPF ", "RANDOM"],
    "pixKey": [
        CPF, "529.982.247-25", "52998224726", "11111111111", "５２９９８２２４７２５",
        CNPJ, CNPJ_ALPHANUMERIC, CNPJ_ALPHANUMERIC.lower(), "11.222.333/0001-81", "12ABC34501DE36", CNPJ_SS,
        "Ana@Example.com", "ANA@EXAMPLE.COM", "ana@example.com", EMAIL_77, "c" + EMAIL_77, "ana@localhost",
        "ana@[127.0.0.1]", "ana..souza@example.com", "ána@example.com", " ana@example.com", "ana@example.com\n",
        "+5511987654321", "5511987654321", "11987654321", "+55 11 98765-4321", "+5511887654321", "+5501987654321",
        "+551133334444", "551133334444",
        EVP, EVP.upper(), EVP.replace("-", ""), "{" + EVP + "}", EVP + "\n", " " + EVP,
    ],
    "referenceId": [REFERENCE.upper(), "a" * 64, "a" * 65, "ref 1", "ref\n", "saque-ção", "A-z_0.9:x"],
    "beneficiaryName": ["Ana", "x" * 120, "x" * 121, " " + "x" * 120 + " ", "Ana\ud800", "\u2003"],
    "beneficiaryDocument": [
        CPF, "529.982.247-25", " 52998224725 ", "52998224726", "11144477735", CNPJ, "11.222.333/0001-81",
        CNPJ_ALPHANUMERIC, "12.abc.345/01de-35", CNPJ_SS, "12abß3450de" + CNPJ_SS[-2:], ". - /", "529 982 247 25",
    ],
    "description": ["Saque", "x" * 140, "x" * 141, "  " + "x" * 140 + "  ", "Saque\ud800"],
    "metadata": [
        {"k": "v"}, {f"k{i}": "v" for i in range(20)}, {f"k{i}": "v" for i in range(21)}, {"k" * 40: "v"},
        {"k" * 41: "v"}, {"": "v"}, {"k": "v" * 500}, {"k": "v" * 501}, {"k": 1}, {"k": None}, {"k\x00": "v"},
        {"k": "\ud800"}, {1: "v"}, {"k": {"n": "v"}}, {"k": ["v"]}, OrderedDict(k="v"), "k=v",
    ],
    "webhookUrl": ["https://hooks.example.com/payout", "http://hooks.example.com/payout", "https://10.0.0.1/"],
}
UNKNOWN_FIELDS = [("currency", "BRL"), ("Amount", 1), ("pixkey", EVP), ("", "x")]


class _Str(str):
    pass


def mutations(base: dict) -> list[dict]:
    """Every field removed, then set to each hostile value and each near miss; an unknown field; odd containers."""
    bodies = []
    for name, variants in VARIANTS.items():
        for value in [MISSING, *NASTY, *variants]:
            mutated = {key: item for key, item in base.items() if key != name}
            if value is not MISSING:
                mutated[name] = value
            bodies.append(mutated)
    bodies += [{**base, name: value} for name, value in UNKNOWN_FIELDS]
    bodies += [OrderedDict(base), {key: _Str(item) if isinstance(item, str) else item for key, item in base.items()},
               [base], None, ""]
    return bodies


def both_paths(data, merchant: Merchant) -> tuple[dict | None, dict | None]:
    """(fast path's result, serializer's result or None when it refuses), each given its own copy of `data`."""
    fast = _fast_validate(copy.deepcopy(data), merchant=merchant)
    try:
        slow = _validate_with_serializer(copy.deepcopy(data), merchant=merchant)
    except DomainError:
        slow = None
    return fast, slow


def disagreement(data, merchant: Merchant) -> str | None:
    fast, slow = both_paths(data, merchant)
    if fast is None:
        return None
    if slow is None:
        return f"fast path accepted what the serializer refuses: {data!r:.300}"
    if fast != slow or json.dumps(fast, default=str) != json.dumps(slow, default=str):
        return f"different results for {data!r:.300}: {fast!r} != {slow!r}"
    if [type(value) for value in fast.values()] != [type(value) for value in slow.values()]:
        return f"different types for {data!r:.300}"
    return None


@pytest.fixture(autouse=True)
def _public_dns_and_limits(settings, public_webhook_targets):
    settings.PAYOUT_MAX_AMOUNT = MAXIMUM


@pytest.mark.parametrize("base", VALID_BODIES, ids=[f"{b['pixKeyType']}-{i}" for i, b in enumerate(VALID_BODIES)])
def test_valid_body_takes_the_fast_path(base):
    sent = copy.deepcopy(base)

    fast, slow = both_paths(base, Merchant())
    result = payout_request_validate(base, merchant=Merchant())

    assert fast is not None
    assert fast == slow == result
    assert json.dumps(fast, default=str) == json.dumps(slow, default=str)
    assert base == sent  # left as sent


def test_every_key_type_takes_the_fast_path():
    assert {b["pixKeyType"] for b in VALID_BODIES if _fast_validate(b, merchant=Merchant())} == set(PIX_KEY_TYPES)


def test_a_body_with_webhook_url_goes_to_the_serializer():
    fast, slow = both_paths(WEBHOOK_BODY, Merchant())

    assert fast is None
    assert slow["webhook_url"] == "https://hooks.example.com/payout"
    assert payout_request_validate(WEBHOOK_BODY, merchant=Merchant()) == slow


@pytest.mark.parametrize("base", [*VALID_BODIES, WEBHOOK_BODY],
                         ids=[f"{b['pixKeyType']}-{i}" for i, b in enumerate([*VALID_BODIES, WEBHOOK_BODY])])
def test_mutations_get_the_serializers_answer_or_none(base):
    bodies = mutations(base)

    problems = [problem for data in bodies if (problem := disagreement(data, Merchant()))]
    taken = sum(_fast_validate(copy.deepcopy(data), merchant=Merchant()) is not None for data in bodies)

    assert problems == []
    assert taken >= (1 if "webhookUrl" in base else 20)  # the fast path did run on this corpus


@pytest.mark.parametrize("merchant_max", [0, 1, 1000, MAXIMUM + 1, 2**63 - 1])
def test_amount_against_the_merchants_own_maximum(merchant_max):
    merchant = Merchant(payout_max_amount=merchant_max)
    bodies = [body(amount=amount) for amount in [*VARIANTS["amount"], merchant_max, merchant_max + 1, 2**63]]

    problems = [problem for data in bodies if (problem := disagreement(data, merchant))]

    assert problems == []
    assert _fast_validate(body(amount=merchant_max + 1), merchant=merchant) is None
    assert (_fast_validate(body(amount=merchant_max), merchant=merchant) is None) == (merchant_max == 0)


def test_the_public_function_reports_the_serializers_errors():
    data = body(amount=0, pixKey="nope", beneficiaryDocument=CPF, currency="BRL")

    with pytest.raises(DomainError) as public:
        payout_request_validate(data, merchant=Merchant())
    with pytest.raises(DomainError) as serializer:
        _validate_with_serializer(data, merchant=Merchant())

    assert (public.value.code, public.value.details) == (serializer.value.code, serializer.value.details)
