import binascii
import random
import re
import string
import uuid
from decimal import Decimal

import pytest

from payments.formats import pix

# Manual de Padrões para Iniciação do Pix, static BR Code example (SPEC §3.4), one line.
BCB_EXAMPLE = ("00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR"
               "5913Fulano de Tal6008BRASILIA62070503***63041D3D")
BCB_KEY = "123e4567-e12b-12d1-a456-426655440000"
TXID = "AbCdEfGhIjKlMnOpQrStUvWx1"


def build(**overrides):
    kwargs = {"pix_key": "loja@example.com", "amount_cents": 10000, "merchant_name": "Loja",
              "merchant_city": "Recife", "txid": TXID}
    return pix.build(**{**kwargs, **overrides})


def with_crc(body):
    """A payload body ending in '6304' completed with its correct CRC, to reach the checks after the CRC one."""
    return body + pix.crc16(body)


# The Central Bank's example


def test_build_reproduces_the_central_bank_example_byte_for_byte():
    payload = pix.build(pix_key=BCB_KEY, amount_cents=None, merchant_name="Fulano de Tal", merchant_city="BRASILIA",
                        txid=pix.NO_TXID)

    assert payload == BCB_EXAMPLE


def test_parse_reads_the_central_bank_example():
    fields = pix.parse(BCB_EXAMPLE)

    assert fields == {
        "00": "01",
        "26": {"00": "br.gov.bcb.pix", "01": BCB_KEY},
        "52": "0000",
        "53": "986",
        "58": "BR",
        "59": "Fulano de Tal",
        "60": "BRASILIA",
        "62": {"05": "***"},
        "63": "1D3D",
    }


# CRC


@pytest.mark.parametrize(("data", "expected"), [
    ("123456789", "29B1"),  # the published check value of CRC-16/CCITT-FALSE
    ("", "FFFF"),  # nothing processed: the initial value
    (BCB_EXAMPLE[:-4], "1D3D"),
])
def test_crc16_known_values(data, expected):
    result = pix.crc16(data)

    assert result == expected


def test_crc16_agrees_with_the_standard_library_on_random_strings():
    # binascii.crc_hqx is the same polynomial, unreflected, with no final xor: an independent implementation.
    rng = random.Random(1)
    samples = ["".join(rng.choices(string.printable, k=rng.randint(0, 200))) for _ in range(500)]

    results = [pix.crc16(s) for s in samples]

    assert results == [f"{binascii.crc_hqx(s.encode(), 0xFFFF):04X}" for s in samples]


def test_crc16_is_zero_padded_to_four_digits():
    result = pix.crc16("h")

    assert result == "0C5E"
    assert binascii.crc_hqx(b"h", 0xFFFF) == 0x0C5E


def test_payload_with_a_leading_zero_crc_keeps_four_digits():
    payload = build(amount_cents=14, txid=pix.NO_TXID)

    assert payload == ("00020126380014br.gov.bcb.pix0116loja@example.com52040000530398654040.145802BR"
                       "5904Loja6006Recife62070503***6304030C")
    assert pix.parse(payload)["63"] == "030C"


# Amount (field 54)


@pytest.mark.parametrize(("cents", "field"), [
    (1, "54040.01"),
    (100, "54041.00"),
    (10000, "5406100.00"),
    (123456789, "54101234567.89"),
    (999_999_999_999, "54139999999999.99"),  # the largest amount that fits EMV's 13 characters
])
def test_amount_is_written_with_two_decimals(cents, field):
    payload = build(amount_cents=cents)

    assert f"5303986{field}5802BR" in payload


def test_amount_none_omits_field_54():
    payload = build(amount_cents=None)

    assert "54" not in pix.parse(payload)


@pytest.mark.parametrize("cents", [0, -1, True, 1_000_000_000_000, 1.5])
def test_build_rejects_amounts_that_are_not_positive_integer_cents(cents):
    with pytest.raises(ValueError, match="amount_cents"):
        build(amount_cents=cents)


# Names and cities


@pytest.mark.parametrize(("text", "max_length", "expected"), [
    ("São Paulo", 15, "Sao Paulo"),  # case kept as given, like the manual's 'Fulano de Tal'
    ("SÃO PAULO", 15, "SAO PAULO"),
    ("Café & Cia Ltda", 25, "Cafe e Cia Ltda"),  # '&' is read as 'e'
    ("PADARIA & CIA", 25, "PADARIA E CIA"),  # ... 'E' in an upper-case name
    ("Loja/Centro (Filial 2)!", 25, "Loja Centro Filial 2"),
    ("  Açaí   do   João  ", 25, "Acai do Joao"),
    ("Oficina Nº 1 - S.A.", 25, "Oficina No 1 - S.A."),
    ("Lucas Dantas de Oliveira Souza Lima", 25, "Lucas Dantas de Oliveira"),  # cut at 25, trailing space trimmed
    ("São Gonçalo do Rio Abaixo", 15, "Sao Goncalo do"),
    ("日本", 25, ""),
])
def test_fold_ascii(text, max_length, expected):
    result = pix.fold_ascii(text, max_length)

    assert result == expected


def test_long_names_and_cities_are_cut_to_25_and_15():
    payload = build(merchant_name="Comércio de Artigos Esportivos Ltda", merchant_city="Santa Rita do Passa Quatro")

    fields = pix.parse(payload)
    assert fields["59"] == "Comercio de Artigos Espor"
    assert fields["60"] == "Santa Rita do P"


@pytest.mark.parametrize(("name", "city"), [("", "Recife"), ("Loja", ""), ("!!!", "Recife"), ("Loja", "  日本 ")])
def test_build_refuses_a_name_or_city_that_folds_to_nothing(name, city):
    with pytest.raises(ValueError, match="name and city"):
        build(merchant_name=name, merchant_city=city)


# txid


def test_txid_generate_gives_distinct_valid_txids():
    txids = [pix.txid_generate() for _ in range(1000)]

    assert all(re.fullmatch(r"[A-Za-z0-9]{25}", t) for t in txids)
    assert all(pix.is_valid_txid(t) for t in txids)
    assert len(set(txids)) == 1000


def test_txid_generate_uses_every_character_in_every_position():
    """Each position is drawn from all 62 characters: a base-62 conversion that padded short numbers, or left the
    first or last position to a narrower range, would miss some (each is missing by chance with probability
    62 x (61/62)**3000, about 10**-19)."""
    txids = [pix.txid_generate() for _ in range(3000)]

    alphabet = set(string.ascii_letters + string.digits)
    assert [position for position in range(25) if {t[position] for t in txids} != alphabet] == []


@pytest.mark.parametrize("value", ["", "***", TXID[:-1], TXID + "a", TXID[:-1] + "-", TXID[:-1] + "é",
                                   TXID[:-1] + "\n", TXID + "\n", TXID[:-1] + "٣"])
def test_is_valid_txid_rejects(value):
    assert not pix.is_valid_txid(value)


@pytest.mark.parametrize("txid", ["", "abc", TXID + "X", "****", TXID[:-1] + "_"])
def test_build_rejects_a_txid_that_is_neither_ours_nor_the_no_txid_marker(txid):
    with pytest.raises(ValueError, match="txid"):
        build(txid=txid)


def test_build_carries_the_txid_in_field_62():
    payload = build(txid=TXID)

    assert pix.parse(payload)["62"] == {"05": TXID}


# TLV


def test_tlv_writes_two_digit_lengths():
    assert pix.tlv("05", "x") == "0501x"
    assert pix.tlv("26", "a" * 99) == "2699" + "a" * 99


@pytest.mark.parametrize(("tag", "value"), [("05", ""), ("05", "a" * 100), ("5", "x"), ("ab", "x"), ("59", "João"),
                                            ("59", "a\nb")])
def test_tlv_rejects_empty_long_or_non_ascii_fields(tag, value):
    with pytest.raises(ValueError, match="TLV"):
        pix.tlv(tag, value)


def test_build_rejects_a_key_too_long_for_template_26():
    # 26 holds 0014br.gov.bcb.pix (18) and 01LL (4): a key may have at most 77 characters.
    ok = build(pix_key="k" * 77)

    assert pix.parse(ok)["26"] == {"00": "br.gov.bcb.pix", "01": "k" * 77}
    with pytest.raises(ValueError, match="TLV field 26"):
        build(pix_key="k" * 78)


@pytest.mark.parametrize("key", ["", " loja@example.com", "loja@example.com\n"])
def test_build_rejects_empty_or_padded_keys(key):
    with pytest.raises(ValueError, match="pix_key"):
        build(pix_key=key)


def _random_text(rng, max_length):
    alphabet = string.ascii_letters + string.digits + " &/.,-'ºªçÇãÃáÁéÉêÊíÍóÓôÔúÚüÜñß日"
    return rng.choice(string.ascii_letters) + "".join(rng.choices(alphabet, k=rng.randint(0, max_length)))


def _random_key(rng):
    printable = string.ascii_letters + string.digits + "!#$%*+./:=?@_~ "
    return rng.choice([
        str(uuid.UUID(int=rng.getrandbits(128))),
        f"{''.join(rng.choices(string.ascii_lowercase, k=rng.randint(1, 60)))}@example.com",
        f"+55{''.join(rng.choices(string.digits, k=11))}",
        "".join(rng.choices(string.digits, k=rng.choice([11, 14]))),
        "k" + "".join(rng.choices(printable, k=rng.randint(0, 75))) + "k",  # up to the 77 characters 26 can hold
    ])


def test_random_payloads_parse_back_to_what_was_built():
    rng = random.Random(20260310)
    cases = [{
        "pix_key": _random_key(rng),
        "amount_cents": rng.choice([None, rng.randint(1, 999), rng.randint(1, 999_999_999_999)]),
        "merchant_name": _random_text(rng, 40),
        "merchant_city": _random_text(rng, 25),
        "txid": rng.choice([pix.NO_TXID, pix.txid_generate()]),
    } for _ in range(1000)]

    parsed = [pix.parse(pix.build(**case)) for case in cases]

    for case, fields in zip(cases, parsed, strict=True):
        expected = {
            "00": "01",
            "26": {"00": "br.gov.bcb.pix", "01": case["pix_key"]},
            "52": "0000",
            "53": "986",
            "58": "BR",
            "59": pix.fold_ascii(case["merchant_name"], 25),
            "60": pix.fold_ascii(case["merchant_city"], 15),
            "62": {"05": case["txid"]},
        }
        if case["amount_cents"] is not None:
            expected["54"] = str(Decimal(case["amount_cents"]).scaleb(-2))  # an oracle independent of format_amount
        assert {k: v for k, v in fields.items() if k != "63"} == expected
        assert re.fullmatch(r"[A-Za-z0-9 .-]{1,25}", fields["59"])
        assert re.fullmatch(r"[A-Za-z0-9 .-]{1,15}", fields["60"])
        assert re.fullmatch(r"[0-9A-F]{4}", fields["63"])


# Parse errors


@pytest.mark.parametrize("payload", [
    BCB_EXAMPLE[:-4] + "1D3E",
    BCB_EXAMPLE[:-4] + "1d3d",  # the CRC is upper-case hex
    BCB_EXAMPLE.replace("Fulano", "Fulana"),  # same lengths, altered content
    BCB_EXAMPLE.replace("0503***", "0503**1"),
])
def test_parse_rejects_a_wrong_crc(payload):
    with pytest.raises(pix.PixCrcError):
        pix.parse(payload)


@pytest.mark.parametrize("cut", [1, 4, 10, 50, len(BCB_EXAMPLE) - 6, len(BCB_EXAMPLE) - 1])
def test_parse_rejects_a_truncated_payload(cut):
    with pytest.raises(pix.PixTlvError):
        pix.parse(BCB_EXAMPLE[:cut])


@pytest.mark.parametrize(("original", "corrupted"), [
    ("5913Fulano", "5912Fulano"),
    ("5913Fulano", "5914Fulano"),
    ("0136123e", "0135123e"),  # inside template 26
    ("6008BRAS", "6099BRAS"),  # runs past the end
    ("6008BRAS", "60x8BRAS"),
    ("5802BR", "5800BR"),  # empty fields are refused
])
def test_parse_rejects_a_wrong_length_field(original, corrupted):
    # A correct CRC over the bad bytes, as a faulty encoder would write it: the structure check must catch it.
    payload = with_crc(BCB_EXAMPLE[:-4].replace(original, corrupted))

    with pytest.raises(pix.PixTlvError):
        pix.parse(payload)


@pytest.mark.parametrize("tail", ["0", " ", "\n", "6304ABCD", "0503abc"])
def test_parse_rejects_anything_after_the_crc(tail):
    with pytest.raises(pix.PixTrailingDataError):
        pix.parse(BCB_EXAMPLE + tail)


@pytest.mark.parametrize(("body", "message"), [
    (BCB_EXAMPLE[:-8].replace("5913Fulano de Tal", "") + "6304", "missing: 59"),
    (BCB_EXAMPLE[:-8].replace("6008BRASILIA", "") + "6304", "missing: 60"),
    (BCB_EXAMPLE[:-8].replace("62070503***", "") + "6304", "missing: 62"),
    (BCB_EXAMPLE[:-8].replace("000201", "") + "6304", "missing: 00"),
    (BCB_EXAMPLE[:-8].replace("000201", "000202") + "6304", "field 00"),
    ("5802BR" + BCB_EXAMPLE[:-8].replace("5802BR", "") + "6304", "field 00"),
    (BCB_EXAMPLE[:-8] + "5802BR6304", "58 appears twice"),
    (BCB_EXAMPLE[:-8].replace("0014br.gov.bcb.pix", "0014br.gov.bcb.pax") + "6304", "field 26"),
    (BCB_EXAMPLE[:-8].replace("62070503***", "62070703***") + "6304", "txid"),
])
def test_parse_rejects_missing_or_wrong_mandatory_fields(body, message):
    payload = with_crc(body)

    with pytest.raises(pix.PixFieldError, match=message):
        pix.parse(payload)


def test_parse_requires_the_crc_field():
    with pytest.raises(pix.PixFieldError, match="missing: 63"):
        pix.parse(BCB_EXAMPLE[:-8])


def test_parse_accepts_the_gui_in_upper_case():
    payload = with_crc(BCB_EXAMPLE[:-4].replace("br.gov.bcb.pix", "BR.GOV.BCB.PIX"))

    fields = pix.parse(payload)

    assert fields["26"]["00"] == "BR.GOV.BCB.PIX"


def test_parse_errors_are_value_errors():
    with pytest.raises(ValueError, match="CRC"):
        pix.parse(BCB_EXAMPLE[:-4] + "0000")


def _crc16_bitwise(data: bytes) -> int:
    """CRC-16/CCITT-FALSE written out bit by bit, straight from its definition (poly 0x1021, init 0xFFFF)."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def test_crc16_matches_the_definition_on_many_inputs():
    generator = random.Random(20261120)
    samples = [b"", b"123456789"] + [bytes(generator.randrange(32, 127) for _ in range(generator.randrange(1, 300)))
                                     for _ in range(500)]
    for sample in samples:
        assert pix.crc16(sample.decode()) == f"{_crc16_bitwise(sample):04X}"
    assert pix.crc16("123456789") == "29B1"  # the catalogue's check value of CRC-16/CCITT-FALSE
