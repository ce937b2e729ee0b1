"""handoff-tui in a real terminal: tmux at 80x24, keys by send-keys, the screen by capture-pane.

The operator filters to db-18, approves its irreversible cutover by typing the
name, adds a line to the handoff note and quits; the ledger and the journal then
hold the approval (actor and OS user) and the note.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import approve_db18_and_edit_note, check_db18_approved_with_note, demo_with_db18_awaiting, tui_argv

pytestmark = pytest.mark.e2e


def test_approve_and_edit_note_in_tmux(tmux, tmp_path: Path) -> None:
    """At 80x24 in tmux, send-keys approve db-18 (typing its name) and edit the note; the ledger records both."""
    ledger = demo_with_db18_awaiting(tmp_path / "fleet")
    tmux.start(tui_argv(ledger, "--as", "alice"), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    approve_db18_and_edit_note(tmux, "alice")
    check_db18_approved_with_note(ledger, "alice")
