"""The architecture rules of tools/check_architecture.py, one test each, so a failure names its rule and lists every
violation. Static analysis of the source only: no database, no imports of the apps."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

CHECKER_PATH = Path(__file__).resolve().parent.parent / "tools" / "check_architecture.py"


def _load_checker():
    spec = importlib.util.spec_from_file_location("check_architecture", CHECKER_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up in sys.modules
    spec.loader.exec_module(module)
    return module


checker = _load_checker()


@pytest.fixture(scope="module")
def modules():
    return checker.scan()  # parsed once for all the rules


def assert_clean(violations: list[str], rule: str) -> None:
    if violations:
        pytest.fail(f"{len(violations)} {rule} violation(s):\n" + "\n".join(violations), pytrace=False)


def test_the_apps_are_found(modules):
    assert checker.discover_apps() == sorted(checker.LAYERS), "an app was added or removed: update LAYERS"
    assert "payments.models" in modules


def test_no_module_over_the_size_limit(modules):
    assert_clean(checker.check_size(modules), f"module size (over {checker.MAX_LINES} lines)")


def test_no_import_cycles(modules):
    assert_clean(checker.check_cycles(modules), "import cycle")


def test_apps_import_only_the_apps_below_them(modules):
    assert_clean(checker.check_layering(modules), "layering")


def test_no_private_names_of_other_modules(modules):
    assert_clean(checker.check_private_names(modules), "private name")


def test_no_function_local_imports_of_project_modules(modules):
    assert_clean(checker.check_local_imports(modules), "function-local import")
