import pytest

from core.formats import documents
from core.formats.contact import normalize_phone, normalize_zip_code


@pytest.mark.parametrize("value", ["52998224725", "529.982.247-25", "11144477735", "39053344705"])
def test_valid_cpfs(value):
    assert documents.document_type(documents.normalize(value)) == "CPF"


@pytest.mark.parametrize("value", ["52998224724", "11111111111", "00000000000", "5299822472", "529982247250",
                                   "5299822472A"])
def test_invalid_cpfs(value):
    assert not documents.is_valid_cpf(documents.normalize(value))


@pytest.mark.parametrize("value", [
    "11.222.333/0001-81",  # numeric
    "11222333000181",
    "12.ABC.345/01DE-35",  # the Receita Federal's alphanumeric example
    "12abc34501de35",  # lower case is normalized
])
def test_valid_cnpjs(value):
    assert documents.document_type(documents.normalize(value)) == "CNPJ"


@pytest.mark.parametrize("value", ["11222333000182", "00000000000000", "AAAAAAAAAAAAAA", "12ABC34501DE36",
                                   "12ABC34501DEA5", "1222333000181"])
def test_invalid_cnpjs(value):
    assert not documents.is_valid_cnpj(documents.normalize(value))


def test_alphanumeric_check_digits_use_ascii_minus_48():
    # 'A' counts as 17: the digits of 12ABC34501DE are 1,2,17,18,19,3,4,5,0,1,20,21.
    assert documents.cnpj_check_digits("12ABC34501DE") == "35"


@pytest.mark.parametrize(("raw", "expected"), [("01310-100", "01310100"), ("01310100", "01310100"),
                                               ("0131010", None), ("01310-10a", None)])
def test_zip_codes(raw, expected):
    assert normalize_zip_code(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [("+55 (11) 98765-4321", "5511987654321"), ("1133334444", "1133334444"),
                                               ("123456789", None), ("+55 11 98765-43210", None)])
def test_phones(raw, expected):
    assert normalize_phone(raw) == expected
