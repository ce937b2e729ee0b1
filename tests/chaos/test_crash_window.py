"""A kill -9 right after the engine swapped in a new ledger file, before it journaled the
write and updated its last-write record, is not a hand edit.

Between the swap and the record the engine appends to the journal and the history journal
(both fsynced): a crash there used to leave a file whose hash the record did not know, so
the next reader called the engine's own write "changed outside the engine", journaled an
`external_edit`, flagged the target and the next session stopped with exit 3. The record
now names the write it is about to make (`pending`) before the swap.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli_env, handoff, wait_stopped

LEDGER = """\
task: crash-window
owner_shift: test-oncall
runbook:
  steps:
  - {name: link, from: checked, to: done, reversible: false, run: ["{python}", "-c", "pass"]}
targets:
  db-1: {state: awaiting_approval, checkpoint: "0/AA", awaiting: link, awaiting_by: "agent:s-1", awaiting_since: "2026-09-10T02:11:00Z"}
  db-2: {state: checked, checkpoint: "0/BB"}
"""


def _journal(ledger: Path) -> list[dict]:
    path = Path(str(ledger.resolve()) + ".journal.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# The instant the new file is in (inside the atomic write), and after the write returns.
@pytest.mark.parametrize("point", ["swapped ledger.yaml", "after-ledger-swap"])
def test_a_kill_between_the_swap_and_the_record_is_not_an_outside_edit(tmp_path: Path, point: str) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    # One engine write first, so there is a last-write record to judge the next file by.
    assert handoff("pause", str(ledger), "--reason", "maintenance", "--as", "alice").returncode == 0
    assert handoff("unpause", str(ledger), "--as", "alice").returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "approve", str(ledger), "db-1", "--yes", "--as", "bob"],
                            env=cli_env(HANDOFF_FAILPOINTS=point), cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_stopped(proc.pid)
        assert "by: bob" in ledger.read_text()  # the new file is in place; its journal record and the record are not
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)

    status = handoff("status", str(ledger), "--json")
    assert status.returncode == 0, status.stderr
    assert "changed outside" not in status.stdout and "changed_outside" not in ledger.read_text(), status.stdout
    # The next writer (a session) takes the file as the engine's: no external_edit, no stop on it.
    session = handoff("resume", "--ledger", str(ledger), "--max-steps", "5")
    out = session.stdout + session.stderr
    assert session.returncode == 0, out
    assert "changed outside the engine" not in out, out
    assert not [r for r in _journal(ledger) if r.get("kind") == "external_edit"]
    # The approval whose journal record the kill lost never authorises a start.
    assert not [r for r in _journal(ledger) if r.get("kind") == "step_start"], out
