"""handoff-tui without rich colour: 16 colours (TERM=xterm) and NO_COLOR, in tmux at 80x24.

Meaning never rests on colour: with 16 colours or none, the screen still shows
the mode (OPERATOR / READ-ONLY), state symbols with their words and the
attention marker on rows that wait on a human. The escapes tmux received are
checked too: only the 16 basic colours, or only greys.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import demo_with_db18_awaiting, row_of, tui_argv

pytestmark = pytest.mark.e2e

SGR = re.compile(r"\x1b\[([0-9;]*)m")
BASIC = {*range(30, 38), 39, *range(40, 48), 49, *range(90, 98), *range(100, 108)}
GREY_INDEXES = {0, 7, 8, 15, 16, 231, *range(232, 256)}


def colours(escaped: str) -> list[tuple]:
    """Every colour an SGR sequence set: ("basic", n), ("256", n) or ("rgb", r, g, b)."""
    found: list[tuple] = []
    for params in SGR.findall(escaped):
        codes = [int(p) for p in params.split(";") if p]
        i = 0
        while i < len(codes):
            code = codes[i]
            if code in (38, 48) and i + 1 < len(codes) and codes[i + 1] == 5:
                found.append(("256", codes[i + 2]))
                i += 3
            elif code in (38, 48) and i + 1 < len(codes) and codes[i + 1] == 2:
                found.append(("rgb", *codes[i + 2:i + 5]))
                i += 5
            else:
                if code in BASIC:
                    found.append(("basic", code))
                i += 1
    return found


def sorted_by_state(tmux) -> str:
    """Sort the table by state (needs-a-human first) and return the screen."""
    tmux.send("o")
    tmux.wait_for("State ▼", what="the state sort")
    tmux.send("Home")  # wherever the cursor was, the first row

    def at_top(s: str) -> bool:
        # A capture can fall between the writes of one repaint (the old cursor row not yet
        # redrawn), so wait for the cursor to have settled on a row at the top as well.
        selected = [line for line in s.splitlines() if line.startswith("▶")]
        return ("awaiting_approval" in row_of(s, "db-18") and "failed" in row_of(s, "db-27")
                and len(selected) == 1 and ("db-18" in selected[0] or "db-27" in selected[0]))

    return tmux.wait_for(at_top, what="db-18 and db-27 at the top after sorting by state, the cursor on one of them")


def assert_meaning_without_colour(screen: str) -> None:
    assert "⚑ awaiting_approval" in row_of(screen, "db-18")
    assert "✗ failed" in row_of(screen, "db-27")
    assert "⊘ blocked" in row_of(screen, "db-20")
    assert "▌" in row_of(screen, "db-18")[:3] and "▌" in row_of(screen, "db-27")[:3]
    assert "· queued" in row_of(screen, "db-19") and "▌" not in row_of(screen, "db-19")[:3]
    # The selected row is marked without colour too.
    assert sum(line.startswith("▶") for line in screen.splitlines()) == 1
    assert "17 done · 1 awaiting_approval · 20 queued · 1 blocked" in screen


def test_sixteen_colours(tmux, tmp_path: Path) -> None:
    """TERM=xterm: only the 16 basic colours reach the terminal; OPERATOR, symbols and words still show."""
    ledger = demo_with_db18_awaiting(tmp_path / "fleet")
    tmux.start(tui_argv(ledger, "--as", "alice"), env={"TERM": "xterm", "XDG_STATE_HOME": str(tmp_path / "state")})
    tmux.wait_for("OPERATOR: alice", timeout=20)
    screen = sorted_by_state(tmux)
    assert_meaning_without_colour(screen)
    used = colours(tmux.screen(escapes=True))
    assert used, "the screen should still use the basic colours"
    assert {kind for kind, *_ in used} == {"basic"}, sorted(set(used))
    tmux.send("q")
    assert tmux.wait_exit() == 0


def test_no_color(tmux, tmp_path: Path) -> None:
    """NO_COLOR=1 (read-only view): only greys reach the terminal; READ-ONLY, symbols and words still show."""
    ledger = demo_with_db18_awaiting(tmp_path / "fleet")
    tmux.start(tui_argv(ledger, "--read-only"),
               env={"TERM": "xterm-256color", "NO_COLOR": "1", "XDG_STATE_HOME": str(tmp_path / "state")})
    screen = tmux.wait_for("READ-ONLY (--read-only)", timeout=20)
    assert "OPERATOR" not in screen
    screen = sorted_by_state(tmux)
    assert_meaning_without_colour(screen)
    escaped = tmux.screen(escapes=True)
    hues = [c for c in colours(escaped)
            if (c[0] == "256" and c[1] not in GREY_INDEXES)
            or (c[0] == "rgb" and len(set(c[1:])) > 1)
            or (c[0] == "basic" and c[1] % 10 not in (0, 7, 9))]
    assert not hues, f"colours other than greys under NO_COLOR: {sorted(set(hues))}"
    # The mode badge stands out by reverse video, not by colour.
    mode_line = escaped.splitlines()[0]
    assert "7" in [p for params in SGR.findall(mode_line.split("READ-ONLY")[0]) for p in params.split(";")]
    tmux.send("q")
    assert tmux.wait_exit() == 0
