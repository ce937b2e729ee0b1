"""A handoff note typed while the ledger stops parsing is not lost when ctrl+s cannot save it.

The editor was open when someone broke the file (a half-saved `vim` buffer, a bad merge),
or replaced it with a folder. ctrl+s reaches the engine, which refuses (the file does not
parse; nothing is written, rightly). The error view said why, and the words were gone: the
next `e`, after the file was fixed, opened the old note. They are kept as the draft a
conflict leaves: `e` opens them again, merged with the note as it is then.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from textual.widgets import TextArea

from tests.tui.helpers import LEDGER, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.error import ErrorScreen
from tui.screens.note_editor import NoteEditor

MINE = "web-02 waits on cutover: lag was 0.4s at 03:10Z. Do not link web-03 again."


def broken(path: Path) -> None:
    path.write_text("task: x\ntargets: {a: [\n", encoding="utf-8")


def a_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def fixed(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    path.write_text(LEDGER, encoding="utf-8")


@pytest.mark.parametrize("breaks", [broken, a_folder], ids=["does-not-parse", "a-folder"])
async def test_note_typed_while_the_file_breaks_is_kept_as_a_draft(ledger_path: Path, breaks) -> None:
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, NoteEditor)
        app.screen.query_one(TextArea).text = MINE
        breaks(ledger_path)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)  # the engine's refusal, in words
        assert "e opens it again" in app.screen.error_message
        await pilot.press("escape")
        await settle(pilot)
        fixed(ledger_path)
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, NoteEditor), screen_text(app)
        text = app.screen.query_one(TextArea).text
        assert MINE in text, text
        assert "Do NOT retry link on web-03" in text  # the note as it is now, too
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert MINE in yaml.safe_load(ledger_path.read_text("utf-8"))["handoff_note"]
