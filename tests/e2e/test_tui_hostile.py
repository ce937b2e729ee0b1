"""Hostile ledger and journal text through a real terminal: shown literally, never obeyed.

Target names, reasons, the note, the task and a journal line carry console
markup, an OSC title sequence, a clear-screen CSI, an RTL override, non-ASCII
and very long lines. In tmux at 80x24 they show up made visible, the window
title stays as it was, and the app keeps working through detail, log and quit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import filter_to, row_of, tui_argv

pytestmark = pytest.mark.e2e

LONG = "very-long-" * 40
LEDGER = f'''\
task: "upgrade [bold red]markup[/] \\e]0;pwned\\a"
owner_shift: "night \\e[2J shift"
runbook:
  steps:
    - {{name: cutover, from: verified, to: done, reversible: false, run: ["echo", "{{target}}"]}}
targets:
  "[bold red]markup[/]": {{state: blocked, reason: "[link=https://evil.example]click[/link] \\e[2J"}}
  "Zürich-数据库": {{state: awaiting_approval, awaiting: cutover, awaiting_by: "agent:x", next_action: "\\u202eesrever\\u202c then go"}}
  "title\\e]0;pwned\\aname": {{state: failed, reason: "exit 1", last_action: "\\e[31mred\\e[0m \\x9b31m"}}
  "{LONG}": {{state: queued, next_action: "{"x" * 3000}"}}
handoff_note: "note \\e]0;pwned\\a [red]red[/] \\e[2J {"a long line " * 300}"
'''


def test_hostile_text_is_shown_not_obeyed(tmux, tmp_path: Path) -> None:
    """Markup, OSC/CSI escapes, RTL override, non-ASCII and long lines render visibly; title unchanged; no crash."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    ledger = folder / "ledger.yaml"
    ledger.write_text(LEDGER, encoding="utf-8")
    from engine.api import open_ledger

    handle = open_ledger(str(ledger), actor="tester")
    assert "title\x1b]0;pwned\x07name" in handle.load().targets  # the escapes really are in the data
    handle.journal.append("log", "journal \x1b]0;pwned\x07 [bold]bold?[/] \x1b[2J done", actor="tester\x1b[5m")

    tmux.start(tui_argv(ledger, "--as", "alice"), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    screen = tmux.wait_for("OPERATOR", timeout=20)
    screen = tmux.wait_for(lambda s: "<U+202E>esrever" in row_of(s, "Zürich-数据库"), what="the non-ASCII target")
    title = tmux.display("#{pane_title}")

    assert "[bold red]markup[/]" in row_of(screen, "[bold red]markup[/]")
    assert "title␛]0;pwned␇name" in screen
    assert "upgrade [bold red]markup[/]" in screen.splitlines()[0]
    assert "note ␛]0;pwned␇ [red]red[/] ␛[2J" in screen
    assert "<U+202E>esrever" in row_of(screen, "Zürich-数据库") and "\u202e" not in screen
    assert "very-long-very" in screen and "…" in screen  # a 400-character name keeps both of its ends

    # The detail of the escape-named target, then the log pane with the journal line.
    screen = filter_to(tmux, "title", "title\x1b]0;pwned\x07name".translate({0x1b: "␛", 0x07: "␇"}))
    assert "Zürich" not in screen
    tmux.send("Enter")
    detail = tmux.wait_for("␛[31mred␛[0m", what="the detail with the escaped last action")
    assert "<U+009B>31m" in detail
    tmux.send("Escape")
    tmux.wait_for(lambda s: "␛[31mred" not in s, what="back from the detail")
    tmux.send("l")
    # The pane is narrow at 80 columns: the journal line wraps, each piece still literal.
    tmux.wait_for(lambda s: all(p in s for p in ("journal ␛]0;pwned␇", "[bold]bold?[/] ␛[2J done")),
                  what="the journal line in the log pane")

    tmux.tmux("resize-window", "-x", "160", "-y", "24")  # room for the shift in the header
    tmux.wait_for("shift: night ␛[2J shift", what="the shift, made visible")
    assert "pwned" not in tmux.display("#{pane_title}")
    assert tmux.display("#{pane_title}") == title
    tmux.send("q")
    assert tmux.wait_exit() == 0
