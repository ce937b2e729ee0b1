"""A ledger file deleted, replaced by a folder or by a FIFO is said as such, not as a file that does not parse.

The banner said "LEDGER DOES NOT PARSE" and "nothing is written until the file parses
again" for a file that is not there: an operator opened it in an editor to find the syntax
error. Banner, header and a refused key now say there is no ledger file to read, and that
it must be put back; the last good state stays on screen, marked stale, as for a broken file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.tui.helpers import LEDGER, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.reason import ReasonPrompt
from tui.widgets.banners import Banners


def deleted(path: Path) -> None:
    path.unlink()


def a_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def a_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize(("breaks", "why"), [(deleted, "no such ledger file"), (a_folder, "is a folder, not a ledger file"),
                                             (a_fifo, "is a FIFO (named pipe), not a regular file")],
                         ids=["deleted", "a-folder", "a-fifo"])
async def test_a_ledger_file_that_is_gone_is_said_as_gone(ledger_path: Path, breaks, why: str) -> None:
    """Banner, header and a refused `p` say there is no file to read and to put it back; the
    engine's own sentence (with the path) is in the banner; the file back, the banner goes."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        breaks(ledger_path)
        await pilot.press("R")
        await settle(pilot)
        banner = " ".join(app.main.query_one(Banners).texts())
        assert "NO LEDGER FILE TO READ" in banner and "DOES NOT PARSE" not in banner, banner
        assert f"{ledger_path}: {why}" in banner
        assert "until a ledger file is back at this path" in banner and "parses again" not in banner
        assert "no ledger file to read; showing the state of" in app.main.header_text()
        assert "web-02" in screen_text(app)  # the last good state stays, marked stale
        await pilot.press("p")
        await settle(pilot)
        assert not isinstance(app.screen, ReasonPrompt)
        said = " ".join(n.message for n in app._notifications)
        assert "put the ledger file back first" in said and "does not parse" not in said, said
        if ledger_path.is_dir():
            shutil.rmtree(ledger_path)
        ledger_path.unlink(missing_ok=True)
        ledger_path.write_text(LEDGER, encoding="utf-8")
        await pilot.press("R")
        await settle(pilot)
        assert not app.main.query_one(Banners).texts()
