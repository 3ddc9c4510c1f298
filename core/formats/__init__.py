"""Formats shared by every app: Brazilian documents (CPF, CNPJ) and contacts (e-mail, phone). Pure functions."""
