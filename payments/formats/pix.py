"""Pix BR Code: the EMV MPM payload of the Central Bank's "Manual de Padrões para Iniciação do Pix" (SPEC §3.4).

Written here because the public Python Pix libraries emit empty fields and unpadded CRCs, which banking apps reject.
A payload is a chain of TLV fields: 2-digit tag, 2-digit length, value (1 to 99 characters). Everything we emit is
printable ASCII, so a length in characters is also a length in bytes, the unit the CRC and QR readers work in.
"""

import binascii
import functools
import re
import string
import unicodedata

from core.codes import random_code

GUI = "br.gov.bcb.pix"
NO_TXID = "***"  # The manual's marker for "no txid"; its published example uses it.
TXID_LENGTH = 25
NAME_MAX_LENGTH = 25
CITY_MAX_LENGTH = 15
AMOUNT_MAX_LENGTH = 13  # EMV caps field 54 at 13 characters: 9999999999.99

_TAG = re.compile(r"[0-9]{2}")
_TXID = re.compile(rf"[A-Za-z0-9]{{{TXID_LENGTH}}}")
_UNSAFE = re.compile(r"[^A-Za-z0-9 .-]+")
_SPACES = re.compile(r" {2,}")
_TXID_ALPHABET = string.ascii_letters + string.digits
_MANDATORY = ("00", "26", "52", "53", "58", "59", "60", "62", "63")

Fields = dict[str, str | dict[str, str]]


class PixPayloadError(ValueError):
    """A payload that a bank app would refuse; the subclass says why."""


class PixTlvError(PixPayloadError):
    """A tag or length that is not two digits, a zero length, or a length running past the end."""


class PixFieldError(PixPayloadError):
    """A mandatory field missing, repeated or with the wrong value."""


class PixCrcError(PixPayloadError):
    """Field 63 is not the CRC of what precedes it: the payload was altered or cut and re-assembled."""


class PixTrailingDataError(PixPayloadError):
    """Characters after field 63; EMV puts the CRC last, so anything after it is garbage."""


def tlv(tag: str, value: str) -> str:
    """One field. Refuses what the public libraries let through: empty values and values of 100+ characters."""
    if not _TAG.fullmatch(tag):
        raise ValueError(f"TLV tag must be two digits, got {tag!r}")
    if not 1 <= len(value) <= 99:
        raise ValueError(f"TLV field {tag} must hold 1 to 99 characters, got {len(value)}")
    if not (value.isascii() and value.isprintable()):
        raise ValueError(f"TLV field {tag} must be printable ASCII")
    return f"{tag}{len(value):02d}{value}"


def crc16(data: str) -> str:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor) as 4 uppercase hex digits.

    Zero-padded: '0A3F', never 'A3F'. An unpadded CRC shortens field 63 and the whole payload is rejected.
    """
    # binascii's CRC-CCITT (XMODEM) is this CRC with the initial value as a parameter, in C: 500x the Python loop.
    return f"{binascii.crc_hqx(data.encode('utf-8'), 0xFFFF):04X}"


@functools.lru_cache(maxsize=1024)  # a merchant's name and city, folded for every charge: pure, so kept
def fold_ascii(text: str, max_length: int) -> str:
    """Fold a name or city into the characters every bank app renders: letters, digits, space, '.', '-'.

    'São Paulo' → 'Sao Paulo'; case is kept as given, as in the manual's 'Fulano de Tal'. '&' becomes the Portuguese
    'e' ('Café & Cia' → 'Cafe e Cia', 'PADARIA & CIA' → 'PADARIA E CIA') rather than vanishing, so the name still
    reads as the merchant writes it. Any other unsafe character becomes a space, so 'Loja/Centro' stays two words.
    The result may be empty; callers that need a value must check.
    """
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    bare = bare.replace("&", " E " if text.isupper() else " e ")
    safe = _SPACES.sub(" ", _UNSAFE.sub(" ", bare)).strip()
    return safe[:max_length].rstrip()


def format_amount(amount_cents: int) -> str:
    """Integer cents to field 54's decimal text: 1 → '0.01', 10000 → '100.00'. No float ever touches money."""
    return f"{amount_cents // 100}.{amount_cents % 100:02d}"


def txid_generate() -> str:
    """25 random [A-Za-z0-9] from `secrets`: 62**25 (about 2**149) values, so a collision is not a concern and a
    txid cannot be guessed to match someone else's Pix to a charge. The database still holds it unique."""
    return random_code(TXID_LENGTH, _TXID_ALPHABET)


def is_valid_txid(value: str) -> bool:
    """Our txids only: exactly 25 ASCII letters or digits. NO_TXID ('***') is not one."""
    return _TXID.fullmatch(value) is not None


def build(*, pix_key: str, amount_cents: int | None, merchant_name: str, merchant_city: str, txid: str) -> str:
    """The copy-and-paste code (and QR content) of a static Pix BR Code.

    `txid` is one of ours (see `is_valid_txid`) or NO_TXID, which only the manual's example needs: without a txid an
    incoming Pix cannot be matched to its charge. `amount_cents=None` omits field 54 (the payer types the amount).
    Raises ValueError for anything that would give a payload a bank app refuses.
    """
    if not pix_key or pix_key != pix_key.strip():
        raise ValueError("pix_key must be non-empty, without surrounding spaces")
    if not (is_valid_txid(txid) or txid == NO_TXID):
        raise ValueError(f"txid must be {TXID_LENGTH} ASCII letters or digits, or {NO_TXID!r}")
    head, merchant = _merchant_fields(pix_key, merchant_name, merchant_city)
    amount = ""
    if amount_cents is not None:
        # bool is an int subclass; True must not become a 0.01 charge.
        if isinstance(amount_cents, bool) or not isinstance(amount_cents, int) or amount_cents < 1:
            raise ValueError("amount_cents must be a positive integer or None")
        if len(format_amount(amount_cents)) > AMOUNT_MAX_LENGTH:
            raise ValueError(f"amount_cents too large for field 54 ({AMOUNT_MAX_LENGTH} characters)")
        amount = tlv("54", format_amount(amount_cents))
    payload = "".join([
        head,
        amount,
        merchant,
        tlv("62", tlv("05", txid)),
        "6304",  # the CRC covers its own tag and length
    ])
    return payload + crc16(payload)


@functools.lru_cache(maxsize=1024)  # the same for every charge of a merchant
def _merchant_fields(pix_key: str, merchant_name: str, merchant_city: str) -> tuple[str, str]:
    """The fields before the amount (00, 26, 52, 53) and those after it up to the txid (58, 59, 60)."""
    name = fold_ascii(merchant_name, NAME_MAX_LENGTH)
    city = fold_ascii(merchant_city, CITY_MAX_LENGTH)
    if not name or not city:
        raise ValueError("merchant name and city must keep at least one letter or digit after ASCII folding")
    head = "".join([
        tlv("00", "01"),
        tlv("26", tlv("00", GUI) + tlv("01", pix_key)),
        tlv("52", "0000"),  # merchant category code: not informed
        tlv("53", "986"),  # ISO 4217 numeric code of the real
    ])
    return head, tlv("58", "BR") + tlv("59", name) + tlv("60", city)


def _split(data: str, *, top_level: bool) -> list[tuple[str, str, int]]:
    """(tag, value, offset just past the value) for each field, checking only the TLV structure."""
    fields: list[tuple[str, str, int]] = []
    offset = 0
    while offset < len(data):
        tag, length = data[offset:offset + 2], data[offset + 2:offset + 4]
        if not _TAG.fullmatch(tag) or not _TAG.fullmatch(length):
            raise PixTlvError(f"expected a 2-digit tag and length at offset {offset}, got {data[offset:offset + 4]!r}")
        end = offset + 4 + int(length)
        if length == "00" or end > len(data):
            raise PixTlvError(f"field {tag} at offset {offset} declares length {length}, "
                              f"{len(data) - offset - 4} characters remain")
        fields.append((tag, data[offset + 4:end], end))
        offset = end
        if top_level and tag == "63":
            break  # what follows the CRC is judged by parse()
    return fields


def _unique(pairs: list[tuple[str, str, int]], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for tag, value, _ in pairs:
        if tag in out:
            raise PixFieldError(f"field {where}{tag} appears twice")
        out[tag] = value
    return out


def parse(payload: str) -> Fields:
    """Top-level fields by tag, with 26 and 62 opened into their sub-fields: {'59': 'Fulano de Tal', '62': {'05': ...}}.

    Checks structure, CRC and the fields a Pix payload cannot do without; raises a PixPayloadError subclass otherwise.
    """
    pairs = _split(payload, top_level=True)
    crc_end = pairs[-1][2] if pairs else 0
    if crc_end < len(payload):
        raise PixTrailingDataError(f"{len(payload) - crc_end} characters after the CRC field 63")
    flat = _unique(pairs, "")
    if "63" in flat:
        if len(flat["63"]) != 4:
            raise PixTlvError(f"CRC field 63 must hold 4 characters, got {len(flat['63'])}")
        expected = crc16(payload[:-4])
        if flat["63"] != expected:
            raise PixCrcError(f"CRC is {flat['63']!r}, the payload's is {expected!r}")
    missing = [tag for tag in _MANDATORY if tag not in flat]
    if missing:
        raise PixFieldError(f"mandatory fields missing: {', '.join(missing)}")
    if pairs[0][0] != "00" or flat["00"] != "01":
        raise PixFieldError("field 00 (payload format indicator) must come first and be '01'")
    account = _unique(_split(flat["26"], top_level=False), "26.")
    additional = _unique(_split(flat["62"], top_level=False), "62.")
    if account.get("00", "").lower() != GUI or not ({"01", "25"} & account.keys()):
        raise PixFieldError(f"field 26 must hold 00={GUI} and a Pix key (01) or location (25)")
    if "05" not in additional:
        raise PixFieldError("field 62 must hold a txid (05)")
    return {**flat, "26": account, "62": additional}
