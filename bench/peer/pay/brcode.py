"""The Pix copy-and-paste code (EMV MPM TLV with a CRC-16/CCITT-FALSE), for the platform's key and a charge's txid."""

import unicodedata


def _tlv(tag: str, value: str) -> str:
    return f"{tag}{len(value):02d}{value}"


def _ascii(text: str, limit: int) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return "".join(char for char in folded if char.isalnum() or char == " ").strip()[:limit] or "NA"


def crc16(data: bytes) -> int:
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def build(*, key: str, amount: int, name: str, city: str, txid: str) -> str:
    payload = "".join([
        _tlv("00", "01"),
        _tlv("26", _tlv("00", "br.gov.bcb.pix") + _tlv("01", key)),
        _tlv("52", "0000"),
        _tlv("53", "986"),
        _tlv("54", f"{amount // 100}.{amount % 100:02d}"),
        _tlv("58", "BR"),
        _tlv("59", _ascii(name, 25)),
        _tlv("60", _ascii(city, 15)),
        _tlv("62", _tlv("05", txid)),
        "6304",
    ])
    return payload + f"{crc16(payload.encode()):04X}"
