"""Random codes drawn from an alphabet: API keys, Pix txids and end-to-end ids, the simulator's references."""

from __future__ import annotations

import functools
import secrets

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@functools.cache
def _sampler(alphabet: str) -> tuple[bytes, bytes]:
    """For `random_code`: a translation of random bytes into the alphabet's characters, and the bytes it rejects.

    A byte below the largest multiple of the alphabet's size that fits in 256 becomes `alphabet[byte % size]`: each
    character as likely as the others (as many bytes name each). The bytes above it are deleted rather than folded in,
    which would make the first characters more likely (with 62 characters, 8 of 256 bytes: 3% of the draws)."""
    if not alphabet.isascii() or not 1 < len(alphabet) == len(set(alphabet)):
        raise ValueError("the alphabet must be 2 to 128 different ASCII characters")
    limit = 256 - 256 % len(alphabet)
    table = bytes(ord(alphabet[byte % len(alphabet)]) if byte < limit else 0 for byte in range(256))
    return table, bytes(range(limit, 256))


def random_code(length: int, alphabet: str = BASE62) -> str:
    """`length` characters of `alphabet`, each uniform and independent of the others: random bytes from `secrets`,
    translated (`_sampler`) in C, those that would bias the draw left out. A Python loop over the characters (one
    draw per character, or the digits of one large draw) cost five to ten times as much."""
    table, rejected = _sampler(alphabet)
    code = b""
    while len(code) < length:  # one pass but about once in 10**15 for a Pix txid
        code += secrets.token_bytes(length + length // 4 + 4).translate(table, rejected)
    return code[:length].decode("ascii")
