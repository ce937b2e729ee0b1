"""A reason typed into a reject, block or pause prompt while the ledger breaks is not lost.

The prompt was open when someone broke the file (a half-saved `vim` buffer, a bad merge)
or replaced it with a folder. Enter reaches the engine, which refuses (nothing is
written, rightly). The error view said why, and the words were gone: the same key, once
the file was fixed, opened an empty prompt. They are kept as the note's words are
(tests/tui/test_note_kept_when_save_fails.py): the same prompt opens again on them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from textual.widgets import Input

from tests.tui.helpers import fixed_clock, screen_text, settle
from tests.tui.test_note_kept_when_save_fails import a_folder, broken, fixed
from tui.app import make_app
from tui.screens.error import ErrorScreen
from tui.screens.reason import ReasonPrompt

WHY = "lag 0.4s on web-02 at 03:10Z; PLAT-231 says wait for the vacuum"


def rejected(data: dict) -> bool:
    return data["targets"]["web-02"]["state"] == "blocked"


def blocked(data: dict) -> bool:
    return data["targets"]["web-05"]["state"] == "blocked"


def paused(data: dict) -> bool:
    return bool(data.get("paused"))


@pytest.mark.parametrize("breaks", [broken, a_folder], ids=["does-not-parse", "a-folder"])
@pytest.mark.parametrize(("target", "key", "done"), [("web-02", "x", rejected), ("web-05", "b", blocked),
                                                      (None, "p", paused)], ids=["reject", "block", "pause"])
async def test_reason_typed_while_the_file_breaks_is_kept(ledger_path: Path, breaks, target, key, done) -> None:
    """The refusal says the reason is kept and which key opens it; that key, once the file is
    fixed, opens the prompt on it, and Enter saves it."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        if target is not None:
            assert app.main.table.move_to(target)
        await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt), screen_text(app)
        app.screen.query_one("#reason", Input).value = WHY
        breaks(ledger_path)
        before = ledger_path.read_bytes() if ledger_path.is_file() else None
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)  # the engine's refusal, in words
        assert (ledger_path.read_bytes() if ledger_path.is_file() else None) == before  # nothing was written
        reopen = f"{key} on {target} opens it again" if target else f"{key} opens it again"
        assert f"Your reason was not saved; it is kept as a draft: {reopen}." in app.screen.error_message
        await pilot.press("escape")
        await settle(pilot)
        fixed(ledger_path)
        await pilot.press("R")
        await settle(pilot)
        if target is not None:
            assert app.main.table.move_to(target)
        await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt), screen_text(app)
        assert app.screen.query_one("#reason", Input).value == WHY
        await pilot.press("enter")
        await settle(pilot)
    assert done(yaml.safe_load(ledger_path.read_text("utf-8")))


async def test_a_kept_reason_opens_only_its_own_prompt(ledger_path: Path) -> None:
    """The reason kept for rejecting web-02 is not offered to block web-05, nor to pause."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        await pilot.press("x")
        await settle(pilot)
        app.screen.query_one("#reason", Input).value = WHY
        broken(ledger_path)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("escape")
        fixed(ledger_path)
        await pilot.press("R")
        await settle(pilot)
        assert app.main.table.move_to("web-05")
        await pilot.press("b")
        await settle(pilot)
        assert app.screen.query_one("#reason", Input).value == ""
        await pilot.press("escape", "p")
        await settle(pilot)
        assert app.screen.query_one("#reason", Input).value == ""
