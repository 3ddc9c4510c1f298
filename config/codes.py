"""Random codes drawn from an alphabet: API keys, Pix txids and end-to-end ids, the simulator's references."""

from __future__ import annotations

import functools
import secrets

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@functools.cache
def _space(base: int, length: int) -> int:
    return base**length


def random_code(length: int, alphabet: str = BASE62) -> str:
    """`length` characters of `alphabet`, each uniform and independent of the others: one draw from `secrets` among
    the len(alphabet)**length codes, written in that base (a draw per character costs ten times as much)."""
    base = len(alphabet)
    number = secrets.randbelow(_space(base, length))
    characters = []
    for _ in range(length):
        number, digit = divmod(number, base)
        characters.append(alphabet[digit])
    return "".join(characters)
