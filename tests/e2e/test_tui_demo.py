"""`handoff-tui --demo DIR` in tmux: the demo fleet is copied, a session starts, its steps show live."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest


pytestmark = pytest.mark.e2e


def test_demo_shows_a_live_session(tmux, tmp_path: Path) -> None:
    """The demo's own session runs: its heartbeat, a checked target and an approval request reach the screen."""
    folder = tmp_path / "demo"
    tmux.width, tmux.height = 120, 40
    tmux.start([sys.executable, "-m", "tui.main", "--demo", str(folder), "--as", "newcomer"],
               env={"XDG_STATE_HOME": str(tmp_path / "state")})
    try:
        tmux.wait_for("OPERATOR: newcomer", timeout=20)
        tmux.wait_for("session running", timeout=20, what="the demo session's heartbeat in the header")
        screen = tmux.wait_for(lambda s: "checked" in s.split("\n")[2] and "awaiting_approval" in s.split("\n")[2],
                               timeout=25, what="the session's steps in the summary")
        assert "db-18" in screen
        tmux.send("q")
        assert tmux.wait_exit() == 0
    finally:
        # The demo's script and its sessions are detached on purpose (they outlive the
        # TUI); end them for the test.
        pid_file = folder / "director.pid"
        if pid_file.exists():
            try:
                os.killpg(int(pid_file.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass
    assert (folder / "ledger.yaml").is_file() and (folder / "sim.py").is_file()
