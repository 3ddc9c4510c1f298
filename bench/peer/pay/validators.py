"""Brazilian documents and Pix keys."""

import re
import uuid

from rest_framework import serializers

DOCUMENT_PUNCTUATION = str.maketrans("", "", ".-/")
CNPJ_FORMAT = re.compile(r"[0-9A-Z]{12}[0-9]{2}")
EMAIL_KEY = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
PHONE_KEY = re.compile(r"\+?55[1-9][0-9][0-9]{8,9}")
REFERENCE_ID = r"^[A-Za-z0-9._:-]{1,64}$"


def cpf_valid(cpf: str) -> bool:
    if len(cpf) != 11 or not cpf.isdigit() or len(set(cpf)) == 1:
        return False
    digits = [int(char) for char in cpf]
    for size in (9, 10):
        total = sum(digit * weight for digit, weight in zip(digits[:size], range(size + 1, 1, -1), strict=True))
        check = (total * 10) % 11 % 10
        if check != digits[size]:
            return False
    return True


def cnpj_valid(cnpj: str) -> bool:
    """Numeric or alphanumeric CNPJ (each character is worth its code point minus 48)."""
    if not CNPJ_FORMAT.fullmatch(cnpj) or len(set(cnpj)) == 1:
        return False
    values = [ord(char) - 48 for char in cnpj]
    for size in (12, 13):
        weights = [(i % 8) + 2 for i in range(size)][::-1]
        remainder = sum(value * weight for value, weight in zip(values[:size], weights, strict=True)) % 11
        check = 0 if remainder < 2 else 11 - remainder
        if check != values[size]:
            return False
    return True


def clean_document(value: str) -> str:
    document = value.translate(DOCUMENT_PUNCTUATION).upper()
    if len(document) == 11 and cpf_valid(document):
        return document
    if len(document) == 14 and cnpj_valid(document):
        return document
    raise serializers.ValidationError("Not a valid CPF or CNPJ.", code="invalid_document")


def clean_pix_key(key_type: str, key: str) -> str:
    """The key in its canonical form, or a ValidationError when it does not fit its type."""
    if key_type == "CPF" and cpf_valid(key):
        return key
    if key_type == "CNPJ" and cnpj_valid(key.upper()):
        return key.upper()
    if key_type == "EMAIL" and len(key) <= 77 and EMAIL_KEY.fullmatch(key):
        return key.lower()
    if key_type == "PHONE" and PHONE_KEY.fullmatch(key):
        return key if key.startswith("+") else "+" + key
    if key_type == "EVP" and len(key) == 36:
        try:
            return str(uuid.UUID(key))
        except ValueError:
            pass
    raise serializers.ValidationError({"pixKey": [serializers.ErrorDetail(
        f"Not a valid {key_type} Pix key.", code="invalid_pix_key")]})
