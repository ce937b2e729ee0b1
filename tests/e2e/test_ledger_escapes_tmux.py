"""Ledger text never reaches a real terminal with its escapes, in tmux (a review found two paths
that did, both mended in tui/):

- `--read-only`, Enter on a target whose next step cannot be rendered: the detail's "could not
  render the next command" line quotes the step's name (its OSC 0 set the pane's title; an
  OSC 52 would set the observer's clipboard the same way);
- operator mode, `x` on a target in a runbook state whose name carries an OSC 0: the refusal
  toast names the state. Every toast now goes through `HandoffApp.notify`, which cleans it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tui_argv

from tests.escape_ledgers import STATE, UNRENDERABLE

pytestmark = pytest.mark.e2e


def _ledger(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "fleet"
    folder.mkdir()
    ledger = folder / "ledger.yaml"
    ledger.write_text(text, encoding="utf-8")
    return ledger


def test_read_only_detail_cannot_set_the_window_title(tmux, tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, UNRENDERABLE)
    tmux.start(tui_argv(ledger, "--read-only"), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    tmux.wait_for("READ-ONLY", timeout=20)
    title = tmux.display("#{pane_title}")
    tmux.send("Enter")
    tmux.wait_for("could not render", what="the detail's would-run-next line")
    assert "pwned" not in tmux.display("#{pane_title}"), f"the ledger set the title: {tmux.display('#{pane_title}')!r}"
    assert tmux.display("#{pane_title}") == title
    tmux.send("q")
    tmux.send("q")
    assert tmux.wait_exit() == 0


def test_a_refusal_toast_cannot_set_the_window_title(tmux, tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, STATE)
    tmux.start(tui_argv(ledger, "--as", "alice"), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    tmux.wait_for("OPERATOR", timeout=20)
    title = tmux.display("#{pane_title}")
    tmux.send("x")
    tmux.wait_for("targets can be", what="the refusal toast")
    assert "pwned" not in tmux.display("#{pane_title}"), f"the ledger set the title: {tmux.display('#{pane_title}')!r}"
    assert tmux.display("#{pane_title}") == title
    tmux.send("q")
    assert tmux.wait_exit() == 0
