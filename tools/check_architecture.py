"""Architecture checker for the project's apps: module size, import cycles, layering between apps, private names and
function-local imports. It parses the source with `ast` and imports none of it, so it needs no Django and no database.

    .venv/bin/python tools/check_architecture.py [--verbose]

Exits 0 when clean, else 1 with one line per violation: `path:line: rule: message`. tests/test_architecture.py runs
each rule as its own test."""

from __future__ import annotations

import ast
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_APPS = {"tests", "bench", "tools", "templates", "static", "docs", ".venv"}
MAX_LINES = 400
# The other apps each app may import (any import, function-local ones included).
LAYERS: dict[str, set[str]] = {
    "payments": {"webhooks", "integrations", "accounts", "config"},
    "webhooks": {"accounts", "config"},
    "integrations": {"accounts", "config"},
    "accounts": {"config"},
    "config": set(),
}
# Modules of an app that any app may import, whatever LAYERS says: module -> one-line reason.
SHARED_MODULES: dict[str, str] = {
    "payments.formats.documents": "pure functions (CPF/CNPJ) importing nothing of the project; used all over payments",
    "payments.formats.contact": "pure functions (phone, CEP, UF codes) importing nothing of the project",
}
URLCONF = "config.urls"  # the root URLconf may also import any app's URL and API modules (see is_url_module)
# Function-local imports of project modules that must stay local: "module:Class.function" -> one-line reason.
LOCAL_IMPORT_ALLOWLIST: dict[str, str] = {
    "accounts.apps:AccountsConfig.ready": "Django's registration idiom: ready() imports the deployment checks "
                                          "and the sessions list's sign-in receiver",
    "payments.apps:PaymentsConfig.ready": "Django's registration idiom: ready() imports the tasks (queued by name), "
                                          "the charge request's error kinds and the deployment check",
    "webhooks.apps:WebhooksConfig.ready": "Django's registration idiom: ready() imports the tasks (queued by name) "
                                          "and adds the webhooks section to the Integrations page",
    "integrations.apps:IntegrationsConfig.ready": "Django's registration idiom: ready() registers Idempotency-Key, "
                                                  "the Integrations page and the key cache's signal receiver",
}


@dataclass
class Import:
    target: str  # the project module it loads: `from pkg import name` is pkg.name when that is a module, else pkg
    line: int
    origin: str  # the module the statement names (pkg in `from pkg import name`)
    name: str | None  # the imported name of `from x import name`; None for `import x`
    function: str | None  # qualified name of the enclosing function; None when it runs at import time
    type_checking: bool  # under `if TYPE_CHECKING:`, so it never runs


@dataclass
class Module:
    name: str
    path: str  # relative to the root, as in the violation lines
    tree: ast.Module
    lines: int
    imports: list[Import] = field(default_factory=list)
    bindings: dict[str, str] = field(default_factory=dict)  # local name -> project module it is bound to

    @property
    def app(self) -> str:
        return self.name.partition(".")[0]

    def where(self, line: int) -> str:
        return f"{self.path}:{line}"


def discover_apps(root: Path = ROOT) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in NOT_APPS and p.name[0] != "."
                  and ((p / "__init__.py").is_file() or (p / "apps.py").is_file()))


def scan(root: Path = ROOT) -> dict[str, Module]:
    """Every module of the apps (migrations excluded), parsed, with its imports resolved to project modules."""
    modules: dict[str, Module] = {}
    for app in discover_apps(root):
        for path in sorted((root / app).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if "migrations" in parts or "__pycache__" in parts:
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if name in modules and path.name != "__init__.py":
                continue  # as in Python, a package shadows a same-named module (pkg/ over pkg.py)
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source, str(path))
            modules[name] = Module(name, path.relative_to(root).as_posix(), tree, len(source.splitlines()))
    apps = {name.partition(".")[0] for name in modules}
    for module in modules.values():
        _Collector(module, modules, apps).visit(module.tree)
    return modules


def _is_type_checking(test: ast.expr) -> bool:  # `if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class _Collector(ast.NodeVisitor):
    """Fills module.imports and module.bindings, tracking the enclosing function and `if TYPE_CHECKING:`."""

    def __init__(self, module: Module, modules: dict[str, Module], apps: set[str]):
        self.module, self.modules, self.apps = module, modules, apps
        self.scope: list[str] = []  # enclosing class and function names
        self.function_depth = 0
        self.type_checking = False

    def resolve(self, dotted: str) -> str | None:
        # Kept as written even when no such module exists (a stale import): main() warns about those.
        return dotted if dotted.partition(".")[0] in self.apps else None

    def add(self, target: str, line: int, origin: str, name: str | None = None) -> None:
        function = ".".join(self.scope) if self.function_depth else None
        self.module.imports.append(Import(target, line, origin, name, function, self.type_checking))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)  # a class body runs at import time: no function_depth
        self.generic_visit(node)
        self.scope.pop()

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            return self.generic_visit(node)
        outer, self.type_checking = self.type_checking, True
        for statement in node.body:
            self.visit(statement)
        self.type_checking = outer
        for statement in node.orelse:  # the else branch of `if TYPE_CHECKING:` does run
            self.visit(statement)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if target := self.resolve(alias.name):
                self.add(target, node.lineno, target)
                top = target.partition(".")[0]  # `import a.b` binds a; `import a.b as m` binds m to a.b
                self.module.bindings[alias.asname or top] = target if alias.asname else top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:  # relative: `from ..x import y` in module a.b.c (package a.b) is `from a.x import y`
            parts = self.module.name.split(".")
            package = parts if self.module.path.endswith("/__init__.py") else parts[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        if not (origin := self.resolve(base)):
            return
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in self.modules:
                self.module.bindings[alias.asname or alias.name] = submodule
            self.add(submodule if submodule in self.modules else origin, node.lineno, origin, alias.name)


def check_size(modules: dict[str, Module]) -> list[str]:
    return [f"{m.where(1)}: size: {m.lines} lines (limit {MAX_LINES})" for m in modules.values() if m.lines > MAX_LINES]


def import_graph(modules: dict[str, Module]) -> dict[str, dict[str, int]]:
    """importer -> {imported: line} for the imports that run at import time. Importing a.b.c also runs the __init__
    of a and a.b: those edges are added too, except towards the importer's own packages, which Python has already
    started loading before the importer (counting them would make every package that imports its submodules a cycle)."""
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for m in modules.values():
        for imp in m.imports:
            if imp.function is None and not imp.type_checking and imp.target != m.name:
                graph[m.name].setdefault(imp.target, imp.line)
    for m in modules.values():
        own_packages = {m.name.rsplit(".", n)[0] for n in range(m.name.count(".") + 1)}  # m itself included
        for target, line in list(graph[m.name].items()):
            parts = target.split(".")
            for package in (".".join(parts[:end]) for end in range(1, len(parts))):
                if package not in own_packages and graph.get(package):  # only packages that import something
                    graph[m.name].setdefault(package, line)
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm; the components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def shortest_cycle(graph: dict[str, dict[str, int]], members: list[str]) -> list[str]:
    """The shortest cycle inside one component (breadth-first search from each member), as [a, b, ..., a]."""
    best: list[str] = []
    for start in members:
        parent: dict[str, str] = {}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            if start in graph[node]:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                cycle = [*reversed(path), start]
                if not best or len(cycle) < len(best):
                    best = cycle
                break
            for nxt in sorted(graph[node]):
                if nxt in members and nxt not in parent and nxt != start:
                    parent[nxt] = node
                    queue.append(nxt)
    return best


def check_cycles(modules: dict[str, Module]) -> list[str]:
    graph = import_graph(modules)
    violations = []
    for members in strongly_connected(graph):
        cycle = shortest_cycle(graph, members)
        where = modules[cycle[0]].where(graph[cycle[0]][cycle[1]])
        violations.append(f"{where}: cycles: {' -> '.join(cycle)} (component of {len(members)}: {', '.join(members)})")
    return violations


def is_url_module(name: str) -> bool:
    last = name.rpartition(".")[2]
    return last in ("urls", "apis") or last.endswith("_urls")


def check_layering(modules: dict[str, Module]) -> list[str]:
    violations = []
    for m in modules.values():
        for imp in m.imports:
            other = imp.target.partition(".")[0]
            if other == m.app or (m.name == URLCONF and is_url_module(imp.target)) or imp.target in SHARED_MODULES:
                continue
            if other not in LAYERS.get(m.app, set()):
                allowed = ", ".join(sorted(LAYERS[m.app])) if m.app in LAYERS else "nothing, the app is not in LAYERS"
                violations.append(f"{m.where(imp.line)}: layering: {m.app} imports {imp.target} "
                                  f"(allowed: {allowed or 'no other app'})")
    return list(dict.fromkeys(violations))  # `from x import a, b` is one statement, one line


def check_private_names(modules: dict[str, Module]) -> list[str]:
    violations = []
    for m in modules.values():
        for imp in m.imports:
            if imp.name and is_private(imp.name) and imp.origin != m.name:  # `from x import _name`
                violations.append(f"{m.where(imp.line)}: private: imports {imp.name} from {imp.origin}")
                continue
            parts = imp.target.split(".")  # a private module (`import pkg._mod`): only pkg itself may import it
            owner = next((".".join(parts[:i]) for i, part in enumerate(parts) if is_private(part)), m.name)
            if owner != m.name:
                violations.append(f"{m.where(imp.line)}: private: imports private module {imp.target}")
        for node in ast.walk(m.tree):  # `module._name`, where `module` is bound to a project module
            if isinstance(node, ast.Attribute) and is_private(node.attr):
                chain, value = [], node.value
                while isinstance(value, ast.Attribute):
                    chain.insert(0, value.attr)
                    value = value.value
                if isinstance(value, ast.Name) and value.id in m.bindings:
                    owner = ".".join([m.bindings[value.id], *chain])
                    if owner in modules and owner != m.name:
                        violations.append(f"{m.where(node.lineno)}: private: uses {owner}.{node.attr}")
    return list(dict.fromkeys(violations))


def check_local_imports(modules: dict[str, Module]) -> list[str]:
    violations, used = [], set()
    for m in modules.values():
        for imp in m.imports:
            if imp.function is not None:
                key = f"{m.name}:{imp.function}"
                used.add(key)
                if key not in LOCAL_IMPORT_ALLOWLIST:
                    violations.append(f"{m.where(imp.line)}: local-import: {key} imports {imp.target} in its body")
    violations += [f"tools/check_architecture.py:1: local-import: stale allowlist entry {key}"
                   for key in sorted(LOCAL_IMPORT_ALLOWLIST.keys() - used)]
    return list(dict.fromkeys(violations))


RULES = {"size": check_size, "cycles": check_cycles, "layering": check_layering,
         "private": check_private_names, "local-import": check_local_imports}


def main(argv: list[str]) -> int:
    modules = scan()
    for m in modules.values():  # not a rule, but such an import fails at run time and hides edges from the graph
        for imp in m.imports:
            if imp.target not in modules and imp.origin not in modules:
                print(f"{m.where(imp.line)}: warning: no module {imp.origin} in the project", file=sys.stderr)
    if "--verbose" in argv:
        graph = import_graph(modules)
        largest = sorted(modules.values(), key=lambda m: -m.lines)[:5]
        print(f"apps: {', '.join(discover_apps())}; modules: {len(modules)}; "
              f"import-time edges: {sum(map(len, graph.values()))}")
        print("largest: " + ", ".join(f"{m.name} ({m.lines})" for m in largest))
    violations = [line for rule in RULES.values() for line in rule(modules)]
    for line in violations:
        print(line)
    if "--verbose" in argv:
        print(f"{len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
