"""The note panel shows the note the current one replaced (issue 8: a human's words outlive a session's note)."""

from __future__ import annotations

from pathlib import Path

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, screen_text, settle
from tui.app import make_app


async def test_the_note_panel_shows_the_previous_note_with_its_author(ledger_path: Path) -> None:
    """bob wrote the note; a session's note replaced it: both are on screen, bob's marked as the previous one."""
    open_ledger(str(ledger_path), actor="agent:s1").set_note("Session s1 ended: budget used.\n")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "Session s1 ended: budget used." in text
        assert "Previous note by bob" in text
        assert "Started web-02 at 02:40Z. Do NOT retry link on web-03 without looking." in text


async def test_no_previous_note_no_line(ledger_path: Path) -> None:
    """A ledger whose note was never replaced shows no previous-note line."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "Previous note" not in screen_text(app)
