"""config.codes.random_code: every code of the alphabet and length can come out, and nothing else."""

from collections import Counter

from config.codes import BASE62, random_code


def test_every_code_of_a_small_space_comes_out_about_as_often():
    drawn = Counter(random_code(3, "ab") for _ in range(8000))

    assert set(drawn) == {a + b + c for a in "ab" for b in "ab" for c in "ab"}
    assert min(drawn.values()) > 800  # 1,000 expected each; any of the 8 below 800 by chance: about 10**-10


def test_codes_have_the_length_and_alphabet_asked_for():
    codes = [random_code(48) for _ in range(200)]

    assert {len(code) for code in codes} == {48}
    assert set("".join(codes)) <= set(BASE62)
    assert len(set(codes)) == 200
