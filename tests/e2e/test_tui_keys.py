"""Keys in a real terminal (tmux, 80x24): `/` inside the filter, `:` commands, and `y` copying over OSC 52.

tmux runs with `set-clipboard on`, so the OSC 52 sequence the app sends lands
in tmux's paste buffer, as it would reach the clipboard of a terminal over SSH.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from conftest import demo_with_db18_awaiting, listed, tui_argv

pytestmark = pytest.mark.e2e


def test_slash_inside_the_filter_and_the_match_count(tmux, tmp_path: Path) -> None:
    """`/0/9A3F` typed in one burst filters by the LSN (the second `/` is text) and says `1 of 40 match`."""
    ledger = demo_with_db18_awaiting(tmp_path / "fleet")
    tmux.start(tui_argv(ledger, "--as", "alice"), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    tmux.wait_for("OPERATOR: alice", timeout=20)
    tmux.send("/")
    tmux.type("0/9A3F")
    screen = tmux.wait_for("1 of 40 match", what="the match count")
    assert any(line.strip(" ▊▎") == "0/9A3F" for line in screen.splitlines()), screen
    assert listed(screen) == ["db-18"]
    tmux.send("Escape")  # alone: ESC followed at once by `q` is what a terminal sends for alt+q
    # The bar and its count are gone and every row is back; db-18's own checkpoint cell still reads 0/9A3F2C10.
    tmux.wait_for(
        lambda s: not any(line.strip(" ▊▎") == "0/9A3F" for line in s.splitlines())
        and "match" not in s
        and len(listed(s)) > 1,
        what="the filter cleared",
    )
    tmux.send("q")
    assert tmux.wait_exit() == 0


def test_y_copies_the_name_through_osc_52(tmux, tmp_path: Path) -> None:
    """`:db-27` then `y`: the terminal receives db-27 in an OSC 52 sequence (tmux's paste buffer holds it)."""
    ledger = demo_with_db18_awaiting(tmp_path / "fleet")
    tmux.start(tui_argv(ledger, "--as", "alice"), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    tmux.wait_for("OPERATOR: alice", timeout=20)
    tmux.send(":")
    tmux.type("db-27")
    tmux.wait_for(lambda s: "db-27" in s.splitlines()[-3], what="the command line")
    tmux.send("Enter")
    tmux.wait_cursor(lambda line, x: "db-27" in line and "✗ failed" in line, "the db-27 row")
    tmux.send("y")
    tmux.wait_for("Copied db-27", what="the copy note")
    assert tmux.tmux("show-buffer").stdout == "db-27"
    assert base64.b64encode(b"db-27").decode() not in tmux.screen()  # the sequence itself never shows
    tmux.send("q")
    assert tmux.wait_exit() == 0
