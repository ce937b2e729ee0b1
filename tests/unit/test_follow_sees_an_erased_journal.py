"""A long-running reader of the journal (`handoff journal --follow`, the screen's log pane)
keeps showing what the journal says after it was erased or cut short under it: it says the
journal was cut (a fresh `handoff check` says so too) and goes on with the records written
since (the `chain_break` the next writer notes first, then its own), instead of waiting for
ever at an offset past the journal's new end and printing nothing again.

Real processes: the follower, the writes (`handoff block`), `rm` of the journal as a person
or an agent would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, cli_env, handoff
from tests.unit.session_kit import wait_for

LEDGER = """\
task: follow
owner_shift: test-oncall
targets:
  web-01: {state: queued}
  web-02: {state: queued}
"""


def test_a_follower_goes_on_after_the_journal_was_erased_under_it(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    for reason in ("PLAT-1", "PLAT-2"):
        done = handoff("block", ledger, "web-01", "--reason", reason, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "follow.out"
    with out.open("w") as sink:
        follower = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "journal", str(ledger), "--follow"],
                                    stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT), text=True,
                                    start_new_session=True)
    try:
        wait_for(lambda: "PLAT-2" in out.read_text(), what="the follower's backlog")
        os.unlink(str(ledger) + ".journal.jsonl")  # erased under the follower
        done = handoff("block", ledger, "web-02", "--reason", "AFTER-ERASE", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        shown = wait_for(lambda: "AFTER-ERASE" in (text := out.read_text()) and text, timeout=15,
                         what="the record written after the erasure, followed")
        assert "cut short or replaced" in shown, shown
    finally:
        os.killpg(follower.pid, signal.SIGKILL)
        follower.wait(timeout=10)
