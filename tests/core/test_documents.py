"""Why a document is not a CPF or a CNPJ: one fault, named exactly, for the message that reports it."""

import random

import pytest

from core.formats import documents


@pytest.mark.parametrize(("value", "fault"), [
    ("52998224725", None),
    ("52998224726", documents.CHECK_DIGITS),
    ("11111111111", documents.REPEATED),
    ("5299822472", documents.LENGTH),
    ("529982247250", documents.LENGTH),
    ("5299822472A", documents.CHARACTERS),
    ("529.982.247-25", documents.CHARACTERS),  # not normalized: a Pix key is taken as sent
    ("٥٢٩٩٨٢٢٤٧٢٥", documents.CHARACTERS),  # Arabic-Indic digits
    ("", documents.CHARACTERS),
])
def test_cpf_fault(value, fault):
    assert documents.cpf_fault(value) == fault


@pytest.mark.parametrize(("value", "fault"), [
    ("11222333000181", None),
    ("12ABC34501DE35", None),
    ("11222333000182", documents.CHECK_DIGITS),
    ("12ABC34501DE36", documents.CHECK_DIGITS),
    ("12ABC34501DEAB", documents.CHECK_DIGIT_CHARACTERS),
    ("00000000000000", documents.REPEATED),
    ("52998224725", documents.LENGTH),
    ("12abc34501de35", documents.CHARACTERS),
    ("11.222.333/0001-81", documents.CHARACTERS),
])
def test_cnpj_fault(value, fault):
    assert documents.cnpj_fault(value) == fault


@pytest.mark.parametrize(("value", "fault"), [
    ("52998224725", None),
    ("12ABC34501DE35", None),
    ("52998224726", ("CPF", documents.CHECK_DIGITS)),
    ("11111111111", ("CPF", documents.REPEATED)),
    ("5299822472A", ("CPF", documents.CHARACTERS)),
    ("11222333000182", ("CNPJ", documents.CHECK_DIGITS)),
    ("12ABC34501DEAB", ("CNPJ", documents.CHECK_DIGIT_CHARACTERS)),
    ("AAAAAAAAAAAAAA", ("CNPJ", documents.CHECK_DIGIT_CHARACTERS)),
    ("00000000000000", ("CNPJ", documents.REPEATED)),
    ("5299822472", (None, documents.LENGTH)),
    ("", (None, documents.LENGTH)),
    ("529_982_247_25", (None, documents.CHARACTERS)),
])
def test_document_fault(value, fault):
    assert documents.document_fault(value) == fault


def test_a_fault_exactly_when_not_valid():
    """The faults explain the validity checks, never contradict them."""
    rng = random.Random(16)
    alphabet = "0123456789AB.a"
    values = ["".join(rng.choice(alphabet) for _ in range(rng.choice([10, 11, 12, 14, 15]))) for _ in range(3000)]
    values += [base + documents.cpf_check_digits(base) for base in ("529982247", "111444777", "000000000")]
    values += [base + documents.cnpj_check_digits(base) for base in ("112223330001", "12ABC34501DE", "000000000000")]

    for value in values:
        assert (documents.cpf_fault(value) is None) == documents.is_valid_cpf(value), value
        assert (documents.cnpj_fault(value) is None) == documents.is_valid_cnpj(value), value
        assert (documents.document_fault(value) is None) == (documents.document_type(value) is not None), value


def _reference_check_digits(values: list[int], weights: tuple[tuple[int, ...], tuple[int, ...]]) -> str:
    """The manual's computation, digit by digit: each weighted value summed, mod 11, the second over the first too."""
    digits = []
    for row in weights:
        remainder = sum(value * weight for value, weight in zip([*values, *digits], row, strict=True)) % 11
        digits.append(0 if remainder < 2 else 11 - remainder)
    return "".join(map(str, digits))


def test_check_digits_equal_the_digit_by_digit_computation():
    draw = random.Random(20261129)
    alphanumeric = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    cpf_weights = (tuple(range(10, 1, -1)), tuple(range(11, 1, -1)))
    cnpj_weights = ((5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2), (6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2))
    for _ in range(5_000):
        cpf = "".join(draw.choices("0123456789", k=9))
        cnpj = "".join(draw.choices(alphanumeric, k=12))
        assert documents.cpf_check_digits(cpf) == _reference_check_digits([int(c) for c in cpf], cpf_weights)
        assert documents.cnpj_check_digits(cnpj) == _reference_check_digits([ord(c) - 48 for c in cnpj], cnpj_weights)
    assert documents.cpf_check_digits("529982247") == "25"
    assert documents.cnpj_check_digits("12ABC34501DE") == "35"


@pytest.mark.parametrize("base", ["52998224", "5299822470", "52998224é"])
def test_check_digits_refuse_a_base_of_another_length_or_not_ascii(base):
    with pytest.raises(ValueError, match="check digits weigh"):
        documents.cpf_check_digits(base)
