"""`handoff-tui --demo DIR` in tmux: the story runs live, and leaving the demo ends it.

Quitting ends the demo's script and the session it runs (asking first while a
step runs); a hang-up (the terminal or SSH connection gone) ends them too. Both
are checked on the real processes: the script's process group must be empty. A screen
killed by SIGKILL ends them too (the script watches for its screen itself).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import GONE_WITHIN, group_alive, start_demo, wait_gone

pytestmark = pytest.mark.e2e


def test_quitting_the_demo_ends_its_script_and_session(tmux, tmp_path: Path) -> None:
    """The demo's session shows live; `q` (and yes, if a step runs) ends the script and its session."""
    folder = tmp_path / "demo"
    pgid = start_demo(tmux, folder, tmp_path)
    try:
        screen = tmux.wait_for(lambda s: "checked" in s.split("\n")[2] and "awaiting_approval" in s.split("\n")[2],
                               timeout=30, what="the session's steps in the summary")
        assert "db-18" in screen and group_alive(pgid)
        tmux.send("q")
        deadline = time.monotonic() + 30  # the dialog, if a step runs, comes at the speed of a loaded machine
        while not tmux.dead() and time.monotonic() < deadline:
            if "End the demo and quit?" in tmux.screen():
                assert "A step is running:" in tmux.screen()
                tmux.send("y")
                break
            time.sleep(0.05)
        assert tmux.wait_exit(timeout=GONE_WITHIN + 5) == 0, tmux.screen()
        assert wait_gone(pgid), "the demo's script or its session is still running after quitting"
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
    assert (folder / "ledger.yaml").is_file() and (folder / "sim.py").is_file()


def test_a_hang_up_ends_the_demo(tmux, tmp_path: Path) -> None:
    """The terminal goes away (tmux killed: SIGHUP, as an SSH logout): the demo's script and session end too."""
    folder = tmp_path / "demo"
    pgid = start_demo(tmux, folder, tmp_path)
    try:
        tmux.kill()
        assert wait_gone(pgid), "the demo survived the hang-up"
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


def test_a_screen_killed_by_sigkill_still_ends_the_demo(tmux, tmp_path: Path) -> None:
    """kill -9 of the screen (nothing of it can run): the script sees its screen gone and ends
    the demo as leaving does: the session hands off (the lease given back), the group empties."""
    folder = tmp_path / "demo"
    pgid = start_demo(tmux, folder, tmp_path)
    try:
        screen_pid = int((Path("/proc") / str(pgid) / "stat").read_text().rpartition(")")[2].split()[1])  # the script's parent
        assert "tui.main" in (Path("/proc") / str(screen_pid) / "cmdline").read_bytes().decode()
        os.kill(screen_pid, signal.SIGKILL)
        assert wait_gone(pgid), "the demo's script or its session is still running after its screen was killed"
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
    ledger = yaml.safe_load((folder / "ledger.yaml").read_text())
    assert ledger.get("session") is None, ledger.get("session")  # ended on purpose: not killed mid-step
    assert not any(t.get("in_flight") for t in ledger["targets"].values())
