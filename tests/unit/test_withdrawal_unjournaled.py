"""A withdrawal whose journal record could not be written still keeps the approval from running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.audit.journal import Journal, journal_path
from tests.conftest import ROOT, cli_env, handoff, hold_flock, wait_paused

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


@pytest.mark.parametrize("later", [0, 70], ids=["at-once", "past-70-mib"])
def test_a_withdrawal_lost_to_a_held_journal_lock_never_lets_the_approval_run(tmp_path: Path, later: int) -> None:
    """`later`: MiB of journal written after the gap. The gap is a witness like the record it
    stands for, looked up at every fence: through the journal's index, never a scan."""
    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "withdrawn", "owner_shift": "test-oncall",
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    assert handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "alice").returncode == 0
    held = yaml.safe_load(ledger.read_text())["targets"]["db-19"]["approvals"]

    # alice withdraws it; the journal's lock is taken between the ledger's write and its record.
    marker = tmp_path / "paused"
    env = cli_env(HANDOFF_LOCK_TIMEOUT="1", HANDOFF_FAILPOINTS="before-journal-records", HANDOFF_FAILPOINT_PAUSE=str(marker))
    command = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "unapprove", str(ledger), "db-19", "--as", "alice"],
                               env=env, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    holder = None
    try:
        wait_paused(marker)
        holder = hold_flock(journal_path(str(ledger)))
        os.unlink(marker)
        _, stderr = command.communicate(timeout=30)
    finally:
        if holder is not None:
            holder.communicate(timeout=10)
        if command.poll() is None:
            command.kill()
    assert command.returncode == 1 and "NOT in the journal" in stderr, stderr
    assert not yaml.safe_load(ledger.read_text())["targets"]["db-19"].get("approvals")  # withdrawn in the ledger
    assert handoff("note", ledger, "--set", "the next append records the gap").returncode == 0
    records = [json.loads(line) for line in open(journal_path(str(ledger)), encoding="utf-8")]
    assert any(r["kind"] == "journal_gap" and r.get("lost_kind") == "unapproval" for r in records)
    chatty = Journal(journal_path(str(ledger)))
    for i in range(later):
        chatty.append("log", f"replication progress {i}", actor="step", target="db-20", output="x" * (1024 * 1024))

    # Written back from the journal's approval record; run by someone whose marks never saw the withdrawal.
    data = yaml.safe_load(ledger.read_text())
    data["targets"]["db-19"]["approvals"] = held
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    ran = handoff("run", ledger, "db-19", "link", "--as", "bob", env=cli_env(XDG_STATE_HOME=str(tmp_path / "fresh-state")))
    assert not (tmp_path / "spawned-db-19").exists(), \
        "the approval alice withdrew ran (its withdrawal's record was lost, the gap names it):\n" + ran.stdout + ran.stderr
