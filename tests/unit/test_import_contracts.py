"""The layers, checked statically: every `import` in the engine's source, at module level or
inside a function (which an import-time test cannot see), obeys the contracts.

- the engine never imports textual, rich or tui;
- engine.store never imports engine.session;
- engine.session never imports engine.api;
- engine.notify never imports the step runner (engine.session.runner);
- the TUI reaches the engine only through engine.api (its one narrow port);
- nothing imports engine.cli but the CLI itself;
- the foundations (ledger, audit, codec, store, lease, host, approvals, notify, errors,
  settings) never import the runtimes above them (session, temporal, hooks, langgraph,
  planners, checks, api, cli);
- the engine's imports, at module level or inside functions, form no loop.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

ENGINE = ROOT / "engine"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, imported module) for every import in the file, resolved to absolute names;
    `from a import b` counts as importing `a` and `a.b`; importlib.import_module("x") and
    __import__("x") with a literal name count too."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    name = module_name(path, root)
    package = name.rsplit(".", 1)[0] if path.name != "__init__.py" else name
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for path in files:
        for line, name in imports(path):
            if any(within(name, bad) for bad in forbidden):
                out.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return sorted(set(out))


def sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


FOUNDATIONS = ("ledger", "audit", "codec", "store", "lease", "host", "approvals")
FOUNDATION_FILES = ("notify.py", "errors.py", "settings.py")
RUNTIMES = ("engine.session", "engine.temporal", "engine.hooks", "engine.langgraph", "engine.planners",
            "engine.checks", "engine.api", "engine.cli")


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """module -> the engine modules it imports: for `a.b.c`, the longest of `a.b.c`, `a.b`
    that is a module (a package's `__init__` counts as the package; the package a module
    sits in is not counted as a dependency of what imports the module)."""
    known = {module_name(p) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        name = module_name(path)
        edges = graph.setdefault(name, set())
        for _, target in imports(path):
            parts = target.split(".")
            mod = next((".".join(parts[:i]) for i in range(len(parts), 1, -1) if ".".join(parts[:i]) in known), None)
            if mod is not None and mod != name and not within(name, mod):
                edges.add(mod)
    return graph


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


CONTRACTS = [
    pytest.param(sources(ENGINE), ("textual", "rich", "tui"), id="engine-never-imports-a-screen"),
    pytest.param(sources(ENGINE / "store"), ("engine.session",), id="store-never-imports-session"),
    pytest.param(sources(ENGINE / "session"), ("engine.api",), id="session-never-imports-api"),
    pytest.param([ENGINE / "notify.py"], ("engine.session.runner",), id="notify-never-imports-the-runner"),
    pytest.param([p for p in sources(ENGINE) if "cli" not in p.relative_to(ENGINE).parts] + sources(ROOT / "tui"),
                 ("engine.cli",), id="nothing-imports-the-cli"),
    pytest.param([p for folder in FOUNDATIONS for p in sources(ENGINE / folder)] + [ENGINE / f for f in FOUNDATION_FILES],
                 RUNTIMES, id="foundations-never-import-the-runtimes"),
]


def test_the_tui_reaches_the_engine_only_through_its_api():
    """Every engine import in tui/ is `engine.api` (or a name from it)."""
    found = [f"{path.relative_to(ROOT)}:{line} imports {name}" for path in sources(ROOT / "tui")
             for line, name in imports(path) if within(name, "engine") and name != "engine" and not within(name, "engine.api")]
    assert sorted(set(found)) == []


@pytest.mark.parametrize("files, forbidden", CONTRACTS)
def test_contract(files, forbidden):
    """No file in the layer imports what the contract forbids, anywhere in it."""
    assert files, "no source files found"
    assert violations(files, forbidden) == []


def test_the_checker_sees_imports_inside_functions(tmp_path):
    """A function-level `import rich` and a relative import are both caught (the checker can fail)."""
    (tmp_path / "engine").mkdir()
    sample = tmp_path / "engine" / "sample.py"
    sample.write_text("def f():\n    import rich.text\n    from .session import runner\n    importlib.import_module('textual')\n")
    found = imports(sample, root=tmp_path)
    assert (2, "rich.text") in found and (3, "engine.session.runner") in found and (4, "textual") in found


def test_the_engine_has_no_import_loop():
    """No two engine modules import each other, however indirectly, not even inside a function."""
    assert loops(import_graph(sources(ENGINE))) == []


def test_the_loop_finder_finds_a_loop_through_a_function_import(tmp_path):
    """a -> b at module level, b -> a inside a function: one loop (the finder can fail)."""
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "a.py").write_text("from engine import b\n")
    (tmp_path / "engine" / "b.py").write_text("def f():\n    from engine.a import x\n")
    files = sorted((tmp_path / "engine").glob("*.py"))
    graph = {}
    known = {module_name(p, tmp_path) for p in files}
    for path in files:
        graph[module_name(path, tmp_path)] = {t for _, t in imports(path, tmp_path) if t in known} - {module_name(path, tmp_path)}
    assert loops(graph) == [["engine.a", "engine.b"]]
