"""The TUI's import graph has no loop: every import in tui/ (module level, inside a function
or under TYPE_CHECKING) is an edge, and no module reaches itself again."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT
from tests.unit.test_import_contracts import imports, module_name, sources, within


def graph(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the modules of `package` it imports (a `from a import b` of a module b counts as b)."""
    files = sources(root / package)
    names = {module_name(p, root) for p in files}
    edges: dict[str, set[str]] = {}
    for path in files:
        me = module_name(path, root)
        found = {n for _, n in imports(path, root) if within(n, package)}
        edges[me] = {n for n in found if n in names and n != me}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every loop found by a depth-first walk, each as the path that closes it."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            walk(node)
    return found


def test_the_tui_import_graph_has_no_loop() -> None:
    """tui/app.py -> tui/screens/main.py -> tui/screens/actions.py never comes back to the app."""
    edges = graph(ROOT, "tui")
    assert "tui.screens.main" in edges["tui.app"]  # the walk sees the real graph
    assert cycles(edges) == []


def test_the_loop_finder_finds_a_loop(tmp_path: Path) -> None:
    """A loop hidden under TYPE_CHECKING and one inside a function are both found."""
    pkg = tmp_path / "tui"
    (pkg / "screens").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "screens" / "__init__.py").write_text("")
    (pkg / "app.py").write_text("from tui.screens.main import MainScreen\n")
    (pkg / "screens" / "main.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tui.app import App\n")
    (pkg / "other.py").write_text("def f():\n    from tui import third\n")
    (pkg / "third.py").write_text("from . import other\n")
    found = cycles(graph(tmp_path, "tui"))
    assert ["tui.app", "tui.screens.main", "tui.app"] in found
    assert ["tui.other", "tui.third", "tui.other"] in found
