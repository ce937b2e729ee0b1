"""One source for keys: every docstring key table matches its class's BINDINGS, and help/palette come from them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

from textual.binding import Binding

import tui

ROW = re.compile(r"^\s*\|\s*(?P<key>[^|]+?)\s*\|\s*(?P<action>[^|]+?)\s*\|")


def classes_with_bindings() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(tui.__path__, "tui."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "BINDINGS" in cls.__dict__:
                found.append(cls)
    return found


def table_of(cls: type) -> set[tuple[str, str]]:
    """(key, action) rows of the class docstring's `| Key | Action | What it does |` table."""
    rows = set()
    for line in (cls.__doc__ or "").splitlines():
        match = ROW.match(line)
        if match and match["key"] not in ("Key", "---") and not match["key"].startswith("-"):
            rows.add((match["key"].strip("`"), match["action"].strip("`")))
    return rows


def test_every_key_table_matches_its_bindings() -> None:
    """STYLE.md's key table under each class is the BINDINGS list, key for key and action for action."""
    checked = classes_with_bindings()
    assert {c.__name__ for c in checked} >= {"MainScreen", "TargetTable", "ApproveScreen", "DetailScreen", "HelpScreen",
                                             "NoteEditor", "NoteConflictScreen", "ReasonPrompt", "ConfirmScreen"}
    for cls in checked:
        bindings = {(b.key, b.action) for b in cls.BINDINGS if isinstance(b, Binding)}
        assert table_of(cls) == bindings, cls.__name__


def test_every_binding_has_an_id_and_a_description() -> None:
    """Every Binding can be rebound by id and explains itself in the footer and help."""
    for cls in classes_with_bindings():
        for binding in cls.BINDINGS:
            assert isinstance(binding, Binding) and binding.id and binding.description, (cls.__name__, binding)


def test_no_second_table_of_help_texts() -> None:
    """Help and palette read the bindings' descriptions and tooltips: the old ACTION_HELP table is gone."""
    import tui.screens.main as main

    assert not hasattr(main, "ACTION_HELP")
    from tui.screens.main import MainScreen

    assert all(b.tooltip for b in MainScreen.BINDINGS)
