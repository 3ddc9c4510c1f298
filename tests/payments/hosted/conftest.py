import pytest
from django.test import Client


@pytest.fixture
def client():
    """A Brazilian payer's browser: the payer's pages follow a browser that asks for English first (ADR 0082), so
    these tests, which read the Portuguese pages, send what a phone set to Portuguese sends."""
    return Client(HTTP_ACCEPT_LANGUAGE="pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7")
