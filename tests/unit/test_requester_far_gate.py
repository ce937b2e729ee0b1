"""The OS user a person asked as must be found however much was journaled after their gate."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import yaml

from tests.conftest import handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


def test_the_requester_cannot_approve_under_another_name_after_70_mib_of_journal(tmp_path: Path) -> None:
    from engine.audit.journal import Journal

    (tmp_path / "mark.py").write_text(MARK)
    data = {"task": "alias", "owner_shift": "test-oncall", "approvers": [{"name": "alice", "os_user": getpass.getuser()}],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}, "db-20": {"state": "checked"}}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))

    asked = handoff("run", ledger, "db-19", "link", "--as", "robot")
    assert asked.returncode == 1 and "requires approval" in asked.stdout, asked.stdout + asked.stderr
    assert yaml.safe_load(ledger.read_text())["targets"]["db-19"]["awaiting_by"] == "robot"

    # A multi-day job: other targets' steps journal their output after the gate.
    chatty = Journal(str(ledger) + ".journal.jsonl")
    blob = "x" * (1024 * 1024)
    for i in range(70):
        chatty.append("log", f"replication progress {i}", actor="step", target="db-20", output=blob)
    assert os.path.getsize(chatty.path) > 70 * 1024 * 1024

    approved = handoff("approve", ledger, "db-19", "--yes", "--as", "alice")
    assert approved.returncode != 0 and "someone else must approve" in approved.stdout + approved.stderr, \
        "the requester approved their own request:\n" + approved.stdout + approved.stderr
