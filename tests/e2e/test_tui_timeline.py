"""The timeline in a real terminal: tmux at 80x24, T opens the journal's newest page, enter shows the
targets as they were at the selected record's revision, [ pages back, esc returns; the ledger's
folder is byte-identical afterwards (reading the past writes nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tui_argv

from engine.api import open_ledger

pytestmark = pytest.mark.e2e

LEDGER = """\
task: timeline-e2e
targets:
  web-01: {state: queued}
  web-02: {state: queued}
runbook:
  steps:
    - {name: check, from: queued, to: checked, reversible: true, run: ["true"]}
"""


def test_timeline_in_tmux(tmux, tmp_path: Path) -> None:
    """T, enter, [, esc at 80x24: the page, the state then, the older page, back to the table."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    ledger = folder / "ledger.yaml"
    ledger.write_text(LEDGER, encoding="utf-8")
    bob = open_ledger(str(ledger), actor="bob")
    for i in range(60):
        bob.block("web-02", f"hold {i}")
        bob.unblock("web-02", "queued", f"go {i}")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    tmux.start(tui_argv(ledger, "--as", "alice"), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    tmux.wait_for("web-02", what="the table")
    tmux.send("T")
    screen = tmux.wait_for(lambda s: "records 21–120 of 120" in s, what="the timeline's newest page")
    assert "Journal timeline (read-only)" in screen
    # 80 columns cut "What" with …; the selected record is shown whole below the table, once the
    # cursor is on it (the table scrolls in one frame, the record below may follow in the next).
    whole = "transition by bob: web-02: blocked -> queued (unblocked by bob (root): go"
    screen = tmux.wait_for(lambda s: "  120  transition  bob" in s and whole in s,
                           what="the newest record in view, the cursor on it, and shown whole below")
    assert "web-02: blocked -…" in screen
    tmux.send("Enter")
    screen = tmux.wait_for("At revision 120", what="the state at the newest revision")
    assert "web-02: queued" in screen
    tmux.send("[")
    tmux.wait_for(lambda s: "records 1–100 of" in s or "records 1-100 of" in s, what="the older page")
    tmux.send("Escape")
    tmux.wait_for(lambda s: "Journal timeline" not in s and "web-01" in s, what="back on the table")
    tmux.send("q")
    assert tmux.wait_exit() == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name in before} == before
