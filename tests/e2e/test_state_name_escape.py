"""A runbook state name is ledger text too: in a real terminal its escapes are shown, not obeyed.

A runbook may declare states (`runbook.states`) and a target may be in one; the name is
free text. Here it carries an OSC 0 (set the window title) ended by ST: in tmux the
pane title must stay as it was and the name must show as `␛]0;pwned␛\\`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import row_of, tui_argv

pytestmark = pytest.mark.e2e

LEDGER = '''\
task: state-escape
runbook:
  states: ["held\\e]0;pwned\\e\\\\"]
  steps:
    - {name: cutover, from: verified, to: done, reversible: false, run: ["echo", "{target}"]}
targets:
  db-1: {state: queued}
  db-2: {state: "held\\e]0;pwned\\e\\\\"}
'''


def test_a_state_name_cannot_set_the_window_title(tmux, tmp_path: Path) -> None:
    folder = tmp_path / "fleet"
    folder.mkdir()
    ledger = folder / "ledger.yaml"
    ledger.write_text(LEDGER, encoding="utf-8")
    from engine.api import open_ledger

    assert open_ledger(str(ledger), actor="t").load().targets["db-2"].state == "held\x1b]0;pwned\x1b\\"

    tmux.start(tui_argv(ledger, "--as", "alice"), env={"XDG_STATE_HOME": str(tmp_path / "state")})
    screen = tmux.wait_for("OPERATOR", timeout=20)
    screen = tmux.wait_for(lambda s: "db-2" in s, what="the db-2 row")
    title = tmux.display("#{pane_title}")
    assert "pwned" not in title, f"the ledger set the terminal's title: {title!r}"
    assert "held␛]0;pwned␛\\" in row_of(screen, "db-2"), row_of(screen, "db-2")
    tmux.send("q")
    assert tmux.wait_exit() == 0
