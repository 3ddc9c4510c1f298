"""Pix keys (SPEC §4.1): what fits each type, and the canonical form the rail gets."""

import pytest

from payments.formats.pix_keys import EMAIL_MAX_LENGTH, PIX_KEY_TYPES, normalize_pix_key, pix_key_fault
from payments.models import PixKeyType

EMAIL_77 = "ana." + "s" * 16 + "@" + "b" * 52 + ".com"  # 21 + 1 + 52 + 4 characters


def test_key_types_are_the_models():
    assert PIX_KEY_TYPES == ("CPF", "CNPJ", "EMAIL", "PHONE", "EVP")
    assert list(PIX_KEY_TYPES) == PixKeyType.values


# --- CPF -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["52998224725", "11144477735", "00000000191"])
def test_cpf_accepted_as_is(key):
    assert normalize_pix_key("CPF", key) == key


@pytest.mark.parametrize("key", [
    "52998224726",  # wrong second check digit
    "52998224715",  # wrong first check digit
    "11111111111",  # one digit repeated (its check digits would compute)
    "00000000000",
    "5299822472",  # 10 digits
    "529982247250",  # 12 digits
    "529.982.247-25",  # punctuation: a key is typed bare
    "52998224725 ",
    " 52998224725",
    "5299822472A",
    "５２９９８２２４７２５",  # fullwidth digits
    "",
])
def test_cpf_refused(key):
    assert normalize_pix_key("CPF", key) is None


# --- CNPJ ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["11222333000181", "12ABC34501DE35"])
def test_cnpj_accepted_as_is(key):
    assert normalize_pix_key("CNPJ", key) == key


@pytest.mark.parametrize("key", [
    "11222333000182",  # wrong check digit
    "12ABC34501DE36",  # alphanumeric, wrong check digit
    "00000000000000",  # one digit repeated
    "12abc34501de35",  # lowercase: keys are exact
    "11.222.333/0001-81",  # punctuation
    "1122233300018",  # 13 characters
    "112223330001810",  # 15 characters
    "12ABC34501DEAB",  # check digits are always digits
    "52998224725",  # a CPF is not a CNPJ key
    "11222333 000181",
])
def test_cnpj_refused(key):
    assert normalize_pix_key("CNPJ", key) is None


# --- EMAIL -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "canonical"), [
    ("ana@example.com", "ana@example.com"),
    ("Ana.Souza@Example.COM.br", "ana.souza@example.com.br"),  # the DICT stores e-mail keys lowercased
    ("ana+pix@sub-domain.example.com", "ana+pix@sub-domain.example.com"),
    ("o'neil_1@example.io", "o'neil_1@example.io"),
    (EMAIL_77, EMAIL_77),
])
def test_email_accepted_and_lowercased(key, canonical):
    assert normalize_pix_key("EMAIL", key) == canonical


def test_email_length_limit_is_77():
    assert len(EMAIL_77) == EMAIL_MAX_LENGTH == 77
    assert normalize_pix_key("EMAIL", "x" + EMAIL_77) is None  # 78 characters


@pytest.mark.parametrize("key", [
    "ana",
    "ana@",
    "@example.com",
    "ana@example",  # no dot in the domain
    "ana@localhost",
    "ana@[203.0.113.9]",  # IP literal
    '"ana souza"@example.com',  # quoted local part
    "ana..souza@example.com",
    ".ana@example.com",
    "ana.@example.com",
    "ana@-example.com",
    "ana@example..com",
    "ana souza@example.com",
    " ana@example.com",
    "ana@example.com\n",
    "joão@example.com",
    "ana@exämple.com",
    "ana@@example.com",
    "",
])
def test_email_refused(key):
    assert normalize_pix_key("EMAIL", key) is None


# --- PHONE -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "canonical"), [
    ("+5511987654321", "+5511987654321"),  # mobile: 9 digits starting with 9
    ("5511987654321", "+5511987654321"),  # without the plus
    ("+551133334444", "+551133334444"),  # 8 digits
    ("551133334444", "+551133334444"),
    ("+5599912345678", "+5599912345678"),  # highest area code
])
def test_phone_accepted_with_plus_and_country_code(key, canonical):
    assert normalize_pix_key("PHONE", key) == canonical


@pytest.mark.parametrize("key", [
    "11987654321",  # 11-digit national number: no country code
    "1133334444",  # 10-digit national number
    "+11987654321",
    "+5411987654321",  # another country
    "+5501987654321",  # area code with a leading 0
    "+5500987654321",
    "+5510987654321",  # area codes never contain a 0
    "+5511887654321",  # 9 digits must start with 9
    "+551101234567",  # 8 digits starting with 0
    "+551113334444",  # 8 digits starting with 1
    "+55119876543210",  # 10-digit number
    "+5511987654",  # 7-digit number
    "+55 11 98765-4321",
    "+55(11)987654321",
    "+55-11-987654321",
    "++5511987654321",
    "+5511987654321 ",
    "+5511９87654321",
    "",
])
def test_phone_refused(key):
    assert normalize_pix_key("PHONE", key) is None


# --- EVP -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "canonical"), [
    ("123e4567-e89b-42d3-a456-426614174000", "123e4567-e89b-42d3-a456-426614174000"),
    ("123E4567-E89B-42D3-A456-426614174000", "123e4567-e89b-42d3-a456-426614174000"),
    ("123e4567-E89B-42d3-A456-426614174000", "123e4567-e89b-42d3-a456-426614174000"),
])
def test_evp_accepted_and_lowercased(key, canonical):
    assert normalize_pix_key("EVP", key) == canonical


@pytest.mark.parametrize("key", [
    "123e4567e89b42d3a456426614174000",  # without hyphens
    "{123e4567-e89b-42d3-a456-426614174000}",  # with braces
    "urn:uuid:123e4567-e89b-42d3-a456-426614174000",
    "123e4567-e89b-42d3-a456-42661417400",  # 35 characters
    "123e4567-e89b-42d3-a456-4266141740000",  # 37 characters
    "123e4567-e89b-42d3-a456-42661417400g",  # not hex
    "123e45678-e89b-42d3-a456-42661417400",  # hyphens misplaced
    " 123e4567-e89b-42d3-a456-426614174000",
    "",
])
def test_evp_refused(key):
    assert normalize_pix_key("EVP", key) is None


# --- Type ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key_type", "key"), [
    ("CPF", "11222333000181"),  # a CNPJ as a CPF key
    ("EMAIL", "52998224725"),
    ("PHONE", "ana@example.com"),
    ("EVP", "+5511987654321"),
    ("cpf", "52998224725"),  # types are exact
    ("RANDOM", "123e4567-e89b-42d3-a456-426614174000"),
])
def test_key_of_another_type_or_unknown_type(key_type, key):
    assert normalize_pix_key(key_type, key) is None


@pytest.mark.parametrize("key_type", PIX_KEY_TYPES)
@pytest.mark.parametrize("key", [None, 52998224725, ["52998224725"]])
def test_not_a_string(key_type, key):
    assert normalize_pix_key(key_type, key) is None


@pytest.mark.parametrize(("key_type", "key", "fault"), [
    ("CPF", "52998224726", "check_digits"),
    ("CPF", "11111111111", "repeated"),
    ("CPF", "529.982.247-25", "characters"),
    ("CPF", "5299822472", "length"),
    ("CNPJ", "11222333000182", "check_digits"),
    ("CNPJ", "12ABC34501DEAB", "check_digit_characters"),
    ("CNPJ", "00000000000000", "repeated"),
    ("CNPJ", "12abc34501de35", "characters"),
    ("CNPJ", "1122233300018", "length"),
    ("EMAIL", "a" * 21 + "@" + "b" * 52 + ".com", "length"),
    ("EMAIL", "joão@example.com", "characters"),
    ("EMAIL", "ana@example", "format"),
    ("PHONE", "+55 11 98765-4321", "characters"),
    ("PHONE", "+5411987654321", "country_code"),
    ("PHONE", "11987654321", "country_code"),
    ("PHONE", "+5501987654321", "format"),
    ("PHONE", "+55119876543", "format"),  # 7 digits
    ("EVP", "123e4567e89b42d3a456426614174000", "length"),
    ("EVP", "123e4567-e89b-42d3-a456-42661417400g", "format"),
])
def test_why_a_key_does_not_fit(key_type, key, fault):
    assert normalize_pix_key(key_type, key) is None
    assert pix_key_fault(key_type, key) == fault
