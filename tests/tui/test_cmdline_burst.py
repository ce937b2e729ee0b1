"""The `:` line at typing speed: a burst is never lost nor turned into hotkeys; Tab completes.

Keys are sent the way a paste or a fast typist over SSH delivers them: every key
event queued before the app handles the first one (`burst`). Every mutating action is
a `:` command too, from the one table of the main screen's bindings; filters take
regular expressions, `!` negation, `a|b` alternatives and `is:attention`.
"""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.keys import _character_to_key
from textual.widgets import Input

from tests.tui.helpers import fixed_clock, settle
from tui.app import make_app
from tui.screens.action_table import ACTIONS
from tui.screens.confirm import ConfirmScreen
from tui.screens.main import MainScreen
from tui.screens.reason import ReasonPrompt


def build(path: Path):
    return make_app(str(path), actor="alice", clock=fixed_clock, watch=False)


def burst(app, text: str, *keys: str) -> None:
    """Queue `text` (character by character) and then `keys`, all before any is handled."""
    events_ = [events.Key(c if c.isalnum() else _character_to_key(c), c) for c in text]
    events_ += [events.Key(k, {"enter": "\r", "tab": "\t"}.get(k)) for k in keys]
    for event in events_:
        event.set_sender(app)
        app._driver.send_message(event)


async def test_sort_state_and_enter_in_one_burst_sorts_every_time(ledger_path: Path) -> None:
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for _ in range(3):
            app.main.table.set_sort("ledger")
            burst(app, ":sort state", "enter")
            await settle(pilot)
            assert app.main.table.sort_key == "state"
            assert app.focused is app.main.table
            assert not isinstance(app.screen, (ReasonPrompt, ConfirmScreen))


async def test_a_burst_behind_the_command_never_becomes_hotkeys(ledger_path: Path) -> None:
    before = ledger_path.read_bytes()
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        burst(app, ":filter web-0", "tab", "enter")  # the letters behind Tab must stay text
        await settle(pilot)
        assert app.screen is app.main and not isinstance(app.screen, ReasonPrompt)
    assert ledger_path.read_bytes() == before


async def test_tab_completes_commands_and_target_names_and_keeps_the_focus(ledger_path: Path) -> None:
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        box = app.main.query_one("#cmdline", Input)
        burst(app, ":so", "tab")
        await settle(pilot)
        assert box.value == "sort" and app.focused is box
        box.value = ""
        burst(app, "goto web-0", "tab")
        await settle(pilot)
        assert box.value.startswith("goto web-0") and len(box.value) == len("goto web-01") and app.focused is box
        burst(app, "", "enter")
        await settle(pilot)
        assert app.main.table.cursor_name == box.value.split()[1]


async def test_every_mutating_action_is_a_command(ledger_path: Path) -> None:
    keyed = {b.action for b in MainScreen.BINDINGS} & ACTIONS.mutating
    for action in keyed:
        assert ACTIONS.by_name[action].command in ACTIONS.by_command, action
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        burst(app, ":block web-05", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt) and "web-05" in str(app.screen.query_one("#reason-title").content)


async def test_filters_regex_negation_or_and_attention(ledger_path: Path) -> None:
    app = build(ledger_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.main.table
        table.set_filter(r"web-0[12]$")
        assert table.visible_names() == ["web-01", "web-02"]
        table.set_filter("state:failed|state:blocked")
        assert table.visible_names() == ["web-03", "web-04", "web-07"]
        table.set_filter("!state:done !state:queued")
        assert "web-01" not in table.visible_names() and "web-05" not in table.visible_names()
        table.set_filter("is:attention")
        assert table.visible_names() == ["web-02", "web-03", "web-04", "web-07"]
        table.set_filter("web-0(")  # not a regular expression: matched as text, no error
        assert table.visible_names() == []
