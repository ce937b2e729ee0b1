"""Words an operator types are never lost: every branch of the note conflict, and `p` on a broken file.

The conflict dialog has four ways out: keep mine, take theirs, merge (saved as offered,
or edited), and escape. Merge then ctrl+s without editing writes the merge; escape
keeps my text as a draft that `e` opens again; only "take theirs" drops my text, and
says so. A pause (or any other action that asks for a reason) on a file that does not
parse refuses before the operator types anything, and the broken file stays as it is.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from textual.widgets import TextArea

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, settle
from tui.app import make_app
from tui.screens.note_editor import NoteConflictScreen, NoteEditor
from tui.screens.reason import ReasonPrompt


def build(path: Path):
    return make_app(str(path), actor="alice", clock=fixed_clock, watch=False)


def said(app) -> str:
    """Every notification the app showed, joined."""
    return " ".join(n.message for n in app._notifications)


def note_on_disk(path: Path) -> str:
    return yaml.safe_load(path.read_text("utf-8"))["handoff_note"]


async def conflict(pilot, path: Path) -> None:
    """alice edits, carol saves underneath, alice saves: the conflict dialog is open."""
    await settle(pilot)
    await pilot.press("e")
    open_ledger(str(path), actor="carol").set_note("carol's note")
    pilot.app.screen.query_one(TextArea).text = "alice's note"
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert isinstance(pilot.app.screen, NoteConflictScreen)


async def test_merge_saved_without_editing_is_written(ledger_path: Path) -> None:
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await conflict(pilot, ledger_path)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, NoteEditor)
        await pilot.press("ctrl+s")
        await settle(pilot)
    saved = note_on_disk(ledger_path)
    assert "carol's note" in saved and "alice's note" in saved


async def test_merge_edited_is_written(ledger_path: Path) -> None:
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await conflict(pilot, ledger_path)
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one(TextArea).text = "both: carol + alice"
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert note_on_disk(ledger_path) == "both: carol + alice"


async def test_keep_mine_writes_mine(ledger_path: Path) -> None:
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await conflict(pilot, ledger_path)
        await pilot.press("m")
        await settle(pilot)
    assert note_on_disk(ledger_path) == "alice's note"


async def test_take_theirs_keeps_theirs_and_says_mine_was_dropped(ledger_path: Path) -> None:
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await conflict(pilot, ledger_path)
        await pilot.press("t")
        await settle(pilot)
        assert "your edit was not saved" in said(app)
    assert note_on_disk(ledger_path) == "carol's note"


async def test_escape_keeps_my_text_as_a_draft_that_e_opens_again(ledger_path: Path) -> None:
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await conflict(pilot, ledger_path)
        await pilot.press("escape")
        await settle(pilot)
        assert note_on_disk(ledger_path) == "carol's note"
        assert "kept as a draft" in said(app)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, NoteEditor)
        text = app.screen.query_one(TextArea).text
        assert "alice's note" in text and "carol's note" in text
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert "alice's note" in note_on_disk(ledger_path)


async def test_an_unchanged_note_says_nothing_was_saved(ledger_path: Path) -> None:
    before = ledger_path.read_bytes()
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "unchanged; nothing saved" in said(app)
    assert ledger_path.read_bytes() == before


async def test_pause_on_a_broken_file_refuses_before_asking_for_a_reason(ledger_path: Path) -> None:
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        ledger_path.write_text(ledger_path.read_text("utf-8") + "targets: [oops\n", "utf-8")
        broken = ledger_path.read_bytes()
        app.reload()
        await settle(pilot)
        assert app.main.broken is not None
        for key in ("p", "b", "x"):
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, ReasonPrompt), key
        text = said(app)
        assert "does not parse" in text and "ledger.yaml" in text and "nothing was asked or changed" in text
    assert ledger_path.read_bytes() == broken
