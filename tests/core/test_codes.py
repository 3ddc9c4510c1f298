"""core.codes.random_code: every code of the alphabet and length can come out, and nothing else."""

from collections import Counter

import pytest

from core.codes import BASE62, random_code


def test_every_code_of_a_small_space_comes_out_about_as_often():
    drawn = Counter(random_code(3, "ab") for _ in range(8000))

    assert set(drawn) == {a + b + c for a in "ab" for b in "ab" for c in "ab"}
    assert min(drawn.values()) > 800  # 1,000 expected each; any of the 8 below 800 by chance: about 10**-10


def test_codes_have_the_length_and_alphabet_asked_for():
    codes = [random_code(48) for _ in range(200)]

    assert {len(code) for code in codes} == {48}
    assert set("".join(codes)) <= set(BASE62)
    assert len(set(codes)) == 200


def test_an_alphabet_that_does_not_divide_256_is_drawn_without_bias():
    # 256 = 2 × 100 + 56: folding every byte into 100 characters would make the first 56 half again as likely.
    alphabet = "".join(chr(28 + n) for n in range(100))
    drawn = Counter(random_code(100_000, alphabet))

    assert set(drawn) == set(alphabet)
    first, rest = sum(drawn[c] for c in alphabet[:56]) / 56, sum(drawn[c] for c in alphabet[56:]) / 44
    assert abs(first - rest) < 50  # 1,000 each expected; a 50% bias would be 400, chance alone about 6 (one sigma)


def test_an_alphabet_of_other_than_distinct_ascii_characters_is_refused():
    for alphabet in ("a", "aab", "ação"):
        with pytest.raises(ValueError, match="alphabet"):
            random_code(4, alphabet)
