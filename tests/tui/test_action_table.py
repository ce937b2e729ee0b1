"""The one action table: bindings, `:` commands, palette and help are all read from it; every
mutating row is refused in read-only mode (and on a broken file) by the one door before any
dialog opens; nothing in tui/ dispatches by a name built at run time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.tui.helpers import fixed_clock, settle
from tui.app import make_app
from tui.cmdline import CommandError, parse
from tui.commands import ActionsProvider
from tui.screens.action_table import ACTIONS
from tui.screens.main import MainScreen

MUTATING_ROWS = [a for a in ACTIONS.actions if a.mutating]


def test_the_bindings_are_the_tables_keyed_rows() -> None:
    """MainScreen.BINDINGS is the table's keyed rows, in order, with their help as tooltip."""
    keyed = [a for a in ACTIONS.actions if a.key is not None]
    assert [(b.key, b.action, b.tooltip) for b in MainScreen.BINDINGS] == [(a.key, a.name, a.help) for a in keyed]


def test_every_command_and_alias_parses_to_its_row() -> None:
    """`:NAME` and each alias give the row itself; a required argument is asked for."""
    for action in ACTIONS.actions:
        for word in (action.command, *action.aliases) if action.command else ():
            line = f":{word} web-05" if action.arg in ("TARGET", "KEY", "TEXT") else f":{word}"
            assert parse(line, ACTIONS).action is action
    with pytest.raises(CommandError, match="needs a target"):
        parse(":approve", ACTIONS)
    with pytest.raises(CommandError, match="read-only: :block"):
        parse(":block web-05", ACTIONS, read_only=True)


def test_the_table_refuses_two_rows_of_one_name() -> None:
    """A second row named like the first, or a command naming two rows, is an error at import."""
    from tui.registry import Action, ActionTable

    row = ACTIONS.by_name["reload"]
    with pytest.raises(ValueError, match="appears twice"):
        ActionTable([row, row])
    with pytest.raises(ValueError, match="names two actions"):
        ActionTable([row, Action("other", row.method, "x", "y", command="reload")])


@pytest.mark.parametrize("action", MUTATING_ROWS, ids=[a.name for a in MUTATING_ROWS])
async def test_read_only_refuses_every_mutating_row_before_asking(ledger_path: Path, action) -> None:
    """Reached by the door anyway (a stale palette entry, a keymap): a read-only note, no dialog, no change."""
    before = ledger_path.read_bytes()
    app = make_app(str(ledger_path), read_only=True, clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        app.main.perform(action, "")
        await settle(pilot)
        assert app.screen is app.main, f"{action.name} opened {app.screen!r}"
        assert any(n.message.startswith(f"read-only: {action.name.replace('_', ' ')}") for n in app._notifications)
    assert ledger_path.read_bytes() == before


async def test_a_broken_file_refuses_before_asking_but_lets_a_stop_through(ledger_path: Path) -> None:
    """While the file does not parse, pause is refused before its reason prompt; stop still goes to the engine."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        ledger_path.write_text("targets: [unclosed\n", encoding="utf-8")
        app.reload()
        await settle(pilot)
        assert app.main.broken is not None
        app.main.perform(ACTIONS.by_name["pause"])
        await settle(pilot)
        assert app.screen is app.main
        assert any("pause:" in n.message and "does not parse" in n.message for n in app._notifications)
        app.main.perform(ACTIONS.by_name["request_stop"])
        await settle(pilot)
        # Not refused by the door: the engine was asked, and its answer is on screen.
        assert not any(n.message.startswith("request stop:") for n in app._notifications)
        from tui.screens.error import ErrorScreen

        assert isinstance(app.screen, ErrorScreen)  # the engine's own refusal (the file does not parse), shown


async def test_the_palette_offers_the_doors_list(ledger_path: Path) -> None:
    """The palette's entries are the door's, in order; read-only leaves out every mutating row."""
    for read_only in (False, True):
        app = make_app(str(ledger_path), actor="alice", read_only=read_only, clock=fixed_clock, watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            provider = ActionsProvider(app.screen)
            titles = [title for title, _, _ in provider._commands()]
            rows = app.main.door.palette()
            assert [t.rsplit(" (", 1)[0] for t in titles] == [a.description for a in rows]
            assert any(a.name == "timeline" for a in rows)
            assert not read_only or not [a for a in rows if a.mutating]


def test_nothing_dispatches_by_a_built_name() -> None:
    """No getattr(...) with a computed name on the app, a screen, the table or the controller (reading a
    record's field by name is data, not dispatch), and no `if name == "..."` chain over command names."""
    found = []
    owners = {"self", "controller", "screen", "handle", "app", "main", "table"}

    def owner(node: ast.expr) -> str:
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""

    names = {a.name for a in ACTIONS.actions} | {a.command for a in ACTIONS.actions if a.command}
    for path in sorted((ROOT / "tui").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) >= 2 \
                    and not isinstance(node.args[1], ast.Constant) and owner(node.args[0]) in owners:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} getattr with a computed name")
            if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.left, ast.Name) \
                    and node.test.left.id in ("name", "op", "command") \
                    and any(isinstance(c, ast.Constant) and c.value in names for c in node.test.comparators):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} if {node.test.left.id} == a command name")
    assert found == []
