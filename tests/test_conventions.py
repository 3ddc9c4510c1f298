"""The rules import-linter cannot express (docs/decisions/0059): in the service's own code, no generated code, no
framework internals and no branch on the database vendor. Read from the source, as a reviewer would."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP_PACKAGES = ("config", "core", "accounts", "integrations", "payments", "webhooks")
FRAMEWORKS = ("django", "rest_framework", "celery", "kombu", "psycopg", "redis", "drf_spectacular")
INTERNAL_MODULES = ("django.db.models.sql", "django.db.backends", "kombu.transport", "psycopg.types")
GENERATING_CALLS = {"exec", "eval", "compile"}


def app_modules() -> list[Path]:
    return sorted(path for package in APP_PACKAGES for path in (ROOT / package).rglob("*.py"))


def faults(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.startswith(INTERNAL_MODULES) or any(
                        part.startswith("_") and not part.startswith("__") for part in module.split(".")):
                    found.append(f"line {node.lineno}: imports {module}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FRAMEWORKS:
                found += [f"line {node.lineno}: imports {node.module}.{alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in GENERATING_CALLS:
            found.append(f"line {node.lineno}: calls {node.func.id}()")
        elif isinstance(node, ast.Attribute) and node.attr == "vendor":
            found.append(f"line {node.lineno}: reads .vendor")
    return found


@pytest.mark.parametrize("path", app_modules(), ids=lambda path: str(path.relative_to(ROOT)))
def test_app_code_uses_the_frameworks_public_apis_only(path):
    assert faults(path) == []


def test_the_check_finds_what_it_forbids(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from django.db.models.sql import Query\nfrom kombu.transport import redis\n"
                      "from django.db.models.base import _something\nexec('x = 1')\n"
                      "if connection.vendor == 'postgresql':\n    pass\n")

    assert faults(sample) == ["line 1: imports django.db.models.sql", "line 2: imports kombu.transport",
                              "line 3: imports django.db.models.base._something", "line 4: calls exec()",
                              "line 5: reads .vendor"]


def literal_sql_modules() -> list[str]:
    """The app modules that open a cursor of their own: where the code sends SQL it wrote."""
    return [str(path.relative_to(ROOT)) for path in app_modules()
            if any(isinstance(node, ast.Attribute) and node.attr == "cursor"
                   for node in ast.walk(ast.parse(path.read_text(), filename=str(path))))]


def test_every_module_that_speaks_literal_sql_is_in_the_register():
    """Rule 2 (docs/decisions/0062): each literal statement is listed, with why and its figure, or it is not merged."""
    register = (ROOT / "docs/decisions/0062-where-the-code-speaks-literal-sql.md").read_text()

    assert "payments/payins/charge_insert.py" in literal_sql_modules()
    assert [module for module in literal_sql_modules() if f"`{module}`" not in register] == []
